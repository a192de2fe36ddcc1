"""Text no database can store is refused at the edge (server/edge_text.py, docs/service.md,
"Text the service stores").

A NUL character (PostgreSQL's text cannot hold one) or a lone UTF-16 surrogate (no driver can
encode one) in a path segment, a query value or anywhere in a JSON body is answered 422
``unstorable_text`` with where it was found, never the value, before any route runs: nothing
is written. One test drives every string field of every operation of the live OpenAPI document;
others pin the routes the audit named, the raw-body ADDS route, the bridge's WebSocket, the pure
checker, and the engine's hidden parameters.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote

import httpx2
import pytest
import sqlalchemy as sa
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from hypothesis import given
from hypothesis import strategies as st
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from hearth.adds import build_head, cid_for_bytes
from hearth.server.db import Database, metadata
from hearth.server.edge_text import (
    MAX_JSON_DEPTH,
    Unstorable,
    find_in_url,
    find_unstorable,
    is_json,
    nests_deeper_than,
    text_problem,
    unreadable_json,
)
from tests.support.agents import Registered
from tests.support.databases import fresh_postgres_database, in_db
from tests.support.live import Live, live_on

T = TypeVar("T")
KINDS = ["sqlite", "postgresql"]
MARK = "edge-marker-5c1e"  # around every poisoned value: a response must never carry it
POISONS = {"nul_character": f"{MARK}\x00{MARK}", "lone_surrogate": f"{MARK}\ud800{MARK}"}
# A lone surrogate cannot be written as UTF-8; its percent-encoded UTF-8-style bytes decode to
# U+FFFD in a URL, which is storable. Sent only to see that nothing breaks.
URL_SURROGATE = quote(MARK) + "%ED%A0%80" + quote(MARK)


@pytest.fixture(scope="module", params=KINDS)
def live(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Live]:
    with live_on(request.param, tmp_path_factory.mktemp(f"edge_{request.param}")) as service:
        yield service


@pytest.fixture(scope="module")
def owner(live: Live) -> Registered:
    return Registered.new(live)


def row_counts(live: Live) -> dict[str, int]:
    """Rows in every table of the schema: a refused request changes none of them."""

    def count(conn: sa.Connection) -> dict[str, int]:
        return {
            table.name: int(
                conn.execute(sa.select(sa.func.count()).select_from(table)).scalar_one()
            )
            for table in metadata.sorted_tables
        }

    return in_db(live, count)


def assert_refused(response: httpx2.Response, loc: list[str], kind: str) -> None:
    assert response.status_code == 422, response.text
    body = response.json()
    assert body["error"] == "unstorable_text", body
    assert isinstance(body["message"], str)
    [problem] = body["details"]
    assert problem["loc"] == loc
    assert problem["type"] == kind
    assert MARK not in response.text


# --- the routes the audit named ----------------------------------------------------------------


@dataclass(frozen=True)
class Named:
    """A route the audit found answering 500, the body (or path) that carried the text, and
    ``control``: the same request with the text made storable, which succeeds."""

    label: str
    method: str
    path: Callable[[Registered], str]
    body: Callable[[Registered, str], Any]
    loc: list[str]
    control: int | None


def _template(_: Registered, text: str) -> dict[str, Any]:
    return {"name": text, "description": "d", "price": 0, "expression": {"register": "r"}}


def _backup(owner: Registered, text: str) -> dict[str, Any]:
    blob = {"agent_id": owner.id, "blob_base64": "AAAA", "key_derivation": "argon2id-v1"}
    return {**blob, "label": text}


NAMED = [
    Named(
        "key name", "POST", lambda _: "/v1/keys", lambda _, t: {"name": t}, ["body", "name"], 201
    ),
    Named(
        "vault description",
        "PUT",
        lambda _: f"/v1/vault/edge-{uuid.uuid4().hex[:8]}",
        lambda _, t: {"value": "s3cret", "description": t},
        ["body", "description"],
        201,
    ),
    Named("template name", "POST", lambda _: "/v1/templates", _template, ["body", "name"], 201),
    Named(
        "bootstrap name",
        "POST",
        lambda _: "/v1/bootstrap",
        lambda _, t: {"name": t},
        ["body", "name"],
        201,
    ),
    Named(
        "bootstrap purpose",
        "POST",
        lambda _: "/v1/bootstrap",
        lambda _, t: {"name": "Edge", "purpose": t},
        ["body", "purpose"],
        201,
    ),
    Named(
        "bootstrap metadata, nested",
        "POST",
        lambda _: "/v1/bootstrap",
        lambda _, t: {"name": "Edge", "metadata": {"a": [{"b": t}]}},
        ["body", "metadata", "a", "0", "b"],
        201,
    ),
    Named("backup label", "POST", lambda _: "/v1/identity/backup", _backup, ["body", "label"], 201),
    # A fork costs credits the registered agent does not hold: no control.
    Named(
        "fork name",
        "POST",
        lambda o: f"/v1/identities/{o.id}/fork",
        lambda _, t: {"new_name": t},
        ["body", "new_name"],
        None,
    ),
]


@pytest.mark.parametrize("kind", list(POISONS))
@pytest.mark.parametrize("case", NAMED, ids=[n.label for n in NAMED])
def test_named_routes_refuse_unstorable_text_and_write_nothing(
    live: Live, owner: Registered, case: Named, kind: str
) -> None:
    path = case.path(owner)
    before = row_counts(live)
    refused = owner.call(case.method, path, case.body(owner, POISONS[kind]))
    assert_refused(refused, case.loc, kind)
    assert row_counts(live) == before
    if case.control is not None:
        # Not the marker: the sweep below searches memories for it, and would find this one.
        control = owner.call(case.method, path, case.body(owner, "edge control text"))
        assert control.status_code == case.control, control.text


def test_a_member_name_is_checked_like_a_value(live: Live, owner: Registered) -> None:
    before = row_counts(live)
    refused = owner.call(
        "POST", "/v1/bootstrap", {"name": "E", "metadata": {POISONS["nul_character"]: 1}}
    )
    assert_refused(refused, ["body", "metadata"], "nul_character")
    assert "member name" in refused.json()["details"][0]["message"]
    assert row_counts(live) == before


def test_path_and_query_refuse_nul(live: Live, owner: Registered) -> None:
    before = row_counts(live)
    with owner.client() as client:
        public = client.get(f"/public/agents/did:svc:{quote(MARK)}%00b")
        query = client.get(f"/v1/memories?key={quote(MARK)}%00")
        named = client.get(f"/v1/memories?{quote(MARK)}%00=1")
        deleted = client.delete(f"/v1/vault/{quote(MARK)}%00")
    assert_refused(public, ["path", "did"], "nul_character")
    assert_refused(query, ["query", "key"], "nul_character")
    assert_refused(named, ["query"], "nul_character")
    assert_refused(deleted, ["path", "name"], "nul_character")
    assert row_counts(live) == before


def test_the_edge_runs_before_authentication(live: Live) -> None:
    """No route dependency (bearer, proof, lookups) runs on such text: the refusal is the same
    with no bearer at all."""
    with live.client() as anonymous:
        refused = anonymous.post("/v1/keys", json={"name": POISONS["nul_character"]})
    assert_refused(refused, ["body", "name"], "nul_character")


def test_an_adds_document_is_checked_where_its_raw_bytes_are_parsed(
    live: Live, owner: Registered
) -> None:
    """The document route reads raw bytes and parses them itself: a signed, valid head whose
    head_id holds a NUL is refused the same way, and nothing is kept."""
    head = build_head(
        key=Ed25519PrivateKey.generate(),
        issuer_id="did:example:wren",
        head_id=POISONS["nul_character"],
        sequence=0,
        manifest_cid=cid_for_bytes(b"m"),
        parents=[],
        updated_at=1_795_000_000,
    )
    before = row_counts(live)
    with owner.client() as client:
        refused = client.post("/v1/adds/documents", content=head.canonical)
    assert_refused(refused, ["body", "head_id"], "nul_character")
    assert row_counts(live) == before


def test_the_bridge_websocket_is_refused_before_the_upgrade(live: Live) -> None:
    url = live.base_url.replace("http://", "ws://") + f"/v1/runtimes/{quote(MARK)}%00/bridge"

    async def attempt() -> tuple[int, Any]:
        try:
            async with connect(url, additional_headers={"Authorization": "Bearer x"}):
                pass
        except InvalidStatus as exc:
            return exc.response.status_code, json.loads(exc.response.body or b"null")
        raise AssertionError("the upgrade was accepted")

    status, body = asyncio.run(attempt())
    assert status == 422
    assert body["error"] == "unstorable_text"
    assert body["details"][0]["loc"] == ["path", "runtime_id"]


# --- every string field of every operation ------------------------------------------------------

METHODS = {"get", "put", "post", "delete", "patch", "head", "options"}
NAME = "<member name>"  # a step naming a free member's name rather than its value
Step = str | int


FREE_LEVELS = 3  # levels of free-form JSON (free members, arrays within them) the sweep enters


class OpenApi:
    """Minimal bodies from an OpenAPI document and the string fields they can carry."""

    def __init__(self, doc: dict[str, Any], known: dict[str, str]) -> None:
        self.doc = doc
        # Real values for fields named after them (an identity's id, its DID), so that more
        # requests would reach a route's database work if the edge let them through.
        self.known = known

    def resolve(self, schema: dict[str, Any]) -> dict[str, Any]:
        while "$ref" in schema:
            node: Any = self.doc
            for part in schema["$ref"].removeprefix("#/").split("/"):
                node = node[part]
            schema = node
        return schema

    def options(self, schema: dict[str, Any]) -> list[dict[str, Any]]:
        """The concrete shapes a schema admits (anyOf/oneOf flattened, null left out)."""
        schema = self.resolve(schema)
        for key in ("anyOf", "oneOf"):
            if key in schema:
                return [o for s in schema[key] for o in self.options(s) if o.get("type") != "null"]
        if "allOf" in schema:
            merged: dict[str, Any] = {}
            for part in schema["allOf"]:
                merged.update(self.resolve(part))
            return [merged]
        return [schema]

    def minimal(self, schema: dict[str, Any], name: str | None = None) -> Any:
        options = self.options(schema)
        if not options:
            return None
        shape = options[0]
        if "const" in shape:
            return shape["const"]
        if "enum" in shape:
            return shape["enum"][0]
        kind = shape.get("type")
        if kind == "object" or "properties" in shape:
            properties = shape.get("properties", {})
            return {
                member: self.minimal(properties.get(member, {}), member)
                for member in shape.get("required", [])
            }
        if kind == "array":
            return [self.minimal(shape.get("items", {})) for _ in range(shape.get("minItems", 0))]
        if kind == "string":
            return self.known.get(name or "", "x" * max(1, shape.get("minLength", 1)))
        if kind in ("integer", "number"):
            return shape.get("minimum", 0)
        if kind == "boolean":
            return False
        return None

    def string_paths(
        self, schema: dict[str, Any], depth: int = 0, free: int = 0
    ) -> Iterator[tuple[Step, ...]]:
        """Every place a string can go in a value of ``schema``: declared object members at any
        depth, the first item of arrays, and the names and values of free members, down to
        ``FREE_LEVELS`` levels of free-form JSON (a recursive JSON type branches at every level,
        and the edge's check walks a decoded value the same way at each: 2^12 paths per free
        field proved nothing that three levels do not)."""
        if depth > 12 or free > FREE_LEVELS:
            return
        for shape in self.options(schema):
            kind = shape.get("type")
            if kind == "string" or (kind is None and not shape.get("properties")):
                yield ()
            if kind == "object" or "properties" in shape:
                for name, member in shape.get("properties", {}).items():
                    for rest in self.string_paths(member, depth + 1, free):
                        yield (name, *rest)
                extra = shape.get("additionalProperties", False)
                if extra is not False:
                    yield (NAME,)
                    for rest in self.string_paths(
                        extra if isinstance(extra, dict) else {}, depth + 1, free + 1
                    ):
                        yield ("k", *rest)
            if kind == "array":
                inside = free + 1 if free else 0  # an array within free-form JSON is a level
                for rest in self.string_paths(shape.get("items", {}), depth + 1, inside):
                    yield (0, *rest)

    def build(self, schema: dict[str, Any], path: tuple[Step, ...], text: str) -> Any:
        """The minimal value of ``schema`` with ``text`` at ``path``."""
        if not path:
            return text
        step, rest = path[0], path[1:]
        wanted = "array" if isinstance(step, int) else "object"
        shape = next(
            (s for s in self.options(schema) if s.get("type") == wanted or "properties" in s),
            {},
        )
        if isinstance(step, int):
            return [self.build(shape.get("items", {}), rest, text)]
        value = self.minimal(shape) if shape else {}
        if not isinstance(value, dict):
            value = {}
        free = shape.get("additionalProperties", {})
        free_schema = free if isinstance(free, dict) else {}
        if step == NAME:
            value[text] = self.minimal(free_schema)
        else:
            member = shape.get("properties", {}).get(step, free_schema)
            value[step] = self.build(member, rest, text)
        return value


@dataclass(frozen=True)
class Case:
    operation: str
    method: str
    url: str
    body: bytes | None
    content_type: str | None
    loc: list[str] | None  # None: the value reaches the service as storable U+FFFD
    kind: str


def _admits_string(api: OpenApi, schema: dict[str, Any]) -> bool:
    return () in set(api.string_paths(schema))


def _url(path: str, values: dict[str, str], query: str = "") -> str:
    for name, value in values.items():
        path = path.replace("{" + name + "}", value)
    return path + (f"?{query}" if query else "")


def cases(doc: dict[str, Any], known: dict[str, str]) -> Iterator[Case]:
    api = OpenApi(doc, known)
    for path, item in doc["paths"].items():
        for method, operation in item.items():
            if method not in METHODS:
                continue
            label = f"{method.upper()} {path}"
            parameters = [
                api.resolve(p)
                for p in [*item.get("parameters", []), *operation.get("parameters", [])]
            ]
            in_path = [p for p in parameters if p["in"] == "path"]
            plain = {p["name"]: quote(known.get(p["name"], "x"), safe=":") for p in in_path}
            for param in in_path:
                nul = {**plain, param["name"]: quote(POISONS["nul_character"], safe="")}
                yield Case(
                    label,
                    method,
                    _url(path, nul),
                    None,
                    None,
                    ["path", param["name"]],
                    "nul_character",
                )
                odd = {**plain, param["name"]: URL_SURROGATE}
                yield Case(label, method, _url(path, odd), None, None, None, "lone_surrogate")
            base = _url(path, plain)
            for param in parameters:
                if param["in"] != "query" or not _admits_string(api, param.get("schema", {})):
                    continue
                name = param["name"]
                nul = f"{quote(name)}={quote(POISONS['nul_character'], safe='')}"
                yield Case(
                    label, method, f"{base}?{nul}", None, None, ["query", name], "nul_character"
                )
                odd = f"{quote(name)}={URL_SURROGATE}"
                yield Case(label, method, f"{base}?{odd}", None, None, None, "lone_surrogate")
            content = operation.get("requestBody", {}).get("content", {})
            media = next((m for m in content if is_json(m)), None)
            if media is None:
                continue
            schema = content[media].get("schema", {})
            for steps in dict.fromkeys(api.string_paths(schema)):
                for kind, text in POISONS.items():
                    body = api.build(schema, steps, text)
                    where = [str(s) for s in steps]
                    loc = ["body", *where[:-1]] if steps and steps[-1] == NAME else ["body", *where]
                    raw = json.dumps(body).encode()  # ensure_ascii: \u0000 and \ud800 escapes
                    yield Case(label, method, base, raw, media, loc, kind)


def test_every_string_field_of_every_operation_refuses_unstorable_text(
    live: Live, owner: Registered
) -> None:
    """The live document, every operation, every string field in the path, the query and the
    JSON body at any depth: NUL and a lone surrogate are refused with 422 ``unstorable_text``
    at the right place (never a 5xx, never the value echoed); the percent-encoded surrogate,
    which arrives as U+FFFD, is answered without a 5xx and in the error shape when refused."""
    with owner.client() as client:
        doc = client.get("/v1/openapi.json").json()
        known = {"id": owner.id, "agent_id": owner.id, "identity_id": owner.id, "did": owner.did}
        all_cases = list(cases(doc, known))
        client.get("/v1/templates")  # the built-in catalogue is seeded on its first listing
        before = row_counts(live)
        failures: list[str] = []
        for case in all_cases:
            headers = {"Content-Type": case.content_type} if case.content_type else {}
            response = client.request(case.method, case.url, content=case.body, headers=headers)
            problem = _judge(case, response)
            if problem is not None:
                failures.append(f"{case.operation} {case.loc} {case.kind}: {problem}")
    assert not failures, "\n".join(failures)
    # The sweep reached the fields it is meant to reach (a walker that finds nothing passes
    # vacuously): the three the audit named among them, and many more.
    refused = {(c.operation, tuple(c.loc or ())) for c in all_cases if c.loc is not None}
    assert ("POST /v1/keys", ("body", "name")) in refused
    assert ("GET /public/agents/{did}", ("path", "did")) in refused
    assert ("POST /v1/bootstrap", ("body", "purpose")) in refused
    assert len(refused) >= 150, len(refused)
    operations = {c.operation for c in all_cases}
    assert len(operations) >= 60, len(operations)
    # None of them wrote anything.
    assert row_counts(live) == before


ADDS_DOCUMENTS = "POST /v1/adds/documents"


def _judge(case: Case, response: httpx2.Response) -> str | None:
    if response.status_code >= 500:
        return f"{response.status_code} {response.text[:200]}"
    if MARK in response.text:
        return "the value was echoed"
    if case.loc is None:
        if response.status_code >= 400 and case.method != "head":
            body = response.json()
            if not isinstance(body.get("error"), str) or not isinstance(body.get("message"), str):
                return f"{response.status_code} not in the error shape"
        return None
    if response.status_code != 422:
        return f"{response.status_code} instead of 422"
    if case.method == "head":
        return None
    body = response.json()
    if case.operation == ADDS_DOCUMENTS and body.get("error") == "invalid_document":
        # The route reads raw bytes and the ADDS validator speaks first: a generated document is
        # unsigned, so it is refused as invalid before its text is looked at (a valid, signed
        # document holding NUL gets unstorable_text: the ADDS head test below).
        return None
    if body.get("error") != "unstorable_text":
        return f"error {body.get('error')!r}"
    if body["details"][0]["loc"] != case.loc or body["details"][0]["type"] != case.kind:
        return f"details {body['details']}"
    return None


# --- the checker itself --------------------------------------------------------------------------


def test_text_problem() -> None:
    assert text_problem("plain ascii") is None
    assert text_problem("ünïcode 😀 \u2028") is None
    assert text_problem("a\x00b") == "nul_character"
    assert text_problem("a\udc00") == "lone_surrogate"
    assert text_problem("\ud83d") == "lone_surrogate"


def test_find_unstorable_reports_the_first_place_in_document_order() -> None:
    value = {"a": ["ok", {"b": "x\x00"}], "c": "\ud800"}
    assert find_unstorable(value) == Unstorable(("body", "a", "1", "b"), "nul_character")
    assert find_unstorable({"c": "\ud800", "a": "\x00"}) == Unstorable(
        ("body", "c"), "lone_surrogate"
    )
    assert find_unstorable({"ok": {"n\x00": 1}}) == Unstorable(
        ("body", "ok"), "nul_character", True
    )
    assert find_unstorable({"ok": [1, 2.5, None, True, "fine"]}) is None
    deep: Any = "\x00"
    for _ in range(5000):  # iterative: no recursion limit to reach
        deep = [deep]
    found = find_unstorable(deep)
    assert found is not None
    assert len(found.loc) == 5001


def test_find_in_url() -> None:
    assert find_in_url({"id": "x"}, [("a", "b")]) is None
    assert find_in_url({"id": "x\x00"}, []) == Unstorable(("path", "id"), "nul_character")
    assert find_in_url({}, [("k", "\x00")]) == Unstorable(("query", "k"), "nul_character")
    assert find_in_url({}, [("\x00", "v")]) == Unstorable(("query",), "nul_character", True)


def test_unreadable_json() -> None:
    assert unreadable_json(b'{"a": "\\u0000"}') is None  # an escape is JSON; the text rule decides
    assert unreadable_json('{"a": "é"}'.encode()) is None
    assert unreadable_json('{"a": "x"}'.encode("utf-16"))[0] == "json_not_utf8"  # type: ignore[index]
    assert unreadable_json(b'{"a": "\xed\xa0\x80"}')[0] == "json_not_utf8"  # type: ignore[index]
    at_limit = b"[" * MAX_JSON_DEPTH + b"]" * MAX_JSON_DEPTH
    assert unreadable_json(at_limit) is None
    assert unreadable_json(b"[" + at_limit + b"]")[0] == "json_too_deep"  # type: ignore[index]
    brackets_in_text = json.dumps({"a": "[" * 500}).encode()
    assert unreadable_json(brackets_in_text) is None


def _depth(value: Any) -> int:
    if isinstance(value, list):
        return 1 + max(map(_depth, value), default=0)
    if isinstance(value, dict):
        return 1 + max(map(_depth, value.values()), default=0)
    return 0


# Strings rich in what the skeleton must see through: brackets, quotes and backslashes.
_TRICKY = st.text(alphabet='[]{}"\\ a\u00e9', max_size=6)
_VALUES = st.recursive(
    st.none() | st.integers() | _TRICKY,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_TRICKY, inner, max_size=3),
    max_leaves=40,
)


@given(_VALUES, st.integers(min_value=0, max_value=8), st.booleans())
def test_nests_deeper_than_agrees_with_the_decoded_depth(
    value: Any, limit: int, ascii_only: bool
) -> None:
    data = json.dumps(value, ensure_ascii=ascii_only, indent=None if limit % 2 else 1).encode()
    assert nests_deeper_than(data, limit) == (_depth(value) > limit)


def test_is_json() -> None:
    for media in ("application/json", "Application/JSON; charset=utf-8", "application/adds+json"):
        assert is_json(media)
    for media in (None, "", "text/plain", "application/octet-stream", "text/json"):
        assert not is_json(media)


# --- database errors never carry bound values -----------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_database_errors_hide_bound_parameters(kind: str, tmp_path: Path) -> None:
    """An IntegrityError's text (which reaches the log of a 500) names the statement, never the
    values bound to it: they may be secrets or whatever a client sent."""
    secret = f"secret-{uuid.uuid4().hex}"

    insert = sa.text("INSERT INTO edge_probe (v) VALUES (:v)")

    def twice(conn: sa.Connection) -> None:
        for _ in range(2):
            conn.execute(insert, {"v": secret})

    async def twice_async(db: Database) -> None:
        async with db.write() as conn:
            for _ in range(2):
                await conn.execute(insert, {"v": secret})

    async def run(url: str) -> list[str]:
        db = Database(url)
        try:
            async with db.write() as conn:
                await conn.execute(sa.text("CREATE TABLE edge_probe (v VARCHAR(80) PRIMARY KEY)"))
            # Both ways to the database: a function in one transaction, and an async connection.
            with pytest.raises(sa.exc.IntegrityError) as through_transaction:
                await db.transaction(twice)
            with pytest.raises(sa.exc.IntegrityError) as through_write:
                await twice_async(db)
            return [str(through_transaction.value), str(through_write.value)]
        finally:
            await db.dispose()

    if kind == "sqlite":
        texts = asyncio.run(run(f"sqlite+aiosqlite:///{tmp_path}/probe.sqlite3"))
    else:
        with fresh_postgres_database() as url:
            texts = asyncio.run(run(url))
    for text in texts:
        assert "edge_probe" in text
        assert secret not in text
        assert "hidden" in text
