"""Which mutations produce which change (docs/voice.md, "The change feed").

One table, not code per route: (method, route template) -> the wake section it touches (`key`),
what happened (`kind`), where the identity id comes from, and which ids go into the details.
``ServiceMiddleware`` asks ``ChangeFeed.begin`` about every mutating request under /v1 and, when
the response was a success, ``finish`` builds the change after the route's transaction has
committed and publishes it on the bus. tests/server/test_voice.py checks that every mutating
route of the app is in ``CHANGES`` or ``SILENT`` and that every entry names a real route.

Sources, written ``<where>:<name>``:

- ``path:<param>``: a path parameter (an identity id or DID, canonicalised);
- ``body:<a.b>``: a field of the JSON request body;
- ``response:<a.b>``: a field of the JSON response body;
- ``location``: the last segment of the response's Location header;
- ``memory:<param>``: the identity of the memory named by a path parameter, read before the
  mutation runs (a deleted memory cannot be asked afterwards);
- ``vault:<param>``: the identity namespace of a vault name (``<identity uuid>:<key>``).

Details only ever name ids, tiers, amounts and names: never a response's ``api_key``, ``bearer``,
``private_key`` or a vault value (values are not in any response, and details are chosen by name).
"""

from __future__ import annotations

import functools
import json
import re
import uuid
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import structlog
from sqlalchemy import Connection, bindparam, select

from .db.engine import AtEveryWrite, Database, utcnow
from .db.tables import api_keys, memories
from .events import Change, EventBus
from .json_types import JsonObject
from .services import wake_stamps
from .services.keys import hash_bearer
from .services.times import iso

log = structlog.get_logger("hearth.changes")

MUTATING = frozenset({"POST", "PUT", "PATCH", "DELETE"})
# A request body is kept for the change only when a rule reads it: JSON bodies are small (the
# body limit), and ADDS blocks, the one large upload, read nothing from theirs.
_MAX_CAPTURE = 1_048_576


@dataclass(frozen=True)
class Rule:
    key: str
    kind: str
    identity: str | None = None  # a source; None: a project-level change
    project: str = "bearer"  # "bearer", or a source of the project id (arrival has no bearer)
    details: tuple[tuple[str, str], ...] = ()  # (detail name, source)
    # Successes that change nothing: a replayed transfer, a document or block already held.
    quiet_statuses: frozenset[int] = field(default_factory=frozenset)


_ALREADY = frozenset({200})

