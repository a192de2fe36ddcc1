"""hearth.adds.heads: head histories keyed by (issuer key, head_id), forks reported, next_head."""

from __future__ import annotations

import json
import random
from collections.abc import Sequence

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hearth.adds import (
    AddsError,
    Commitment,
    InventoryItem,
    Role,
    SignedDocument,
    build_head,
    build_receipt,
    cid_for_bytes,
    sign_document,
)
from hearth.adds.canonical import canonicalize
from hearth.adds.ed25519 import public_key_raw
from hearth.adds.heads import (
    HeadResolution,
    Resolutions,
    next_head,
    resolve_heads,
)
from tests.vectors.generate import signing_key

NOW = 1_795_000_000
ALICE = "did:example:alice"
ALICE_KEY = signing_key("heads/alice")
MALLORY_KEY = signing_key("heads/mallory")


def manifest(label: object) -> str:
    return cid_for_bytes(f"manifest/{label}".encode())


def head(
    sequence: int,
    parents: Sequence[SignedDocument | str] = (),
    *,
    key: Ed25519PrivateKey = ALICE_KEY,
    issuer_id: str = ALICE,
    head_id: str = "notes",
    label: object = None,
) -> SignedDocument:
    return build_head(
        key=key,
        issuer_id=issuer_id,
        head_id=head_id,
        sequence=sequence,
        manifest_cid=manifest(label if label is not None else sequence),
        parents=[p if isinstance(p, str) else p.cid for p in parents],
        updated_at=NOW + sequence % 1_000_000,
    )


def only(resolutions: Resolutions[HeadResolution]) -> HeadResolution:
    assert len(resolutions) == 1
    return resolutions[0]


def tampered(document: SignedDocument, **changes: object) -> bytes:
    """The document's bytes with members changed and the signature left as it was."""
    return canonicalize({**document.document, **changes})


H0 = head(0)
H1 = head(1, [H0])
H2 = head(2, [H1])
H1A = head(1, [H0], label="1a")
H1B = head(1, [H0], label="1b")


# ---------------------------------------------------------------------------------------------
# Linear histories
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("order", [(0, 1, 2), (2, 0, 1), (2, 1, 0)])
def test_linear_history_current_is_the_highest_sequence(order: tuple[int, ...]) -> None:
    history = [H0, H1, H2]
    resolution = only(resolve_heads([history[i] for i in order]))
    assert resolution.current == H2
    assert resolution.candidates == (H2,)
    assert not resolution.forked
    assert resolution.sequence == 2
    assert resolution.manifest_cid == manifest(2)
    assert resolution.history_forks == ()
    assert resolution.missing_parents == ()
    assert resolution.issuer_id == ALICE
    assert resolution.issuer_key == public_key_raw(ALICE_KEY)
    assert resolution.head_id == "notes"


def test_documents_may_be_bytes_mappings_or_signed_documents() -> None:
    pretty = json.dumps(H1.document, indent=2).encode()  # another spelling, the same document
    resolutions = resolve_heads([H0.canonical, pretty, H2.document])
    assert resolutions.rejected == ()
    assert only(resolutions).current == H2
    assert only(resolutions).missing_parents == ()


def test_the_same_head_given_twice_is_not_a_fork() -> None:
    resolution = only(resolve_heads([H0, H1, H1.canonical, json.dumps(H1.document).encode()]))
    assert not resolution.forked
    assert resolution.current == H1


def test_nothing_to_resolve() -> None:
    resolutions = resolve_heads([])
    assert resolutions == []
    assert resolutions.rejected == ()
    assert resolutions.as_json() == {"resolutions": [], "rejected": []}


# ---------------------------------------------------------------------------------------------
# Forks
# ---------------------------------------------------------------------------------------------


def test_fork_at_the_top_is_reported_and_has_no_current() -> None:
    resolution = only(resolve_heads([H1B, H0, H1A]))
    assert resolution.forked
    assert resolution.current is None
    assert resolution.manifest_cid is None
    assert resolution.candidates == tuple(sorted([H1A, H1B], key=lambda d: d.cid))
    assert resolution.sequence == 1
    assert resolution.history_forks == ()
    assert resolution.missing_parents == ()


