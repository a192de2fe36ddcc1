"""The ADDS provider node over real HTTP: blocks, documents, heads, inventory, the provider record,
receipts, the provider key, and the migration that holds them."""

from __future__ import annotations

import asyncio
import base64
import json
import sqlite3
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx2
import pytest
import schemathesis
import sqlalchemy as sa
import uri_template
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from hearth.adds import b64url_encode, build_head, cid_for_bytes, validate
from hearth.adds.keys import generate_key_pair, private_key_pem
from hearth.adds.objects import issue_grant, open_object, publish
from hearth.blockstore import FileBlockStore, HttpBlockStore
from hearth.server.db import Database, metadata
from hearth.server.db.migrate import current, downgrade, head, upgrade
from hearth.server.services.provider_key import (
    WRAPPED,
    ProviderKeyring,
    ProviderKeyUnavailable,
    unwrap_seed,
)
from tests.support.agents import register
from tests.support.databases import database_url_or_skip, fresh_postgres_database
from tests.support.listings import every_page
from tests.support.live import Live, live_service, sqlite_settings
from tests.support.manifests import manifest_bytes
from tests.support.openapi import conforms

ADDS_JSON = "application/adds+json"
MAX_BLOCK = 64 * 1024


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    tmp = tmp_path_factory.mktemp("adds_provider")
    with live_service(sqlite_settings(tmp, max_block_bytes=MAX_BLOCK)) as service:
        yield service


def new_project(live: Live) -> httpx2.Client:
    """A client with the bearer of a new project."""
    return live.client(register(live)[1]["project"]["api_key"])


def put(client: httpx2.Client, data: bytes, cid: str | None = None) -> httpx2.Response:
    return client.put(
        f"/v1/adds/blocks/{cid or cid_for_bytes(data)}",
        content=data,
        headers={"Content-Type": "application/octet-stream"},
    )


def head_doc(
    key: Ed25519PrivateKey,
    sequence: int,
    *,
    head_id: str = "notes/main",
    parents: tuple[str, ...] = (),
    manifest: bytes = b"m",
) -> Any:
    return build_head(
        key=key,
        issuer_id="did:example:wren",
        head_id=head_id,
        sequence=sequence,
        manifest_cid=cid_for_bytes(manifest),
        parents=list(parents),
        updated_at=1_795_000_000 + sequence,
    )


def key_b64url(key: Ed25519PrivateKey) -> str:
    return b64url_encode(key.public_key().public_bytes_raw())


# --- blocks -------------------------------------------------------------------------------------


def test_blocks_put_get_head_and_list(live: Live) -> None:
    data = b"ciphertext and its tag " * 10
    cid = cid_for_bytes(data)
    with new_project(live) as client, new_project(live) as other:
        created = put(client, data)
        assert created.status_code == 201, created.text
        assert created.json()["cid"] == cid
        assert created.json()["size"] == len(data)
        assert put(client, data).status_code == 200  # already held by this project
        got = client.get(f"/v1/adds/blocks/{cid}")
        assert got.status_code == 200
        assert got.content == data
        assert got.headers["content-type"] == "application/octet-stream"
        held = client.head(f"/v1/adds/blocks/{cid}")
        assert held.status_code == 200
        assert held.headers["content-length"] == str(len(data))
        assert held.content == b""
        # Any authenticated caller reads by CID; the listing is the caller project's own.
        assert other.get(f"/v1/adds/blocks/{cid}").content == data
        assert other.get("/v1/adds/blocks").json()["items"] == []
        assert put(other, data).status_code == 201  # new for that project
        listed = client.get("/v1/adds/blocks").json()
        assert listed["items"] == [{"cid": cid, "size": len(data)}]
        assert listed["next_cursor"] is None
        missing = cid_for_bytes(b"never stored")
        assert client.get(f"/v1/adds/blocks/{missing}").status_code == 404
        assert client.head(f"/v1/adds/blocks/{missing}").status_code == 404