CHANGES: dict[tuple[str, str], Rule] = {
    # --- arrival and identities: the wake's `you` -------------------------------------------
    ("POST", "/v1/register/agent"): Rule(
        "you",
        "identity_born",
        identity="response:agent.id",
        project="response:project.id",
        details=(("did", "response:agent.did"),),
    ),
    ("POST", "/v1/identity/recover"): Rule(
        "you",
        "identity_recovered",
        identity="response:agent.id",
        project="response:project.id",
        details=(("key_id", "response:project.key_id"),),
    ),
    ("POST", "/v1/bootstrap"): Rule(
        "you",
        "identity_born",
        identity="response:agent.id",
        details=(("did", "response:agent.did"),),
    ),
    ("POST", "/v1/bootstrap/elevate"): Rule(
        "you",
        "identity_elevated",
        identity="response:agent_id",
        details=(
            ("level", "response:level"),
            ("sponsor_did", "response:sponsor_did"),
            ("attestation_id", "response:attestation.id"),
            ("wallet_id", "response:wallet.id"),
        ),
    ),
    ("PUT", "/v1/identities/{id}/expression"): Rule(
        "you", "expression_updated", identity="path:id"
    ),
    ("POST", "/v1/identities/import"): Rule(
        "you",
        "identity_imported",
        identity="response:authority.identity_id",
        details=(("did", "response:authority.did"), ("root", "response:root")),
    ),
    ("POST", "/v1/identities/{id}/move"): Rule(
        "you",
        "identity_moved",
        identity="path:id",
        details=(("service", "response:moved_to.service"), ("did", "response:moved_to.did")),
    ),
    ("POST", "/v1/identities/{id}/fork"): Rule(
        "you",
        "identity_forked",
        identity="path:id",  # the parent: the fork is born with its own stream to come
        details=(
            ("fork_id", "response:agent.id"),
            ("fork_did", "response:agent.did"),
            ("charged", "response:charged.amount"),
        ),
    ),
    ("POST", "/v1/identities/from-template"): Rule(
        "you",
        "identity_born_from_template",
        identity="response:agent.id",
        details=(
            ("did", "response:agent.did"),
            ("template_id", "response:template_id"),
            ("purchase_id", "response:purchase_id"),
        ),
    ),
    ("POST", "/v1/identity/backup"): Rule(
        "you_keep",
        "backup_stored",
        identity="response:agent_id",
        details=(("backup_id", "response:id"),),
    ),
    # --- project keys: project-level, the key's id only (never the bearer) --------------------
    ("POST", "/v1/keys"): Rule("you", "key_created", details=(("key_id", "response:id"),)),
    ("DELETE", "/v1/keys/{key_id}"): Rule(
        "you", "key_revoked", details=(("key_id", "path:key_id"),)
    ),
    # --- memories: `you_remember` -------------------------------------------------------------
    ("POST", "/v1/memories"): Rule(
        "you_remember",
        "memory_stored",
        identity="response:agent_id",
        details=(
            ("memory_id", "response:id"),
            ("tier", "response:tier"),
            # A new version names the one it replaced (null for a first version).
            ("supersedes", "response:supersedes"),
        ),
    ),
    ("POST", "/v1/runtimes/{id}/inbox/{message_id}/remember"): Rule(
        "you_remember",
        "memory_stored",
        identity="response:agent_id",
        details=(("memory_id", "response:id"), ("tier", "response:tier")),
    ),
    ("POST", "/v1/memories/{id}/confirm"): Rule(
        "you_remember",
        "memory_confirmed",
        identity="response:agent_id",
        details=(("memory_id", "response:id"),),
    ),
    ("DELETE", "/v1/memories/{id}"): Rule(
        "you_remember",
        "memory_deleted",
        identity="memory:id",
        details=(("memory_id", "path:id"),),
    ),
    # A caller's entry: the wake's chronicle is part of what it remembers.
    ("POST", "/v1/chronicle"): Rule(
        "you_remember",
        "chronicle_written",
        identity="response:agent_id",
        details=(("entry_id", "response:id"), ("kind", "response:kind")),
    ),
    ("POST", "/v1/memories/{id}/elevate"): Rule(
        "you_remember",
        "memory_elevated",
        identity="response:agent_id",
        details=(("memory_id", "response:id"), ("tier", "response:tier")),
    ),
    # --- money: `you_own` -----------------------------------------------------------------------
    ("POST", "/v1/wallets/{wallet_id}/fund"): Rule(
        "you_own",
        "wallet_funded",
        identity="response:wallet.identity_id",
        details=(
            ("wallet_id", "response:wallet.id"),
            ("transfer_id", "response:transfer.id"),
            ("source_wallet_id", "response:transfer.source_wallet_id"),
            ("amount", "response:transfer.amount"),
            ("balance", "response:wallet.balance"),
        ),
        quiet_statuses=_ALREADY,  # 200 is a replay of an earlier transfer
    ),
    ("POST", "/v1/templates"): Rule(
        "you_own",
        "template_published",
        identity="body:identity_id",
        details=(("template_id", "response:id"), ("price", "response:price")),
    ),
    ("POST", "/v1/templates/{template_id}/purchase"): Rule(
        "you_own",
        "template_purchased",
        details=(
            ("template_id", "response:template_id"),
            ("purchase_id", "response:purchase_id"),
            ("wallet_id", "response:charged.wallet_id"),
            ("amount", "response:charged.amount"),
        ),
    ),
    # --- the vault and ADDS storage: `you_keep` (names and ids, never values) -----------------
    ("PUT", "/v1/vault/{name}"): Rule(
        "you_keep",
        "vault_secret_stored",
        identity="response:identity_id",
        details=(("name", "response:name"), ("version", "response:version")),
    ),
    ("DELETE", "/v1/vault/{name}"): Rule(
        "you_keep", "vault_secret_deleted", identity="vault:name", details=(("name", "path:name"),)
    ),
    ("PUT", "/v1/adds/blocks/{cid}"): Rule(
        "you_keep",
        "adds_block_stored",
        details=(("cid", "path:cid"), ("size", "response:size")),
        quiet_statuses=_ALREADY,  # the project already held this block
    ),
    ("POST", "/v1/adds/documents"): Rule(
        "you_keep",
        "adds_document_stored",
        details=(("cid", "response:cid"), ("document_kind", "response:kind")),
        quiet_statuses=_ALREADY,  # the project already held this document
    ),
    ("POST", "/v1/adds/receipts"): Rule(
        "you_keep", "adds_receipt_issued", details=(("cid", "location"),)
    ),
    # --- runtimes: `you_run` (never the control token) ---------------------------------------
    ("POST", "/v1/runtimes"): Rule(
        "you_run",
        "runtime_provisioned",
        identity="response:identity_id",
        details=(("runtime_id", "response:id"), ("mode", "response:mode")),
    ),
    ("PATCH", "/v1/runtimes/{id}"): Rule(
        "you_run",
        "runtime_updated",
        identity="response:identity_id",
        details=(("runtime_id", "path:id"),),
    ),
    ("DELETE", "/v1/runtimes/{id}"): Rule(
        "you_run",
        "runtime_deleted",
        identity="response:identity_id",
        details=(("runtime_id", "path:id"),),
    ),
    ("POST", "/v1/runtimes/{id}/restart"): Rule(
        "you_run",
        "runtime_restarted",
        identity="response:identity_id",
        details=(("runtime_id", "path:id"), ("status", "response:status")),
    ),
    ("POST", "/v1/runtimes/{id}/control-token"): Rule(
        "you_run",
        "control_token_rotated",
        details=(("runtime_id", "path:id"), ("rotated_at", "response:rotated_at")),
    ),
    # --- a self runtime's loop (ids only, never a message body) ---------------------------------
    ("POST", "/v1/runtimes/{id}/inbox/take"): Rule(
        "you_run",
        "inbox_message_taken",
        identity="response:identity_id",
        details=(("message_id", "response:id"), ("runtime_id", "path:id")),
        quiet_statuses=frozenset({204}),  # nothing was waiting: nothing changed
    ),
    ("POST", "/v1/runtimes/{id}/inbox/{message_id}/complete"): Rule(
        "you_run",
        "inbox_message_done",
        identity="response:identity_id",
        details=(("message_id", "path:message_id"), ("runtime_id", "path:id")),
    ),
    ("POST", "/v1/runtimes/{id}/inbox/{message_id}/release"): Rule(
        "you_run",
        "inbox_message_released",
        identity="response:identity_id",
        details=(("message_id", "path:message_id"), ("runtime_id", "path:id")),
    ),
    # --- identity keys: `you` (the kid and purpose, never key material beyond the public key) ---
    ("POST", "/v1/identities/{id}/keys"): Rule(
        "you",
        "identity_key_registered",
        identity="path:id",
        details=(
            ("kid", "response:kid"),
            ("purpose", "response:purpose"),
            ("runtime_id", "response:runtime_id"),
        ),
    ),
    ("DELETE", "/v1/identities/{id}/keys/{kid}"): Rule(
        "you", "identity_key_revoked", identity="path:id", details=(("kid", "path:kid"),)
    ),
    # --- strands, thoughts and the inbox: `you_run` (ids and seqs, never ciphertext or bodies) -
    ("POST", "/v1/strands"): Rule(
        "you_run",
        "strand_created",
        identity="response:identity_id",
        details=(("strand_id", "response:id"), ("runtime_id", "response:runtime_id")),
    ),
    ("POST", "/v1/strands/{id}/thoughts"): Rule(
        "you_run",
        "thought_written",
        identity="response:identity_id",
        details=(
            ("strand_id", "response:strand_id"),
            ("thought_id", "response:id"),
            ("seq", "response:seq"),
            ("runtime_id", "response:runtime_id"),
        ),
    ),
    ("POST", "/v1/identities/{id}/inbox"): Rule(
        "you_run",
        "inbox_message_arrived",
        identity="path:id",
        details=(("message_id", "response:id"), ("sender", "response:sender")),
    ),
    # --- bonds: `you_bond` ----------------------------------------------------------------------
    ("POST", "/v1/attestations"): Rule(
        "you_bond",
        "attestation_recorded",
        identity="response:agent_id",
        details=(("attestation_id", "response:id"), ("claim", "response:claim")),
        quiet_statuses=_ALREADY,  # 200 is a replay of an attestation already recorded
    ),
}

