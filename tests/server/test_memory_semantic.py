"""The semantic leg of memory search (docs/memory.md, "Semantic search"): the encoder against
the model card, vectors kept by the service when it stores and by its catch-up pass, erased with
the content, and the fused ranking: paraphrases found, the all-terms rule kept, pages consistent;
over real HTTP with SERVICE_SEMANTIC_SEARCH on, on SQLite and on PostgreSQL."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import sqlalchemy as sa

from hearth.client import HearthClient
from hearth.server.db.engine import utcnow
from hearth.server.db.tables import memories, memory_embeddings
from hearth.server.semantic.encoder import MODEL_NAME, Encoder
from hearth.server.services import memory_search
from tests.support.databases import in_db
from tests.support.live import Live, live_on
from tests.support.memories import Owner
from tests.support.memory_search_cases import MEMORIES, QUESTIONS, score

BACKENDS = ["sqlite", "postgresql"]


@pytest.fixture(scope="module")
def encoder() -> Encoder:
    return Encoder()


@pytest.fixture(scope="module", params=BACKENDS)
def live(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Live]:
    with live_on(
        request.param,
        tmp_path_factory.mktemp("semantic"),
        semantic_search=True,
        semantic_catch_up_seconds=0.2,
    ) as service:
        yield service


def hits(owner: Owner, q: str, **params: Any) -> list[dict[str, Any]]:
    with owner.client() as client:
        response = client.get("/v1/memories/search", params={"q": q, **params})
    assert response.status_code == 200, response.text
    return list(response.json()["items"])


def vectors_of(live: Live, ids: list[str]) -> dict[str, bytes]:
    def read(conn: sa.Connection) -> dict[str, bytes]:
        rows = conn.execute(
            sa.select(memory_embeddings.c.memory_id, memory_embeddings.c.vector).where(
                memory_embeddings.c.memory_id.in_(ids)
            )
        )
        return {row.memory_id: row.vector for row in rows}

    return in_db(live, read, write=False)


# --- the encoder --------------------------------------------------------------------------------


def test_the_encoder_gives_the_model_cards_similarities(encoder: Encoder) -> None:
    # sentence-transformers' documentation of all-MiniLM-L6-v2 gives 0.7553 for this pair.
    eating, bread, baby = encoder.encode(
        [
            "A man is eating food.",
            "A man is eating a piece of bread.",
            "The girl is carrying a baby.",
        ]
    )
    assert float(eating @ bread) == pytest.approx(0.7553, abs=5e-4)
    assert float(eating @ baby) < 0.1
    assert np.linalg.norm(eating) == pytest.approx(1.0, abs=1e-5)


def test_a_text_encodes_the_same_alone_and_in_a_batch(encoder: Encoder) -> None:
    texts = ["short", "a much longer sentence, padded beside the short one in its batch", "é 日本"]
    together = encoder.encode(texts)
    alone = np.stack([encoder.encode([text])[0] for text in texts])
    assert np.allclose(together, alone, atol=1e-5)
    long = encoder.encode(["word " * 300])  # cut at the model's 256 tokens, not refused
    assert long.shape == (1, 384)


# --- the service --------------------------------------------------------------------------------


def test_paraphrases_are_found_and_exact_keywords_still_first(live: Live) -> None:
    owner = Owner.new(live)
    names = {owner.store(text, key=name)["id"]: name for name, text in MEMORIES.items()}
    assert len(vectors_of(live, list(names))) == len(names)  # embedded when stored

    found = [
        (
            question,
            [names.get(h["memory"]["id"], "other") for h in hits(owner, question.q, limit=10)],
        )
        for question in QUESTIONS
    ]
    project_id = owner.reg["project"]["id"]

    def lexical(conn: sa.Connection) -> list[Any]:
        return [
            (
                question,
                [
                    names.get(item["memory"]["id"], "other")
                    for item in memory_search.search(conn, project_id, question.q, limit=10).items
                ],
            )
            for question in QUESTIONS
        ]

    alone = in_db(live, lexical, write=False)
    for kind in ("exact", "name", "date", "multilingual"):
        fused = score(kind, [(q, n) for q, n in found if q.kind == kind])
        assert (
            fused.recall_at_5
            >= score(kind, [(q, n) for q, n in alone if q.kind == kind]).recall_at_5 - 0.1
        )
    paraphrase = score("paraphrase", [(q, n) for q, n in found if q.kind == "paraphrase"])
    without = score("paraphrase", [(q, n) for q, n in alone if q.kind == "paraphrase"])
    assert paraphrase.recall_at_5 > without.recall_at_5
    assert paraphrase.recall_at_5 >= 0.3

    api_key = owner.reg["project"]["api_key"]
    with HearthClient(live.base_url, api_key=api_key) as client:  # the SDK reads it too
        best = client.memory_search("who owes me money", limit=3).items
    assert names[best[0].memory.id] == "loan"
    assert best[0].similarity is not None
    assert best[0].similarity > 0.3

    meant = hits(owner, "who owes me money")
    loan = next(h for h in meant if names.get(h["memory"]["id"]) == "loan")
    assert loan["similarity"] is not None
    assert loan["similarity"] >= 0.3
    assert not loan["all_terms"]


def test_every_term_still_comes_first_and_pages_hold(live: Live) -> None:
    owner = Owner.new(live)
    # Many memories near "feline companion" in meaning and sharing one of its words; one far
    # from it in meaning that holds both words.
    for i in range(12):
        owner.store(f"My cat number {i} purrs on the sofa and chases the feline toys.")
    complete = owner.store("Invoice 77: the companion ledger lists a feline line item.")
    first = hits(owner, "feline companion", limit=5)
    assert first[0]["memory"]["id"] == complete["id"]
    assert first[0]["all_terms"] is True
    assert all(not h["all_terms"] for h in first[1:])

    seen: list[str] = []
    cursor = None
    while True:
        with owner.client() as client:
            params = {"q": "feline companion", "limit": 4, **({"cursor": cursor} if cursor else {})}
            response = client.get("/v1/memories/search", params=params)
        assert response.status_code == 200, response.text
        seen += [h["memory"]["id"] for h in response.json()["items"]]
        cursor = response.json()["next_cursor"]
        if cursor is None:
            break
    assert seen == [h["memory"]["id"] for h in hits(owner, "feline companion", limit=50)]
    assert len(seen) == len(set(seen)) == 13


def test_erased_content_takes_its_vector_and_is_not_found_by_meaning(live: Live) -> None:
    owner = Owner.new(live)
    kept = owner.store("The spare house key hides under the blue flower pot.")
    gone = owner.store("The garage code is written inside the red toolbox lid.")
    assert set(vectors_of(live, [kept["id"], gone["id"]])) == {kept["id"], gone["id"]}
    with owner.client() as client:
        assert client.delete(f"/v1/memories/{gone['id']}").status_code == 204
    assert set(vectors_of(live, [kept["id"], gone["id"]])) == {kept["id"]}
    found = [h["memory"]["id"] for h in hits(owner, "where is the door opener for the car shed")]
    assert gone["id"] not in found


def test_memories_written_around_the_service_are_caught_up(live: Live) -> None:
    owner = Owner.new(live)
    project_id = owner.reg["project"]["id"]
    memory_id = str(uuid.uuid4())

    def seed(conn: sa.Connection) -> None:
        conn.execute(
            memories.insert(),
            {
                "id": memory_id,
                "project_id": project_id,
                "identity_id": None,
                "tier": "episodic",
                "key": None,
                "content": "Grandmother's lasagne recipe needs three layers of béchamel.",
                "created_at": utcnow() - timedelta(minutes=1),
                "elevated_at": None,
                "expression_patch": None,
            },
        )

    in_db(live, seed)
    deadline = time.monotonic() + 30  # the pass runs every 0.2 s here; a bound, not a timing
    while not vectors_of(live, [memory_id]) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert list(vectors_of(live, [memory_id])) == [memory_id]
    found = hits(owner, "an old family pasta dish")
    assert found[0]["memory"]["id"] == memory_id
    assert found[0]["all_terms"] is False
    assert found[0]["similarity"] > 0.3


def test_without_the_setting_nothing_is_embedded(tmp_path: Path) -> None:
    with live_on("sqlite", tmp_path) as service:
        owner = Owner.new(service)
        stored = owner.store("Plain full-text only, no vectors here.")
        assert vectors_of(service, [stored["id"]]) == {}
        assert hits(owner, "vectors")[0]["similarity"] is None
        assert hits(owner, "something unrelated entirely") == []


def test_the_vectors_are_the_models(live: Live, encoder: Encoder) -> None:
    owner = Owner.new(live)
    text = "The lighthouse keeper logs the weather every four hours."
    stored = owner.store(text)
    (vector,) = vectors_of(live, [stored["id"]]).values()
    assert np.allclose(np.frombuffer(vector, dtype="<f4"), encoder.encode([text])[0], atol=1e-5)

    def model_of(conn: sa.Connection) -> str:
        return str(
            conn.execute(
                sa.select(memory_embeddings.c.model).where(
                    memory_embeddings.c.memory_id == stored["id"]
                )
            ).scalar_one()
        )

    assert in_db(live, model_of, write=False) == MODEL_NAME