def test_fork_candidates_do_not_depend_on_input_order() -> None:
    assert resolve_heads([H0, H1A, H1B]) == resolve_heads([H1B, H1A, H0])


def test_fork_lower_in_history_is_reported_after_a_merge() -> None:
    merged = head(2, [H1A, H1B])
    resolution = only(resolve_heads([H0, H1A, H1B, merged]))
    assert resolution.current == merged
    assert not resolution.forked
    assert resolution.history_forks == (1,)


def test_several_lower_forks_are_listed_in_order() -> None:
    h0b = head(0, label="0b")
    h2a, h2b = head(2, [H1], label="2a"), head(2, [H1], label="2b")
    top = head(3, [h2a, h2b])
    resolution = only(resolve_heads([top, h2b, H1, h0b, h2a, H0]))
    assert resolution.history_forks == (0, 2)
    assert resolution.current == top


def test_next_head_after_a_fork_merges_it() -> None:
    merge = next_head(
        key=ALICE_KEY,
        issuer_id=ALICE,
        head_id="notes",
        manifest_cid=manifest("merge"),
        previous=[H0, H1A, H1B],
        updated_at=NOW + 10,
    )
    assert merge.document["sequence"] == 2
    assert merge.document["parents"] == sorted([H1A.cid, H1B.cid])
    resolution = only(resolve_heads([H0, H1A, H1B, merge]))
    assert resolution.current == merge
    assert resolution.history_forks == (1,)
    assert resolution.missing_parents == ()


# ---------------------------------------------------------------------------------------------
# next_head
# ---------------------------------------------------------------------------------------------


def test_first_head_has_sequence_zero_and_no_parents() -> None:
    first = next_head(
        key=ALICE_KEY, issuer_id=ALICE, head_id="notes", manifest_cid=manifest(0), updated_at=NOW
    )
    assert first.document["sequence"] == 0
    assert first.document["parents"] == []
    assert first.document["manifest_cid"] == manifest(0)
    assert first.document["updated_at"] == NOW


def test_next_head_follows_the_current_head() -> None:
    following = next_head(
        key=ALICE_KEY,
        issuer_id=ALICE,
        head_id="notes",
        manifest_cid=manifest(3),
        previous=[H2.canonical, H0, H1.document],
        updated_at=NOW + 3,
        extensions={"example:note": "third"},
    )
    assert following.document["sequence"] == 3
    assert following.document["parents"] == [H2.cid]
    assert following.document["extensions"] == {"example:note": "third"}


def test_next_head_continues_after_a_gap() -> None:
    h7 = head(7, [H2])
    following = next_head(
        key=ALICE_KEY,
        issuer_id=ALICE,
        head_id="notes",
        manifest_cid=manifest(8),
        previous=[h7],
        updated_at=NOW + 8,
    )
    assert following.document["sequence"] == 8
    assert following.document["parents"] == [h7.cid]


def test_next_head_ignores_other_histories() -> None:
    others = [
        head(5, head_id="photos"),
        head(9, key=MALLORY_KEY),  # claims Alice's id, but another key
    ]
    following = next_head(
        key=ALICE_KEY,
        issuer_id=ALICE,
        head_id="notes",
        manifest_cid=manifest(2),
        previous=[*others, H0, H1],
        updated_at=NOW + 2,
    )
    assert following.document["sequence"] == 2
    assert following.document["parents"] == [H1.cid]


def test_next_head_refuses_a_history_it_cannot_read() -> None:
    forged = tampered(H1, sequence=5)
    with pytest.raises(AddsError) as caught:
        next_head(
            key=ALICE_KEY,
            issuer_id=ALICE,
            head_id="notes",
            manifest_cid=manifest(2),
            previous=[H0, forged],
            updated_at=NOW + 2,
        )
    assert [(p.pointer, p.code) for p in caught.value.problems] == [
        ("/1/signature/value", "profile.signature.invalid")
    ]


def test_next_head_past_the_largest_sequence_is_refused() -> None:
    last = head(2**53 - 1)
    with pytest.raises(AddsError) as caught:
        next_head(
            key=ALICE_KEY,
            issuer_id=ALICE,
            head_id="notes",
            manifest_cid=manifest(0),
            previous=[last],
            updated_at=NOW,
        )
    assert [(p.pointer, p.code) for p in caught.value.problems] == [("/sequence", "spec.range")]


