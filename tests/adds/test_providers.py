"""hearth.adds.providers: record resolution and supersession, block URLs, holdings, receipts."""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from typing import Any

import pytest
import uri_template
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hearth.adds import (
    AddsError,
    Commitment,
    Endpoint,
    InventoryItem,
    Role,
    SignedDocument,
    build_head,
    build_provider_record,
    build_receipt,
    cid_for_bytes,
)
from hearth.adds.canonical import canonicalize
from hearth.adds.ed25519 import public_key_raw
from hearth.adds.heads import Resolutions
from hearth.adds.providers import (
    ProviderResolution,
    block_urls,
    expand_template,
    receipt_covers,
    receipt_in_force,
    record_holds,
    record_in_force,
    resolve_provider_records,
)
from tests.support.adds_strategies import cids, uri_templates
from tests.vectors.generate import signing_key

NOW = 1_795_000_000
PROVIDER_ID = "did:example:provider"
PROVIDER_KEY = signing_key("providers/provider")
OTHER_KEY = signing_key("providers/other")
BLOCK = cid_for_bytes(b"block/0")
OTHER_BLOCK = cid_for_bytes(b"block/1")
DEFAULT_ENDPOINTS = (Endpoint("https", "https://p.example/blocks/{cid}"),)


def record(
    sequence: int,
    *,
    supersedes: SignedDocument | str | None = None,
    key: Ed25519PrivateKey = PROVIDER_KEY,
    record_id: str = "inventory",
    endpoints: Sequence[Endpoint] = DEFAULT_ENDPOINTS,
    inventory: Sequence[str] = (BLOCK,),
    issued_at: int = NOW,
    expires_at: int = NOW + 3_600,
    label: str = "",
) -> SignedDocument:
    return build_provider_record(
        key=key,
        provider_id=PROVIDER_ID,
        record_id=record_id,
        sequence=sequence,
        issued_at=issued_at,
        expires_at=expires_at,
        inventory=[InventoryItem(cid, 1_024, Role.BLOCK) for cid in inventory],
        endpoints=endpoints,
        supersedes=supersedes.cid if isinstance(supersedes, SignedDocument) else supersedes,
        extensions={"example:label": label} if label else None,
    )


def receipt(
    items: Sequence[str] = (BLOCK, OTHER_BLOCK), *, issued_at: int = NOW, until: int = NOW + 100
) -> SignedDocument:
    return build_receipt(
        key=PROVIDER_KEY,
        provider_id=PROVIDER_ID,
        receipt_id="receipt-1",
        issued_at=issued_at,
        retention_until=until,
        commitment=Commitment.STORE_AND_SERVE,
        items=[InventoryItem(cid, 1_024, Role.BLOCK) for cid in items],
    )


def only(resolutions: Resolutions[ProviderResolution]) -> ProviderResolution:
    assert len(resolutions) == 1
    return resolutions[0]


def codes(resolution: ProviderResolution) -> list[tuple[str, str]]:
    return [(p.pointer, p.code) for p in resolution.problems]


R0 = record(0)
R1 = record(1, supersedes=R0)
R2 = record(2, supersedes=R1)


# ---------------------------------------------------------------------------------------------
# Resolution and supersession
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("order", [(0, 1, 2), (2, 1, 0), (1, 2, 0)])
def test_highest_sequence_wins_and_the_chain_checks_out(order: tuple[int, ...]) -> None:
    chain = [R0, R1, R2]
    resolution = only(resolve_provider_records([chain[i] for i in order]))
    assert resolution.current == R2
    assert resolution.candidates == (R2,)
    assert not resolution.conflict
    assert resolution.sequence == 2
    assert resolution.supersedes == R1.cid
    assert resolution.superseded == R1
    assert resolution.superseded_by == ()
    assert resolution.problems == ()
    assert resolution.history_conflicts == ()
    assert resolution.provider_id == PROVIDER_ID
    assert resolution.provider_key == public_key_raw(PROVIDER_KEY)
    assert resolution.record_id == "inventory"


def test_the_highest_sequence_wins_without_supersedes() -> None:
    resolution = only(resolve_provider_records([record(3), record(1)]))
    assert resolution.sequence == 3
    assert resolution.supersedes is None
    assert resolution.superseded is None