# Mutating routes that never produce a change, and why. Listed so that the coverage test can
# tell "decided to be silent" from "forgotten".
SILENT: dict[tuple[str, str], str] = {
    ("POST", "/v1/register"): "retired: always 410, never a success",
    ("POST", "/v1/runtimes/{id}/heartbeat"): "a self runtime's loop reporting in changes only "
    "last_seen_at, which the orchestrator's heartbeats do not announce either; the moves it "
    "makes are announced by the route itself (runtime_status_changed), as the worker does",
}

# The keys a stream reports on, in the order of the wake document.
KEYS: tuple[str, ...] = tuple(
    k
    for k in ("you", "you_remember", "you_own", "you_keep", "you_run", "you_bond")
    if k in {rule.key for rule in CHANGES.values()}
)


def _pattern(template: str) -> re.Pattern[str]:
    parts = re.split(r"(\{[A-Za-z_][A-Za-z0-9_]*\})", template)
    regex = "".join(
        f"(?P<{p[1:-1]}>[^/]+)" if p.startswith("{") and p.endswith("}") else re.escape(p)
        for p in parts
    )
    return re.compile(f"^{regex}$")


@dataclass(frozen=True)
class _Compiled:
    method: str
    template: str
    pattern: re.Pattern[str]
    rule: Rule
    # Templates without parameters first, so /v1/identities/from-template never reads as an id.
    literal: bool