# ---------------------------------------------------------------------------------------------
# Grouping by key, filters
# ---------------------------------------------------------------------------------------------


def test_a_stranger_claiming_the_issuer_id_forms_a_history_of_its_own() -> None:
    impostor = head(9, [H2], key=MALLORY_KEY, label="evil")
    resolutions = resolve_heads([H0, H1, H2, impostor])
    assert len(resolutions) == 2
    by_key = {r.issuer_key: r for r in resolutions}
    alice = by_key[public_key_raw(ALICE_KEY)]
    mallory = by_key[public_key_raw(MALLORY_KEY)]
    assert alice.current == H2
    assert not alice.forked
    assert mallory.current == impostor
    assert mallory.issuer_id == ALICE  # the claim is reported as made; the key tells them apart
    assert mallory.missing_parents == ()  # H2 was given, whoever signed it

    filtered = resolve_heads([H0, H1, H2, impostor], issuer_key=public_key_raw(ALICE_KEY))
    assert [r.current for r in filtered] == [H2]


def test_histories_are_per_head_id_and_sorted() -> None:
    photos = head(4, head_id="photos")
    resolutions = resolve_heads([photos, H0, H1])
    assert [(r.head_id, r.sequence) for r in resolutions] == [("notes", 1), ("photos", 4)]
    assert [r.current for r in resolve_heads([photos, H0, H1], head_id="photos")] == [photos]
    assert list(resolve_heads([photos, H0], head_id="music")) == []


# ---------------------------------------------------------------------------------------------
# Rejected documents
# ---------------------------------------------------------------------------------------------


def test_tampered_and_invalid_documents_are_rejected_with_their_problems() -> None:
    forged_top = tampered(H2, sequence=99)
    receipt = build_receipt(
        key=ALICE_KEY,
        provider_id=ALICE,
        receipt_id="r",
        issued_at=NOW,
        retention_until=NOW + 1,
        commitment=Commitment.STORE,
        items=[InventoryItem(H0.cid, 1, Role.HEAD)],
    )
    inputs: list[object] = [
        H0,
        forged_top,
        b"not json",
        receipt,
        {"kind": "head", "sequence": float("nan")},
        42,
        H1,
    ]
    resolutions = resolve_heads(inputs)  # type: ignore[arg-type]
    resolution = only(resolutions)
    assert resolution.current == H1  # the forged head with sequence 99 took no part
    codes = {r.index: [(p.pointer, p.code) for p in r.problems] for r in resolutions.rejected}
    assert codes == {
        1: [("/signature/value", "profile.signature.invalid")],
        2: [("", "spec.ijson.syntax")],
        3: [("/kind", "profile.resolve.kind")],
        4: [("", "spec.ijson.syntax")],
        5: [("", "spec.type")],
    }
    by_index = {r.index: r for r in resolutions.rejected}
    assert by_index[1].kind == "head"
    assert by_index[1].cid == cid_for_bytes(forged_top)
    assert (by_index[3].cid, by_index[3].kind) == (receipt.cid, "receipt")
    assert by_index[2].cid is None
    assert by_index[2].kind is None


def test_a_head_with_an_invalid_member_is_rejected_even_if_signed() -> None:
    document = {**H1.document, "parents": [H0.cid, H0.cid]}
    del document["signature"]
    resigned = canonicalize(sign_document(document, ALICE_KEY))
    resolutions = resolve_heads([H0, resigned])
    assert only(resolutions).current == H0
    assert [(p.pointer, p.code) for p in resolutions.rejected[0].problems] == [
        ("/parents/1", "spec.unique")
    ]


def test_rejected_documents_are_reported_whatever_the_filters() -> None:
    resolutions = resolve_heads([b"{}", H0], head_id="other")
    assert list(resolutions) == []
    assert [r.index for r in resolutions.rejected] == [0]


# ---------------------------------------------------------------------------------------------
# Missing parents, JSON
# ---------------------------------------------------------------------------------------------


def test_missing_parents_are_those_of_the_top_heads_not_given() -> None:
    assert only(resolve_heads([H2])).missing_parents == (H1.cid,)
    assert only(resolve_heads([H2, H0])).missing_parents == (H1.cid,)
    # Only the top heads' parents count: H1's parent H0 is not asked for.
    assert only(resolve_heads([H2, H1])).missing_parents == ()