def test_equal_highest_sequences_are_a_conflict() -> None:
    a, b = record(1, label="a"), record(1, label="b")
    resolution = only(resolve_provider_records([R0, b, a]))
    assert resolution.conflict
    assert resolution.current is None
    assert resolution.candidates == tuple(sorted([a, b], key=lambda d: d.cid))
    assert resolution.supersedes is None
    assert resolution.expired_at(NOW)
    assert resolve_provider_records([a, b]) == resolve_provider_records([b, a])


def test_the_same_record_given_twice_is_no_conflict() -> None:
    resolution = only(resolve_provider_records([R1, R1.canonical, R1.document]))
    assert not resolution.conflict
    assert resolution.current == R1


def test_a_conflict_lower_down_is_reported() -> None:
    a, b = record(1, label="a"), record(1, label="b")
    resolution = only(resolve_provider_records([a, b, R2]))
    assert resolution.current == R2
    assert resolution.history_conflicts == (1,)


def test_a_supersedes_link_to_a_record_not_given_is_no_problem() -> None:
    resolution = only(resolve_provider_records([R2]))
    assert resolution.supersedes == R1.cid
    assert resolution.superseded is None
    assert resolution.problems == ()
    assert resolution.as_json()["supersedes_found"] is False


@pytest.mark.parametrize("offset", [0, 1, 5])
def test_supersedes_naming_an_equal_or_higher_sequence_is_a_problem(offset: int) -> None:
    newer = record(3 + offset, record_id="old")
    current = record(3, record_id="new", supersedes=newer)
    resolutions = resolve_provider_records([newer, current], record_id="new")
    resolution = only(resolutions)
    assert resolution.current == current
    assert resolution.superseded == newer
    assert codes(resolution) == [("/supersedes", "profile.supersedes.sequence")]
    assert f"sequence {3 + offset} is not below 3" in resolution.problems[0].message


def test_a_bad_link_further_down_the_chain_is_reported() -> None:
    a = record(4, record_id="a")
    b = record(3, record_id="b", supersedes=a)  # names a higher sequence
    c = record(5, record_id="b", supersedes=b)
    resolutions = resolve_provider_records([a, b, c])
    by_id = {r.record_id: r for r in resolutions}
    assert by_id["b"].current == c
    assert by_id["b"].superseded == b
    assert codes(by_id["b"]) == [("/supersedes", "profile.supersedes.sequence")]
    assert b.cid in by_id["b"].problems[0].message
    # a is still the winner of its own record, and it is reported as superseded by b.
    assert by_id["a"].current == a
    assert by_id["a"].superseded_by == (b.cid,)


def test_a_record_replaced_under_a_new_record_id_is_superseded_by_it() -> None:
    old = record(0, record_id="old")
    new = record(1, record_id="new", supersedes=old)
    impostor = record(2, record_id="other", supersedes=old, key=OTHER_KEY)
    by_id = {r.record_id: r for r in resolve_provider_records([old, new, impostor])}
    assert by_id["old"].superseded_by == (new.cid,)  # the other key's claim does not count
    assert by_id["new"].problems == ()
    assert codes(by_id["other"]) == [("/supersedes", "profile.supersedes.provider")]


def test_supersedes_naming_another_kind_is_a_problem() -> None:
    head = build_head(
        key=PROVIDER_KEY,
        issuer_id=PROVIDER_ID,
        head_id="h",
        sequence=0,
        manifest_cid=BLOCK,
        parents=[],
        updated_at=NOW,
    )
    current = record(1, supersedes=head)
    resolutions = resolve_provider_records([head, current])
    assert codes(only(resolutions)) == [("/supersedes", "profile.supersedes.kind")]
    assert only(resolutions).superseded == head
    # The head itself is not a provider record.
    assert [(r.index, r.kind) for r in resolutions.rejected] == [(0, "head")]


def test_records_are_grouped_by_provider_key_not_by_id() -> None:
    impostor = record(9, key=OTHER_KEY, label="impostor")
    resolutions = resolve_provider_records([R0, R1, impostor])
    assert len(resolutions) == 2
    by_key = {r.provider_key: r for r in resolutions}
    assert by_key[public_key_raw(PROVIDER_KEY)].current == R1
    assert by_key[public_key_raw(OTHER_KEY)].current == impostor
    filtered = resolve_provider_records(
        [R0, R1, impostor], provider_key=public_key_raw(PROVIDER_KEY)
    )
    assert [r.current for r in filtered] == [R1]