def test_block_listing_pages_without_gaps_or_repeats(live: Live) -> None:
    with new_project(live) as client:
        stored = []
        for n in range(7):
            data = f"block {n}".encode()
            assert put(client, data).status_code == 201
            stored.append(cid_for_bytes(data))
        pages = every_page(
            lambda params: client.get("/v1/adds/blocks", params=params).json(), limit=3
        )
        seen = [item["cid"] for items in pages for item in items]
        assert seen == stored  # oldest first
        assert len(pages) == 3
        refused = client.get("/v1/adds/blocks", params={"cursor": "not-a-cursor"})
        assert refused.status_code == 400
        assert refused.json()["error"] == "invalid_cursor"


def test_block_refusals_change_nothing(live: Live) -> None:
    data = b"some block"
    cid = cid_for_bytes(data)
    with new_project(live) as client:
        mismatch = put(client, b"other bytes", cid)
        assert mismatch.status_code == 422
        assert mismatch.json()["error"] == "cid_mismatch"
        assert mismatch.json()["details"]["computed_cid"] == cid_for_bytes(b"other bytes")
        non_canonical = [
            cid.upper(),
            cid[:-1],
            "Qm" + "a" * 44,  # CIDv0
            cid[:-1] + {"a": "b", "e": "f"}.get(cid[-1], "b"),  # unused tail bits set
            "bafkreiabc",
        ]
        for bad in non_canonical:
            refused = put(client, data, bad)
            assert refused.status_code == 400, bad
            assert refused.json()["error"] == "invalid_cid"
            assert client.get(f"/v1/adds/blocks/{bad}").status_code == 400
        big = b"\x00" * (MAX_BLOCK + 1)
        declared = put(client, big)
        assert declared.status_code == 413
        assert declared.json()["error"] == "payload_too_large"

        def chunks() -> Iterator[bytes]:  # no Content-Length: counted while it streams
            for _ in range(MAX_BLOCK // 4096 + 1):
                yield b"\x00" * 4096

        streamed = client.put(
            f"/v1/adds/blocks/{cid_for_bytes(b'x' * 4096 * (MAX_BLOCK // 4096 + 1))}",
            content=chunks(),
        )
        assert streamed.status_code == 413
        assert "content-length" not in streamed.request.headers
        assert client.get("/v1/adds/blocks").json()["items"] == []
        assert client.get(f"/v1/adds/blocks/{cid}").status_code == 404
    with live.client() as anonymous:
        for response in (
            put(anonymous, data),
            anonymous.get(f"/v1/adds/blocks/{cid}"),
            anonymous.head(f"/v1/adds/blocks/{cid}"),
            anonymous.get("/v1/adds/blocks"),
        ):
            assert response.status_code == 401
            assert response.headers["www-authenticate"].startswith("Bearer")


def test_a_block_at_the_limit_is_stored(live: Live) -> None:
    data = b"\x01" * MAX_BLOCK
    with new_project(live) as client:
        assert put(client, data).status_code == 201
        assert client.get(f"/v1/adds/blocks/{cid_for_bytes(data)}").content == data


def test_a_block_over_max_body_bytes_is_stored(tmp_path: Path) -> None:
    # Blocks have their own limit (max_block_bytes); JSON bodies keep max_body_bytes.
    with live_service(sqlite_settings(tmp_path)) as service, new_project(service) as client:
        data = b"\x02" * (2 * 1024 * 1024)
        assert put(client, data).status_code == 201
        big_json = client.post(
            "/v1/adds/documents",
            content=b" " * (2 * 1024 * 1024),
            headers={"Content-Type": "application/json"},
        )
        assert big_json.status_code == 413


# --- documents ----------------------------------------------------------------------------------


def test_documents_are_validated_kept_canonical_and_fetched_by_cid(live: Live) -> None:
    published, _ = manifest_bytes()
    manifest = published.manifest
    # Any spelling is accepted; the canonical bytes are kept, under the canonical CID.
    pretty = json.dumps(manifest.document, indent=2).encode()
    assert pretty != manifest.canonical
    with new_project(live) as client, new_project(live) as other:
        created = client.post(
            "/v1/adds/documents", content=pretty, headers={"Content-Type": "application/json"}
        )
        assert created.status_code == 201, created.text
        assert created.json()["cid"] == manifest.cid
        assert created.json()["kind"] == "manifest"
        again = client.post("/v1/adds/documents", content=manifest.canonical)
        assert again.status_code == 200
        fetched = other.get(f"/v1/adds/documents/{manifest.cid}")
        assert fetched.status_code == 200
        assert fetched.headers["content-type"] == ADDS_JSON
        assert fetched.content == manifest.canonical
        assert cid_for_bytes(fetched.content) == manifest.cid
        assert validate(fetched.content, require_canonical=True).valid
        listed = client.get("/v1/adds/documents", params={"kind": "manifest"}).json()
        assert [(i["cid"], i["kind"], i["size"]) for i in listed["items"]] == [
            (manifest.cid, "manifest", len(manifest.canonical))
        ]
        assert client.get("/v1/adds/documents", params={"kind": "grant"}).json()["items"] == []
        assert other.get("/v1/adds/documents").json()["items"] == []
        unknown = cid_for_bytes(b"no such document")
        assert other.get(f"/v1/adds/documents/{unknown}").status_code == 404
        assert other.get("/v1/adds/documents/bafy").json()["error"] == "invalid_cid"
        bad_kind = client.get("/v1/adds/documents", params={"kind": "letter"})
        assert bad_kind.status_code == 422


def test_invalid_documents_are_refused_with_the_validators_problems(live: Live) -> None:
    published, _ = manifest_bytes()
    tampered = dict(published.manifest.document, object_id="changed after signing")
    incomplete = {k: v for k, v in published.manifest.document.items() if k != "chunks"}
    cases = [
        json.dumps(tampered).encode(),
        json.dumps(incomplete).encode(),
        b'{"kind": "grant", "kind": "head"}',
        b"not json at all",
        b"",
    ]
    with new_project(live) as client:
        for raw in cases:
            refused = client.post("/v1/adds/documents", content=raw)
            assert refused.status_code == 422, raw
            body = refused.json()
            assert body["error"] == "invalid_document"
            expected = [p.as_dict() for p in validate(raw).errors]
            assert expected
            assert body["details"]["problems"] == expected
        codes = {
            p["code"]
            for p in client.post(
                "/v1/adds/documents", content=json.dumps(tampered).encode()
            ).json()["details"]["problems"]
        }
        assert codes == {"profile.signature.invalid"}
        assert client.get("/v1/adds/documents").json()["items"] == []
    with live.client() as anonymous:
        assert (
            anonymous.post("/v1/adds/documents", content=published.manifest.canonical).status_code
            == 401
        )
        assert anonymous.get(f"/v1/adds/documents/{published.cid}").status_code == 401


# --- heads --------------------------------------------------------------------------------------


def test_heads_resolve_across_projects_and_report_forks(live: Live) -> None:
    key, stranger = Ed25519PrivateKey.generate(), Ed25519PrivateKey.generate()
    first = head_doc(key, 0)
    second = head_doc(key, 1, parents=(first.cid,), manifest=b"m2")
    target = "/v1/adds/heads/notes/main"
    with new_project(live) as alice, new_project(live) as bob:
        assert alice.get(target, params={"issuer_key": key_b64url(key)}).status_code == 404
        for document in (first, second):
            assert alice.post("/v1/adds/documents", content=document.canonical).status_code == 201
        # A head with the same id under another key is another history, never this one's.
        impostor = head_doc(stranger, 5, manifest=b"evil")
        assert bob.post("/v1/adds/documents", content=impostor.canonical).status_code == 201
        resolved = bob.get(target, params={"issuer_key": key_b64url(key)})
        assert resolved.status_code == 200, resolved.text
        view = resolved.json()
        assert view["head_id"] == "notes/main"
        assert view["issuer_key"] == key_b64url(key)
        assert view["sequence"] == 1
        assert view["forked"] is False
        assert view["current"]["cid"] == second.cid
        assert view["current"]["manifest_cid"] == cid_for_bytes(b"m2")
        assert view["missing_parents"] == []
        # Bob publishes a rival head at sequence 1 with the same key: a fork, reported.
        rival = head_doc(key, 1, parents=(first.cid,), manifest=b"m3")
        assert bob.post("/v1/adds/documents", content=rival.canonical).status_code == 201
        forked = alice.get(target, params={"issuer_key": key_b64url(key)}).json()
        assert forked["forked"] is True
        assert forked["current"] is None
        assert sorted(c["cid"] for c in forked["candidates"]) == sorted([second.cid, rival.cid])
        other_id = alice.get("/v1/adds/heads/notes", params={"issuer_key": key_b64url(key)})
        assert other_id.status_code == 404
        bad_key = alice.get(target, params={"issuer_key": "short"})
        assert bad_key.status_code == 422
    with live.client() as anonymous:
        assert anonymous.get(target, params={"issuer_key": key_b64url(key)}).status_code == 401


# --- inventory ----------------------------------------------------------------------------------


def test_inventory_counts_what_the_project_holds(live: Live) -> None:
    published, blocks = manifest_bytes(300)
    key = Ed25519PrivateKey.generate()
    with new_project(live) as client:
        empty = client.get("/v1/adds/inventory").json()
        assert empty["blocks"] == {"count": 0, "bytes": 0, "href": "/v1/adds/blocks"}
        assert empty["documents"]["count"] == 0
        for cid, data in blocks.items():
            assert put(client, data, cid).status_code == 201
        heads = [head_doc(key, 0, head_id="a"), head_doc(key, 0, head_id="b")]
        for document in (published.manifest, *heads):
            assert client.post("/v1/adds/documents", content=document.canonical).status_code == 201
        held = client.get("/v1/adds/inventory").json()
        assert held["blocks"]["count"] == len(blocks)
        assert held["blocks"]["bytes"] == sum(len(b) for b in blocks.values())
        by_kind = held["documents"]["by_kind"]
        assert by_kind["manifest"] == {
            "count": 1,
            "bytes": len(published.manifest.canonical),
            "href": "/v1/adds/documents?kind=manifest",
        }
        assert by_kind["head"]["count"] == 2
        assert by_kind["grant"]["count"] == 0
        assert held["documents"]["count"] == 3
        assert held["documents"]["bytes"] == len(published.manifest.canonical) + sum(
            len(h.canonical) for h in heads
        )
        page = client.get(by_kind["head"]["href"]).json()
        assert {i["cid"] for i in page["items"]} == {h.cid for h in heads}
    with live.client() as anonymous:
        assert anonymous.get("/v1/adds/inventory").status_code == 401


# --- the provider record and receipts -----------------------------------------------------------


def test_provider_record_is_signed_superseded_and_points_at_the_blocks(tmp_path: Path) -> None:
    with live_service(sqlite_settings(tmp_path)) as service, new_project(service) as client:
        with service.client() as public:
            none_yet = public.get("/v1/adds/provider-record")
            assert none_yet.status_code == 404
            assert none_yet.json()["error"] == "no_inventory"
            data = b"the first block"
            assert put(client, data).status_code == 201
            first = public.get("/v1/adds/provider-record")  # public: no bearer
        assert first.status_code == 200, first.text
        assert first.headers["content-type"] == ADDS_JSON
        result = validate(first.content, require_canonical=True)
        assert result.valid, result.errors
        record = result.document
        assert record["kind"] == "provider_record"
        assert record["sequence"] == 1
        assert "supersedes" not in record
        assert record["provider"]["id"] == service.base_url.removeprefix("http://")
        assert record["inventory"] == [
            {"cid": cid_for_bytes(data), "size": len(data), "role": "block"}
        ]
        assert record["issued_at"] < record["expires_at"]
        endpoint, gateway = record["endpoints"]
        assert endpoint["transport"] == gateway["transport"] == "http"
        url = uri_template.expand(endpoint["uri_template"], cid=cid_for_bytes(data))
        assert url == f"{service.base_url}/v1/adds/blocks/{cid_for_bytes(data)}"
        assert client.get(url).content == data
        public = uri_template.expand(gateway["uri_template"], cid=cid_for_bytes(data))
        assert public == f"{service.base_url}/ipfs/{cid_for_bytes(data)}?format=raw"
        assert httpx2.get(public).content == data  # the gateway needs no bearer
        # Unchanged inventory: the same record, not re-signed.
        assert client.get("/v1/adds/provider-record").content == first.content
        assert put(client, b"a second block").status_code == 201
        second = validate(client.get("/v1/adds/provider-record").content).document
        assert second["sequence"] == 2
        assert second["supersedes"] == cid_for_bytes(first.content)
        assert second["inventory"][0]["cid"] == cid_for_bytes(b"a second block")
        assert len(second["inventory"]) == 2
        # Earlier records stay fetchable by CID, as documents.
        assert client.get(f"/v1/adds/documents/{cid_for_bytes(first.content)}").content == (
            first.content
        )


def test_provider_id_and_endpoint_follow_the_public_base_url(tmp_path: Path) -> None:
    settings = sqlite_settings(tmp_path, public_base_url="https://adds.example:8443/")
    with live_service(settings) as service, new_project(service) as client:
        assert put(client, b"block").status_code == 201
        record = json.loads(client.get("/v1/adds/provider-record").content)
    assert record["provider"]["id"] == "adds.example:8443"
    assert record["endpoints"] == [
        {
            "transport": "https",
            "uri_template": "https://adds.example:8443/v1/adds/blocks/{cid}",
        },
        {
            "transport": "https",
            "uri_template": "https://adds.example:8443/ipfs/{cid}?format=raw",
        },
    ]


def test_receipts_cover_held_items_only(live: Live) -> None:
    published, blocks = manifest_bytes(200)
    block_cids = list(blocks)
    with new_project(live) as client, new_project(live) as other:
        for cid, data in blocks.items():
            assert put(client, data, cid).status_code == 201
        stored = client.post("/v1/adds/documents", content=published.manifest.canonical)
        assert stored.status_code == 201
        items = [*block_cids, published.cid, block_cids[0]]  # a repeat is listed once
        before = int(time.time())
        issued = client.post(
            "/v1/adds/receipts", json={"items": items, "commitment": "store_and_serve"}
        )
        assert issued.status_code == 201, issued.text
        assert issued.headers["content-type"] == ADDS_JSON
        result = validate(issued.content, require_canonical=True)
        assert result.valid, result.errors
        receipt = result.document
        assert receipt["commitment"] == "store_and_serve"
        assert receipt["items"] == [
            *({"cid": c, "size": len(blocks[c]), "role": "block"} for c in block_cids),
            {"cid": published.cid, "size": len(published.manifest.canonical), "role": "manifest"},
        ]
        days = live.settings.receipt_retention_days
        assert before + days * 86_400 <= receipt["retention_until"] <= time.time() + days * 86_400
        record = client.get("/v1/adds/provider-record")
        assert receipt["provider_record"] == cid_for_bytes(record.content)
        provider = json.loads(record.content)["provider"]
        assert receipt["provider"] == provider
        # Kept as one of the project's documents.
        assert issued.headers["location"] == f"/v1/adds/documents/{cid_for_bytes(issued.content)}"
        kept = client.get("/v1/adds/documents", params={"kind": "receipt"}).json()["items"]
        assert [i["cid"] for i in kept] == [cid_for_bytes(issued.content)]
        # Another project holds none of these: nothing is signed for it.
        unknown = cid_for_bytes(b"not held by anyone")
        refused = other.post(
            "/v1/adds/receipts", json={"items": [block_cids[0], unknown], "commitment": "store"}
        )
        assert refused.status_code == 409
        assert refused.json()["error"] == "not_held"
        assert refused.json()["details"]["missing"] == [block_cids[0], unknown]
        assert other.get("/v1/adds/documents").json()["items"] == []
        for body in (
            {"items": [], "commitment": "store"},
            {"items": ["bafkrei-not-a-cid"], "commitment": "store"},
            {"items": block_cids, "commitment": "keep_forever"},
        ):
            assert client.post("/v1/adds/receipts", json=body).status_code == 422
    with live.client() as anonymous:
        body = {"items": block_cids, "commitment": "store"}
        assert anonymous.post("/v1/adds/receipts", json=body).status_code == 401


# --- a whole object through the node ------------------------------------------------------------


def test_publish_grant_and_open_through_the_node(live: Live) -> None:
    """The SDK's HttpBlockStore against these routes: publish into the node, share a grant, and
    a reader in another project opens the object with blocks fetched from the node."""
    writer, reader = generate_key_pair(), generate_key_pair()
    plaintext = bytes(range(256)) * 40
    with new_project(live) as client, new_project(live) as reader_client:
        bearer = client.headers["authorization"].split(" ", 1)[1]
        with HttpBlockStore(live.base_url, bearer=bearer, page_size=2) as store:
            published = publish(
                plaintext,
                store,
                key=writer.signing,
                publisher_id="did:example:writer",
                object_id="letter",
                created_at=1_795_000_000,
                chunk_size=1000,
            )
            assert sorted(store.cids()) == sorted(
                c["cid"] for c in published.manifest.document["chunks"]
            )
        grant = issue_grant(
            manifest=published.manifest,
            content_key=published.content_key,
            key=writer.signing,
            issuer_id="did:example:writer",
            grant_id="g1",
            audience="did:example:reader",
            audience_x25519_public_key=reader.box_public,
            rights=["read"],
            issued_at=1_795_000_000,
            expires_at=4_000_000_000,
        )
        for document in (published.manifest, grant):
            assert client.post("/v1/adds/documents", content=document.canonical).status_code == 201
        manifest = reader_client.get(f"/v1/adds/documents/{published.cid}").content
        fetched_grant = reader_client.get(f"/v1/adds/documents/{grant.cid}").content
        reader_bearer = reader_client.headers["authorization"].split(" ", 1)[1]
        with HttpBlockStore(live.base_url, bearer=reader_bearer) as source:
            opened = b"".join(
                open_object(manifest, fetched_grant, reader.box, source, now=int(time.time()))
            )
    assert opened == plaintext


# --- the provider key ---------------------------------------------------------------------------


def record_key(response: httpx2.Response) -> str:
    assert response.status_code == 200, response.text
    key: str = json.loads(response.content)["provider"]["ed25519_public_key"]
    return key


def provider_key(service: Live) -> str:
    """The provider's public key, from its record (after storing a block, so there is one)."""
    with new_project(service) as client:
        put(client, f"block for {service.base_url}".encode())
        return record_key(client.get("/v1/adds/provider-record"))


def build_routes(service: Live) -> None:
    """Have the app build its routes now, by sending it a request no route matches.

    FastAPI builds an app's routes on its first requests, and silences a pydantic warning
    meanwhile with ``warnings.catch_warnings``, which is not thread-safe: two apps of one
    process building at once (as two workers never do; they are processes) can let the warning
    through, and this suite turns warnings into errors.
    """
    with service.client() as client:
        assert client.get("/v1/adds/no-such-route").status_code == 404


def key_stable_and_shared(settings_for: Any) -> str:
    """Two apps on one fresh database sign with one key, which survives restarts."""
    # The apps share one block directory: made here, so that only the key is raced for below.
    FileBlockStore(settings_for().blocks_dir, create=True).close()
    with live_service(settings_for()) as a, live_service(settings_for()) as b:
        clients = []
        for service in (a, b):
            build_routes(service)
            clients.append(new_project(service))
        # Neither has a key yet: both store a block at once, and so both sign a provider record
        # (making the key) at once; one generated key wins for both.
        with ThreadPoolExecutor(2) as pool:
            stored = list(
                pool.map(lambda c, s: put(c, f"block for {s}".encode()).status_code, clients, "ab")
            )
            assert stored == [201, 201]
            responses = list(pool.map(lambda c: c.get("/v1/adds/provider-record"), clients))
        for client in clients:
            client.close()
        keys = [record_key(response) for response in responses]
        assert keys[0] == keys[1]
    with live_service(settings_for()) as restarted:
        assert provider_key(restarted) == keys[0]
    return keys[0]


def test_provider_key_is_stable_across_restarts_and_shared_by_apps(tmp_path: Path) -> None:
    key = key_stable_and_shared(lambda: sqlite_settings(tmp_path))
    with sqlite3.connect(tmp_path / "hearth.sqlite3") as db:
        rows = db.execute("select wrapping, private_key, public_key from provider_keys").fetchall()
    assert [(wrapping, public) for wrapping, _, public in rows] == [("none", key)]
    seed = rows[0][1]
    assert key_b64url(Ed25519PrivateKey.from_private_bytes(seed)) == key


def test_provider_key_is_wrapped_under_the_master_key(tmp_path: Path) -> None:
    key = key_stable_and_shared(lambda: sqlite_settings(tmp_path, kms_master_key="master one"))
    with sqlite3.connect(tmp_path / "hearth.sqlite3") as db:
        ((wrapping, material),) = db.execute(
            "select wrapping, private_key from provider_keys"
        ).fetchall()
    assert wrapping == WRAPPED
    assert len(material) == 12 + 32 + 16
    seed = unwrap_seed(material, master_key="master one", key_id="primary", public_key=key)
    assert key_b64url(Ed25519PrivateKey.from_private_bytes(seed)) == key
    assert seed not in material
    for master_key in ("master two", None):
        settings = sqlite_settings(tmp_path, kms_master_key=master_key)
        with live_service(settings) as service, service.client() as public:
            refused = public.get("/v1/adds/provider-record")
        assert refused.status_code == 503
        assert refused.json()["error"] == "provider_key_unavailable"


def test_provider_key_file_is_used_when_configured(tmp_path: Path) -> None:
    key = Ed25519PrivateKey.generate()
    key_file = tmp_path / "provider.pem"
    key_file.write_bytes(private_key_pem(key))
    with live_service(sqlite_settings(tmp_path, provider_key_file=key_file)) as service:
        assert provider_key(service) == key_b64url(key)
    with sqlite3.connect(tmp_path / "hearth.sqlite3") as db:
        assert db.execute("select count(*) from provider_keys").fetchone() == (0,)
    key_file.write_bytes(b"not a key")
    settings = sqlite_settings(tmp_path, provider_key_file=key_file)

    async def load() -> None:
        db = Database(settings.database_url)
        try:
            await ProviderKeyring(settings, db).key()
        finally:
            await db.dispose()

    with pytest.raises(ProviderKeyUnavailable, match="SERVICE_PROVIDER_KEY_FILE"):
        asyncio.run(load())


def test_provider_key_and_documents_on_postgresql(tmp_path: Path) -> None:
    database_url_or_skip()
    with fresh_postgres_database() as url:
        key = key_stable_and_shared(lambda: sqlite_settings(tmp_path, database_url=url))
        assert base64.urlsafe_b64decode(key + "=")
        with live_service(sqlite_settings(tmp_path, database_url=url)) as service:
            signer = Ed25519PrivateKey.generate()
            first = head_doc(signer, 0)
            rival = head_doc(signer, 0, manifest=b"other")
            with new_project(service) as client:
                for document in (first, rival):
                    response = client.post("/v1/adds/documents", content=document.canonical)
                    assert response.status_code == 201
                view = client.get(
                    "/v1/adds/heads/notes/main", params={"issuer_key": key_b64url(signer)}
                ).json()
                assert view["forked"] is True
                blocks = client.get("/v1/adds/blocks").json()
                assert (blocks["items"], blocks["next_cursor"]) == ([], None)
                data = b"pg block"
                assert put(client, data).status_code == 201
                issued = client.post(
                    "/v1/adds/receipts",
                    json={"items": [cid_for_bytes(data), first.cid], "commitment": "store"},
                )
                assert issued.status_code == 201, issued.text
                assert validate(issued.content).valid


# --- the OpenAPI document -----------------------------------------------------------------------


def test_real_resources_answer_as_documented(live: Live) -> None:
    """Generated CIDs never name a stored block, so the success shapes get a walk of their own."""
    api_schema = schemathesis.openapi.from_url(
        f"{live.base_url}/v1/openapi.json", config=schemathesis.Config()
    )
    published, blocks = manifest_bytes(100)
    cid, data = next(iter(blocks.items()))
    head = head_doc(Ed25519PrivateKey.generate(), 0, head_id="main")
    issuer = head.document["issuer"]["ed25519_public_key"]
    with new_project(live) as client:
        label = "PUT /v1/adds/blocks/{cid}"
        conforms(api_schema, label, put(client, data, cid), 201)
        conforms(api_schema, label, put(client, data, cid), 200)
        conforms(api_schema, label, put(client, b"other", cid), 422)
        conforms(api_schema, label, put(client, data, "bafy"), 400)
        conforms(api_schema, "GET /v1/adds/blocks/{cid}", client.get(f"/v1/adds/blocks/{cid}"), 200)
        conforms(
            api_schema, "HEAD /v1/adds/blocks/{cid}", client.head(f"/v1/adds/blocks/{cid}"), 200
        )
        conforms(api_schema, "GET /v1/adds/blocks", client.get("/v1/adds/blocks"), 200)
        label = "POST /v1/adds/documents"
        for document in (published.manifest, head):
            conforms(
                api_schema,
                label,
                client.post("/v1/adds/documents", content=document.canonical),
                201,
            )
        conforms(api_schema, label, client.post("/v1/adds/documents", content=b"{}"), 422)
        conforms(
            api_schema,
            "GET /v1/adds/documents/{cid}",
            client.get(f"/v1/adds/documents/{published.cid}"),
            200,
        )
        conforms(api_schema, "GET /v1/adds/documents", client.get("/v1/adds/documents"), 200)
        conforms(
            api_schema,
            "GET /v1/adds/heads/{head_id}",
            client.get("/v1/adds/heads/main", params={"issuer_key": issuer}),
            200,
        )
        conforms(api_schema, "GET /v1/adds/inventory", client.get("/v1/adds/inventory"), 200)
        conforms(
            api_schema,
            "GET /v1/adds/provider-record",
            client.get("/v1/adds/provider-record"),
            200,
        )
        label = "POST /v1/adds/receipts"
        body = {"items": [cid, published.cid], "commitment": "store"}
        conforms(api_schema, label, client.post("/v1/adds/receipts", json=body), 201)
        body = {"items": [cid_for_bytes(b"absent")], "commitment": "store"}
        conforms(api_schema, label, client.post("/v1/adds/receipts", json=body), 409)


# --- the migration ------------------------------------------------------------------------------

PROVIDER_TABLES = {"adds_blocks", "adds_documents", "provider_keys", "adds_provider_records"}


async def _walk_migration(url: str) -> list[Any]:
    db = Database(url)

    async def tables() -> set[str]:
        async with db.engine.connect() as conn:
            names = await conn.run_sync(lambda c: set(sa.inspect(c).get_table_names()))
        return names & PROVIDER_TABLES

    def drift(conn: sa.Connection) -> list[str]:
        diffs = compare_metadata(MigrationContext.configure(conn), metadata)
        return [repr(d) for d in diffs if any(name in repr(d) for name in PROVIDER_TABLES)]

    seen: list[Any] = []
    try:
        await upgrade(db.engine)
        seen += [await current(db.engine), await tables()]
        async with db.engine.connect() as conn:
            seen.append(await conn.run_sync(drift))
        await downgrade(db.engine, "0001")
        seen += [await current(db.engine), await tables()]
        await upgrade(db.engine)
        seen += [await current(db.engine), await tables()]
        await downgrade(db.engine)
        seen += [await current(db.engine)]
        await upgrade(db.engine)
        seen += [await current(db.engine), await tables()]
    finally:
        await db.dispose()
    return seen


def expected_walk() -> list[Any]:
    return [
        head(),
        PROVIDER_TABLES,
        [],  # tables.py and the migration agree
        "0001",
        set(),
        head(),
        PROVIDER_TABLES,
        None,
        head(),
        PROVIDER_TABLES,
    ]


def test_provider_migration_up_and_down_on_sqlite(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path}/m.sqlite3"
    assert asyncio.run(_walk_migration(url)) == expected_walk()


def test_provider_migration_up_and_down_on_postgresql() -> None:
    database_url_or_skip()
    with fresh_postgres_database() as url:
        assert asyncio.run(_walk_migration(url)) == expected_walk()