def test_missing_parents_of_a_fork_are_the_union() -> None:
    other = cid_for_bytes(b"elsewhere")
    fork_a = head(3, [H2], label="3a")
    fork_b = head(3, [other, H2], label="3b")
    resolution = only(resolve_heads([fork_a, fork_b]))
    assert resolution.forked
    assert resolution.missing_parents == tuple(sorted([H2.cid, other]))


def test_a_parent_given_only_as_an_invalid_document_is_missing() -> None:
    resolutions = resolve_heads([H2, tampered(H1, updated_at=0)])
    assert only(resolutions).missing_parents == (H1.cid,)


def test_as_json() -> None:
    resolutions = resolve_heads([H0, H1A, H1B, b"[]"])
    data = json.loads(json.dumps(resolutions.as_json()))
    [resolution] = data["resolutions"]
    assert resolution["forked"] is True
    assert resolution["current"] is None
    assert [c["cid"] for c in resolution["candidates"]] == sorted([H1A.cid, H1B.cid])
    assert resolution["candidates"][0]["parents"] == [H0.cid]
    assert resolution["sequence"] == 1
    assert resolution["head_id"] == "notes"
    assert resolution["issuer_id"] == ALICE
    assert resolution["issuer_key"] == H0.document["issuer"]["ed25519_public_key"]
    assert data["rejected"] == [
        {
            "index": 3,
            "cid": None,
            "kind": None,
            "problems": [
                {
                    "pointer": "",
                    "code": "spec.type",
                    "message": "a document is a JSON object, not array",
                }
            ],
        }
    ]
    current = only(resolve_heads([H0, H1])).as_json()["current"]
    assert current == {
        "cid": H1.cid,
        "sequence": 1,
        "manifest_cid": manifest(1),
        "parents": [H0.cid],
        "updated_at": NOW + 1,
    }


# ---------------------------------------------------------------------------------------------
# Property: shuffled linear histories resolve to their highest sequence
# ---------------------------------------------------------------------------------------------

_KEYS = [ALICE_KEY, MALLORY_KEY]
_histories = st.dictionaries(
    st.tuples(st.sampled_from([0, 1]), st.sampled_from(["notes", "photos", "x"])),
    st.tuples(
        st.integers(0, 2**53 - 20),  # first sequence
        st.lists(st.integers(1, 3), max_size=4),  # steps between sequences
        st.lists(st.booleans(), min_size=5, max_size=5),  # which lower heads are given
    ),
    min_size=1,
    max_size=3,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(histories=_histories, shuffle=st.randoms(use_true_random=False))
def test_shuffled_linear_histories_resolve_to_their_highest_sequence(
    histories: dict[tuple[int, str], tuple[int, list[int], list[bool]]],
    shuffle: random.Random,
) -> None:
    given_documents: list[SignedDocument] = []
    expected: dict[tuple[bytes, str], tuple[SignedDocument, tuple[str, ...]]] = {}
    for (key_index, head_id), (first, steps, kept) in histories.items():
        key = _KEYS[key_index]
        sequences = [first]
        for step in steps:
            sequences.append(sequences[-1] + step)
        chain: list[SignedDocument] = []
        for sequence in sequences:
            chain.append(
                head(sequence, chain[-1:], key=key, head_id=head_id, label=(head_id, sequence))
            )
        lower = [h for h, keep in zip(chain[:-1], kept, strict=False) if keep]
        given_documents += [*lower, chain[-1]]
        top = chain[-1]
        missing = tuple(p for p in top.document["parents"] if p not in {h.cid for h in lower})
        expected[(public_key_raw(key), head_id)] = (top, missing)
    shuffle.shuffle(given_documents)

    resolutions = resolve_heads(given_documents)
    assert resolutions.rejected == ()
    assert [(r.issuer_key, r.head_id) for r in resolutions] == sorted(expected)
    for resolution in resolutions:
        top, missing = expected[(resolution.issuer_key, resolution.head_id)]
        assert resolution.current == top
        assert resolution.sequence == top.document["sequence"]
        assert not resolution.forked
        assert resolution.history_forks == ()
        assert resolution.missing_parents == missing