_COMPILED: tuple[_Compiled, ...] = tuple(
    sorted(
        (_Compiled(m, t, _pattern(t), r, "{" not in t) for (m, t), r in CHANGES.items()),
        key=lambda c: not c.literal,
    )
)


@dataclass
class Pending:
    """One mutating request that may produce a change: what ``begin`` found, and what the
    middleware captured from the request and the response for ``finish``."""

    method: str
    template: str
    rule: Rule
    path_params: dict[str, str]
    bearer: str | None
    before: JsonObject = field(default_factory=dict)
    request_body: bytearray = field(default_factory=bytearray)
    response_body: bytearray = field(default_factory=bytearray)
    location: str | None = None
    # The bump of the bearer's project's change stamp, run by the request's write transactions
    # inside themselves (db.engine.at_every_write); None when the project is not known yet.
    stamp: AtEveryWrite | None = None
    stamp_project: str | None = None

    @property
    def wants_request_body(self) -> bool:
        return any(s.startswith("body:") for s in _sources(self.rule))

    @property
    def wants_response_body(self) -> bool:
        return any(s.startswith("response:") for s in _sources(self.rule))

    def take_request(self, chunk: bytes) -> None:
        if len(self.request_body) + len(chunk) <= _MAX_CAPTURE:
            self.request_body += chunk

    def take_response(self, chunk: bytes) -> None:
        if len(self.response_body) + len(chunk) <= _MAX_CAPTURE:
            self.response_body += chunk


def _sources(rule: Rule) -> list[str]:
    sources = [source for _, source in rule.details]
    if rule.identity is not None:
        sources.append(rule.identity)
    if rule.project != "bearer":
        sources.append(rule.project)
    return sources


def match(method: str, path: str) -> tuple[_Compiled, dict[str, str]] | None:
    for compiled in _COMPILED:
        if compiled.method != method:
            continue
        found = compiled.pattern.match(path)
        if found:
            return compiled, found.groupdict()
    return None