def test_invalid_documents_are_rejected() -> None:
    forged = canonicalize({**R2.document, "sequence": 7})
    resolutions = resolve_provider_records([R0, forged, b"\xff", receipt(), R1])
    assert only(resolutions).current == R1
    assert [(r.index, [p.code for p in r.problems]) for r in resolutions.rejected] == [
        (1, ["profile.signature.invalid"]),
        (2, ["spec.ijson.utf8"]),
        (3, ["profile.resolve.kind"]),
    ]


def test_expired_at_is_the_time_window() -> None:
    resolution = only(resolve_provider_records([record(0, issued_at=NOW, expires_at=NOW + 10)]))
    assert resolution.expired_at(NOW - 1)  # not issued yet
    assert not resolution.expired_at(NOW)
    assert not resolution.expired_at(NOW + 9)
    assert resolution.expired_at(NOW + 10)


def test_as_json() -> None:
    resolutions = resolve_provider_records([R1, R2, b"{}"])
    data = json.loads(json.dumps(resolutions.as_json()))
    [resolution] = data["resolutions"]
    assert resolution["current"] == {
        "cid": R2.cid,
        "sequence": 2,
        "issued_at": NOW,
        "expires_at": NOW + 3_600,
        "supersedes": R1.cid,
    }
    assert resolution["supersedes_found"] is True
    assert resolution["conflict"] is False
    assert resolution["provider_key"] == R2.document["provider"]["ed25519_public_key"]
    assert resolution["problems"] == []
    assert [r["index"] for r in data["rejected"]] == [2]


# ---------------------------------------------------------------------------------------------
# Using a record: block URLs, holdings, time
# ---------------------------------------------------------------------------------------------


def test_block_urls_by_priority_absent_last_ties_in_order() -> None:
    endpoints = [
        Endpoint("https", "https://a.example/{cid}"),
        Endpoint("https", "https://b.example/{cid}", priority=5),
        Endpoint("https", "https://c.example/{cid}", priority=0),
        Endpoint("https", "https://d.example/{cid}", priority=5),
        Endpoint("https", "https://e.example/{cid}"),
    ]
    urls = block_urls(record(0, endpoints=endpoints), BLOCK)
    assert urls == [f"https://{host}.example/{BLOCK}" for host in "cbdae"]


def test_block_urls_expand_every_operator() -> None:
    endpoints = [
        Endpoint("https", "https://p.example/blocks/{cid}{?x}"),
        Endpoint("https", "https://p.example{/cid}/raw"),
        Endpoint("https", "https://p.example/get{?cid,format}"),
        Endpoint("https", "https://p.example/{+cid}#{x}"),
        Endpoint("ipfs", "ipfs://{cid}"),
    ]
    assert block_urls(record(0, endpoints=endpoints), BLOCK) == [
        f"https://p.example/blocks/{BLOCK}",
        f"https://p.example/{BLOCK}/raw",
        f"https://p.example/get?cid={BLOCK}",
        f"https://p.example/{BLOCK}#",
        f"ipfs://{BLOCK}",
    ]
    assert block_urls(record(0, endpoints=endpoints), BLOCK, transports={"ipfs"}) == [
        f"ipfs://{BLOCK}"
    ]
    assert block_urls(record(0, endpoints=endpoints), BLOCK, transports=()) == []


def test_block_urls_repeat_no_url() -> None:
    endpoints = [
        Endpoint("https", "https://p.example/{cid}"),
        Endpoint("h2", "https://p.example/{+cid}"),
    ]
    assert block_urls(record(0, endpoints=endpoints), BLOCK) == [f"https://p.example/{BLOCK}"]


def test_block_urls_skip_templates_that_do_not_expand() -> None:
    document: dict[str, Any] = copy.deepcopy(R0.document)  # an unvalidated mapping
    document["endpoints"] = [
        {"transport": "https", "uri_template": "https://bad.example/{cid"},
        {"transport": "https", "uri_template": "https://short.example/{cid:8}"},
        {"transport": "https", "uri_template": "https://none.example/{id}"},
        {"transport": "https", "uri_template": 7},
        "not an endpoint",
        {"transport": "https", "uri_template": "https://good.example/{cid}", "priority": "x"},
    ]
    assert block_urls(document, BLOCK) == [f"https://good.example/{BLOCK}"]
    document["endpoints"] = "nothing"
    assert block_urls(document, BLOCK) == []


def test_block_urls_refuse_what_is_not_a_cid_or_a_record() -> None:
    with pytest.raises(AddsError) as caught:
        block_urls(R0, "https://evil.example/")
    assert caught.value.problems[0].code == "spec.cid.pattern"
    with pytest.raises(AddsError) as caught:
        block_urls(receipt(), BLOCK)
    assert caught.value.problems[0].code == "profile.resolve.kind"


def test_record_holds() -> None:
    held = record(0, inventory=[BLOCK, OTHER_BLOCK])
    assert record_holds(held, BLOCK)
    assert record_holds(held.document, OTHER_BLOCK)
    assert not record_holds(R0, OTHER_BLOCK)
    with pytest.raises(AddsError):
        record_holds(receipt(), BLOCK)


def test_record_in_force() -> None:
    assert not record_in_force(R0, NOW - 1)
    assert record_in_force(R0, NOW)
    assert record_in_force(R0.document, NOW + 3_599)
    assert not record_in_force(R0, NOW + 3_600)
    with pytest.raises(AddsError):
        record_in_force({**R0.document, "issued_at": 1.5}, NOW)


# ---------------------------------------------------------------------------------------------
# Receipts
# ---------------------------------------------------------------------------------------------


def test_receipt_covers_the_requested_items_it_commits_to() -> None:
    missing = cid_for_bytes(b"block/missing")
    assert receipt_covers(receipt(), [BLOCK, missing]) == {BLOCK}
    assert receipt_covers(receipt(), iter([BLOCK, OTHER_BLOCK, BLOCK])) == {BLOCK, OTHER_BLOCK}
    assert receipt_covers(receipt([OTHER_BLOCK]).document, [BLOCK]) == set()
    assert receipt_covers(receipt(), []) == set()
    with pytest.raises(AddsError):
        receipt_covers(R0, [BLOCK])


def test_receipt_in_force_until_retention_ends() -> None:
    held = receipt(issued_at=NOW, until=NOW + 100)
    assert not receipt_in_force(held, NOW - 1)
    assert receipt_in_force(held, NOW)
    assert receipt_in_force(held.document, NOW + 99)
    assert not receipt_in_force(held, NOW + 100)
    with pytest.raises(AddsError):
        receipt_in_force(R0, NOW)


# ---------------------------------------------------------------------------------------------
# RFC 6570 expansion
# ---------------------------------------------------------------------------------------------

# RFC 6570 section 3.2.1: the string variables of the examples.
RFC_VALUES = {
    "var": "value",
    "hello": "Hello World!",
    "half": "50%",
    "empty": "",
    "path": "/foo/bar",
    "x": "1024",
    "y": "768",
    "base": "http://example.com/home/",
}