class ChangeFeed:
    """Builds and publishes the change of each successful mutation; never fails a request."""

    def __init__(self, db: Database, bus: EventBus) -> None:
        self.db = db
        self.bus = bus
        # Bearer hash -> project: a key belongs to one project for ever (revoked or not), so
        # the answer never goes stale, and a mutation costs no second bearer lookup.
        self._projects: OrderedDict[str, str] = OrderedDict()

    async def begin(self, method: str, path: str, headers: Mapping[bytes, bytes]) -> Pending | None:
        if method not in MUTATING or not path.startswith("/v1/"):
            return None
        found = match(method, path)
        if found is None:
            return None
        compiled, params = found
        pending = Pending(method, compiled.template, compiled.rule, params, _bearer(headers))
        # Only a bearer already seen here: looking an unknown one up would cost every request
        # with a wrong bearer a read. Its first mutation is stamped after it, as before.
        known = self._projects.get(hash_bearer(pending.bearer)) if pending.bearer else None
        if known is not None:
            pending.stamp = AtEveryWrite(
                functools.partial(wake_stamps.bump_written, project_id=known)
            )
            pending.stamp_project = known
        if compiled.rule.identity and compiled.rule.identity.startswith("memory:"):
            memory_id = _canonical_uuid(params.get(compiled.rule.identity.split(":", 1)[1]))
            if memory_id is not None:
                try:
                    pending.before["identity"] = await self.db.snapshot(_memory_identity, memory_id)
                except Exception as exc:  # the change loses its identity, the request goes on
                    log.warning("change_lookup_failed", error=type(exc).__name__)
        return pending

    async def finish(self, pending: Pending, status: int) -> None:
        if not 200 <= status < 300 or status in pending.rule.quiet_statuses:
            return
        try:
            change = await self._build(pending)
        except Exception as exc:
            log.warning("change_not_built", route=pending.template, error=type(exc).__name__)
            return
        if change is None:
            log.warning("change_without_project", route=pending.template)
            return
        # Stamped already when a write transaction of the request bumped this very project's
        # stamp in its own commit.
        stamped = (
            pending.stamp is not None
            and pending.stamp.committed
            and pending.stamp_project == change.project_id
        )
        try:
            await self.bus.publish(change, stamped=stamped)
        except Exception as exc:  # the bus degrades on its own; this is the last guard
            log.warning("change_not_published", route=pending.template, error=type(exc).__name__)

    async def _build(self, pending: Pending) -> Change | None:
        rule = pending.rule
        request = _json(pending.request_body) if pending.wants_request_body else None
        response = _json(pending.response_body) if pending.wants_response_body else None

        def read(source: str) -> Any:
            where, _, name = source.partition(":")
            if where == "path":
                return pending.path_params.get(name)
            if where == "body":
                return _dig(request, name)
            if where == "response":
                return _dig(response, name)
            if where == "location":
                return pending.location.rstrip("/").rsplit("/", 1)[-1] if pending.location else None
            if where == "memory":
                return pending.before.get("identity")
            if where == "vault":
                return _vault_identity(pending.path_params.get(name))
            raise ValueError(f"unknown change source {source!r}")

        identity_id = _identity(read(rule.identity)) if rule.identity else None
        if rule.project == "bearer":
            project_id = await self._bearer_project(pending.bearer) if pending.bearer else None
        else:
            project_id = _canonical_uuid(read(rule.project))
        if project_id is None:
            return None
        details: JsonObject = {"identity_id": identity_id}
        for name, source in rule.details:
            value = read(source)
            if value is not None:
                details[name] = value
        at = iso(utcnow())
        assert at is not None
        return Change(project_id, identity_id, rule.key, rule.kind, details, at)

    async def _bearer_project(self, bearer: str) -> str | None:
        key = hash_bearer(bearer)
        project_id = self._projects.get(key)
        if project_id is not None:
            self._projects.move_to_end(key)
            return project_id
        project_id = await self.db.snapshot(_bearer_project, key)
        if project_id is not None:
            self._projects[key] = project_id
            if len(self._projects) > _PROJECT_CACHE:
                self._projects.popitem(last=False)
        return project_id


_PROJECT_CACHE = 4_096  # bearers remembered per process


def _bearer(headers: Mapping[bytes, bytes]) -> str | None:
    scheme, _, value = headers.get(b"authorization", b"").decode("latin-1").partition(" ")
    return value.strip() if scheme.lower() == "bearer" and value.strip() else None


def _json(raw: bytearray) -> Any:
    try:
        return json.loads(raw) if raw else None
    except ValueError:
        return None


def _dig(document: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        if not isinstance(document, dict):
            return None
        document = document.get(part)
    return document if isinstance(document, str | int | float | bool) else None


def _canonical_uuid(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    try:
        return str(uuid.UUID(value))
    except ValueError:
        return None


def _identity(value: Any) -> str | None:
    """An identity reference as sent (UUID in any spelling, or `did:svc:<uuid>`), canonical."""
    if isinstance(value, str) and value.startswith("did:svc:"):
        value = value[len("did:svc:") :]
    return _canonical_uuid(value)


def _vault_identity(name: str | None) -> str | None:
    # The service accepts only the lower-case UUID as a namespace (services/vault.py): a name
    # whose prefix is another spelling is project-level, and so is its change.
    prefix, colon, _ = (name or "").partition(":")
    canonical = _canonical_uuid(prefix) if colon else None
    return canonical if canonical == prefix else None


_BEARER_PROJECT = select(api_keys.c.project_id).where(api_keys.c.key_hash == bindparam("h"))
_MEMORY_IDENTITY = select(memories.c.identity_id).where(memories.c.id == bindparam("id"))


def _bearer_project(conn: Connection, key_hash: str) -> str | None:
    # Revoked keys count too: the request just succeeded with this bearer, and revoking the key
    # it was sent with is one of the mutations that report a change.
    row = conn.execute(_BEARER_PROJECT, {"h": key_hash}).first()
    return str(row.project_id) if row else None


def _memory_identity(conn: Connection, memory_id: str) -> str | None:
    row = conn.execute(_MEMORY_IDENTITY, {"id": memory_id}).first()
    return str(row.identity_id) if row and row.identity_id else None


__all__ = ["CHANGES", "KEYS", "MUTATING", "SILENT", "ChangeFeed", "Pending", "Rule", "match"]