# The examples of RFC 6570 sections 1.2 and 3.2.2 to 3.2.9 that use string values only.
RFC_EXAMPLES = [
    ("{var}", "value"),
    ("{hello}", "Hello%20World%21"),
    ("{half}", "50%25"),
    ("O{empty}X", "OX"),
    ("O{undef}X", "OX"),
    ("{x,y}", "1024,768"),
    ("{x,hello,y}", "1024,Hello%20World%21,768"),
    ("?{x,empty}", "?1024,"),
    ("?{x,undef}", "?1024"),
    ("?{undef,y}", "?768"),
    ("{var:3}", "val"),
    ("{var:30}", "value"),
    ("{+var}", "value"),
    ("{+hello}", "Hello%20World!"),
    ("{+half}", "50%25"),
    ("{base}index", "http%3A%2F%2Fexample.com%2Fhome%2Findex"),
    ("{+base}index", "http://example.com/home/index"),
    ("O{+empty}X", "OX"),
    ("O{+undef}X", "OX"),
    ("{+path}/here", "/foo/bar/here"),
    ("here?ref={+path}", "here?ref=/foo/bar"),
    ("up{+path}{var}/here", "up/foo/barvalue/here"),
    ("{+x,hello,y}", "1024,Hello%20World!,768"),
    ("{+path,x}/here", "/foo/bar,1024/here"),
    ("{+path:6}/here", "/foo/b/here"),
    ("{#var}", "#value"),
    ("{#hello}", "#Hello%20World!"),
    ("{#half}", "#50%25"),
    ("foo{#empty}", "foo#"),
    ("foo{#undef}", "foo"),
    ("{#x,hello,y}", "#1024,Hello%20World!,768"),
    ("{#path,x}/here", "#/foo/bar,1024/here"),
    ("{#path:6}/here", "#/foo/b/here"),
    ("X{.var}", "X.value"),
    ("X{.empty}", "X."),
    ("X{.undef}", "X"),
    ("X{.var:3}", "X.val"),
    ("X{.x,y}", "X.1024.768"),
    ("{/var}", "/value"),
    ("{/var,x}/here", "/value/1024/here"),
    ("{/var:1,var}", "/v/value"),
    ("{/var,empty}", "/value/"),
    ("{/var,undef}", "/value"),
    ("{;x,y}", ";x=1024;y=768"),
    ("{;x,y,empty}", ";x=1024;y=768;empty"),
    ("{;x,y,undef}", ";x=1024;y=768"),
    ("{;hello:5}", ";hello=Hello"),
    ("{?x,y}", "?x=1024&y=768"),
    ("{?x,y,empty}", "?x=1024&y=768&empty="),
    ("{?x,y,undef}", "?x=1024&y=768"),
    ("{?var:3}", "?var=val"),
    ("?fixed=yes{&x}", "?fixed=yes&x=1024"),
    ("{&x,y,empty}", "&x=1024&y=768&empty="),
    ("{&var:3}", "&var=val"),
    ("{var*}", "value"),
    ("{?var*}", "?var=value"),
    ("{;empty*}", ";empty"),  # appendix A: a string value is the same exploded or not
    ("{?empty*}", "?empty="),
]


@pytest.mark.parametrize(("template", "expected"), RFC_EXAMPLES)
def test_expand_template_rfc6570_examples(template: str, expected: str) -> None:
    assert expand_template(template, RFC_VALUES) == expected


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        ("caf\xe9/{var}", "caf%C3%A9/value"),  # literals outside the URI syntax are encoded
        ("%41{var}%2f", "%41value%2f"),  # pct-encoded literals are kept
        ("it's{var}", "it'svalue"),  # Erratum 6937
        ("{+var}%e9{#undef}", "value%e9"),
    ],
)
def test_expand_template_literals(template: str, expected: str) -> None:
    assert expand_template(template, RFC_VALUES) == expected


def test_expand_template_values_outside_ascii() -> None:
    values = {"v": "\xe9/%41 x"}
    assert expand_template("{v}", values) == "%C3%A9%2F%2541%20x"
    assert expand_template("{+v}", values) == "%C3%A9/%41%20x"
    assert expand_template("{v:1}", values) == "%C3%A9"


@pytest.mark.parametrize("template", ["{var", "a b{var}", "{va r}", "{var=x}", "{var:0}", "}"])
def test_expand_template_refuses_what_is_not_a_template(template: str) -> None:
    with pytest.raises(AddsError) as caught:
        expand_template(template, RFC_VALUES)
    assert caught.value.problems[0].code == "spec.endpoint.template"


def _second_opinion(template: str, cid: str) -> str | None:
    try:
        expanded = uri_template.expand(template, cid=cid)
    except (ValueError, TypeError):  # refuses a valid prefix of four digits
        return None
    return None if expanded is None else str(expanded)


# Besides CIDs, any non-empty text without "%": uri-template expands an empty string under an
# exploded named operator as ";cid=" where RFC 6570 appendix A gives ";cid", and the RFC leaves
# open how a prefix counts a pct-encoded triplet in a value.
_values = st.one_of(
    cids, st.text(st.characters(codec="utf-8", exclude_characters="%"), min_size=1, max_size=12)
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(template=uri_templates(), cid=_values)
def test_block_url_expansion_agrees_with_uri_template(template: str, cid: str) -> None:
    expected = _second_opinion(template, cid)
    if expected is not None:
        assert expand_template(template, {"cid": cid}) == expected
