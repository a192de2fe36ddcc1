"""POST /v1/identities/import: an identity's life, exported elsewhere, recreated here.

The structure is checked before anything is written: the CAR's framing and every block's hash,
``verify_life`` with the service's own X25519 key (every document and signature back to the
head's root key, the index complete, each data set's grant for this service unwrapping to its
content key, the index object opened), the key proof (fresh, identity-import/v1 over the head's
CID and this service's X25519 key, signed by the head's root key). The writes are one
transaction: the single-use claim of the proof first (a replay is refused), then the root and
the identity id must be new here (409), then every record, each data set opened once, as it is
written (every chunk authenticated by AES-GCM, its records counted against the index). A
refusal at any point, a chunk that does not open or a count that differs included, rolls the
whole transaction back, so a refused import writes nothing.

The identity keeps its id (so its DID, and the agent_id every sponsor statement signs), its
immutable root and box keys, and every memory, chronicle entry, strand, thought, wallet and
ledger entry keeps its id, so memory attestations and sponsor statements still verify; its
runtimes come back ``stopped`` with their event logs (no think loop starts here by itself),
and its registered keys, published templates and key backup come too. What names the old
service is not copied: the bearer key ids of provenance (keys of another service), a runtime's
control token, hosted key material and lease. Where the identity came from is kept in its
metadata, ``imported_from`` (DID, service, head CID, time, origin).
"""

from __future__ import annotations

import contextlib
import hashlib
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import IO, Any

import pybase64
from sqlalchemy import Connection, select
from sqlalchemy.exc import IntegrityError

from hearth.adds import AddsError, b64url_decode
from hearth.adds.car import CarError, CarIndex
from hearth.proofs import EncodingError, b64_encode, parse_timestamp, verify_digest
from hearth.proofs.key_types import X25519PrivateKey
from hearth.proofs.life import DATA_SETS, LifeProblem, LifeReport, verify_life
from hearth.proofs.life_import import LifeOpenError, LifeRecord, import_digest, life_records

from ..db import direct, search_index
from ..db.engine import utcnow
from ..db.ids import new_id
from ..db.tables import (
    attestations,
    backups,
    chronicle,
    identities,
    identity_keys,
    inbox_messages,
    ledger,
    memories,
    memory_attestations,
    runtime_events,
    runtimes,
    strands,
    templates,
    thoughts,
    wallets,
)
from ..errors import ApiError
from ..json_types import JsonObject
from ..runtime_states import EVENTS
from . import single_use
from .freshness import require_fresh
from .identities import FORMS, NewIdentity, authority_view, create
from .templates import LISTED

PROBLEMS_SHOWN = 20  # a refusal lists this many of the archive's problems

# The order the data sets are written in: runtimes before what links to them (strands,
# thoughts, an inbox message's claim, a registered key), the wallet before a priced template.
IMPORT_ORDER = (
    "identity",
    "expression",
    "runtimes",
    *(n for n in DATA_SETS if n not in ("identity", "expression", "runtimes")),
)
VISIBILITIES = ("private", "project", "public")
INSERT_BATCH = 500  # rows sent in one executemany (a few MB of thoughts at most)
# Each kind of record and the writer's method for it; a kind not here is not recreated (the
# pulse: it is derived from the rest).
HANDLERS = {
    kind: f"_{kind}"
    for kind in (
        "profile",
        "identity_key",
        "expression",
        "memory",
        "attestation",
        "chronicle",
        "strand",
        "thought",
        "runtime_event",
        "wallet",
        "ledger_entry",
        "template",
        "inbox_message",
        "key_backup",
    )
} | {"runtime": "_runtime_record"}


@dataclass(frozen=True)
class ImportProof:
    timestamp: str | None
    signature: str | None


@dataclass(frozen=True)
class Verified:
    """An archive that holds: its blocks, report, and the root key (standard base64)."""

    blocks: CarIndex
    report: LifeReport
    root_public_key: str
    now: int
    box_key: X25519PrivateKey


def verify(
    car: IO[bytes],
    proof: ImportProof,
    *,
    box_key: X25519PrivateKey,
    box_public: str,
    freshness_ms: int,
) -> Verified:
    """Every check that reads no database: 422 for a missing, stale or wrong proof or an
    archive that does not verify with this service's key."""
    if not proof.timestamp or not proof.signature:
        raise ApiError(
            422,
            "import_proof_required",
            "An import needs a key proof: X-Hearth-Import-Timestamp and "
            "X-Hearth-Import-Signature (identity-import/v1 by the identity's root key).",
            hint="hearth import signs one with the home's root key.",
        )
    require_fresh(
        proof.timestamp,
        freshness_ms,
        field="X-Hearth-Import-Timestamp",
        invalid="invalid_timestamp",
        stale="import_proof_stale",
        hint="Sign a new proof with the current time; check this machine's clock.",
    )
    try:
        # The spool is this request's own: its blocks, hashed once here, are not hashed again
        # each time they are read (verifying, then writing).
        blocks = CarIndex.scan(car, recheck=False)  # type: ignore[arg-type]
    except CarError as exc:
        raise ApiError(422, "import_not_car", f"The body is not a CAR v1 file: {exc}") from None
    report = LifeReport()
    for problem in blocks.problems:
        report.refuse(problem.code, f"{problem.message} (at byte {problem.offset})", problem.cid)
    now = int(time.time())
    # The data sets are opened once, as they are written (``write``), not here as well.
    verify_life(blocks, now=now, box_key=box_key, report=report, open_data=False)
    if not report.ok:
        raise _invalid(report.problems)
    assert report.root is not None
    assert report.root_public_key is not None
    try:
        root = b64url_decode(report.root_public_key)
    except (AddsError, ValueError):
        raise ApiError(422, "import_invalid", "The head's key is not a key.") from None
    digest = import_digest(report.root, box_public, proof.timestamp)
    if not verify_digest(root, proof.signature, digest):
        raise ApiError(
            422,
            "import_proof_invalid",
            "X-Hearth-Import-Signature does not verify: it must sign identity-import/v1 (the "
            "head's CID, this service's X25519 key, the timestamp) with the head's root key.",
        )
    return Verified(blocks, report, b64_encode(root), now, box_key)


def write(
    conn: Connection, verified: Verified, project_id: str, proof: ImportProof, name: str | None
) -> JsonObject:
    """Every write, in the caller's transaction; raises (and so rolls back) on a refusal."""
    report = verified.report
    assert proof.signature is not None
    signature_hash = hashlib.sha256(proof.signature.encode("ascii")).digest()
    if single_use.claim_all(conn, [("import_proof", signature_hash)]):
        raise ApiError(409, "import_proof_used", "This import proof was already used.")
    identity_id = str(report.identity_id)
    taken = conn.execute(
        select(identities.c.id).where(
            (identities.c.root_public_key == verified.root_public_key)
            | (identities.c.id == identity_id)
        )
    ).first()
    if taken is not None:
        raise ApiError(
            409,
            "identity_exists",
            "This service already holds an identity with this root key (or this id).",
            hint="An identity lives on one service at a time: move it away from there first.",
        )
    records = life_records(
        verified.blocks, report, verified.box_key, now=verified.now, order=IMPORT_ORDER
    )
    writer = _Writer(conn, project_id, identity_id)
    try:
        identity = writer.identity(next(records), verified, name)
        with _search_index_after(conn):
            counts = writer.rest(records)
    except IntegrityError:
        # An id of the archive (a memory, a strand, a wallet...) is taken here already; the
        # transaction rolls back whole.
        raise ApiError(
            409,
            "import_conflict",
            "A record of the archive has an id this service already holds.",
        ) from None
    except LifeOpenError as exc:
        # Found only as the data set was opened: the rows written so far roll back with it.
        raise _invalid([LifeProblem(exc.code, exc.message)]) from None
    except (KeyError, TypeError, ValueError, StopIteration) as exc:
        # Signed by the root key, yet not records this service reads: refused, nothing kept.
        raise ApiError(
            422, "import_invalid", f"A record of the archive is malformed ({type(exc).__name__})."
        ) from None
    return {"authority": authority_view(identity), "records": counts, "root": report.root}


def _invalid(problems: list[LifeProblem]) -> ApiError:
    return ApiError(
        422,
        "import_invalid",
        f"The archive does not verify: {len(problems)} problems.",
        details={"problems": [p.to_json() for p in problems[:PROBLEMS_SHOWN]]},
        hint="Check it with hearth export verify; grant this service's X25519 key "
        "(GET /public/provider/box-key) with hearth export add-reader.",
    )


def _when(value: object) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return parse_timestamp(value).astimezone(UTC).replace(tzinfo=None)
    except EncodingError:
        return None


def _when_or_now(value: object) -> datetime:
    return _when(value) or utcnow()


@contextlib.contextmanager
def _search_index_after(conn: Connection) -> Iterator[None]:
    """On SQLite, the imported memories are put in the full-text index after they are all
    written, in two statements, instead of by the insert trigger row by row (a third of the
    memories' cost); in this transaction, so nothing else ever sees the trigger missing
    (``search_index.bulk_insert_statements``). PostgreSQL keeps its trigger."""
    if conn.dialect.name != "sqlite":
        yield
        return
    drop, since, index, create = search_index.bulk_insert_statements()
    row = conn.exec_driver_sql(since).one()
    conn.exec_driver_sql(drop)
    yield
    for statement in index:
        conn.exec_driver_sql(statement, {"memories": row[0], "rows": row[1]})
    conn.exec_driver_sql(create)


# One INSERT per table, made once: ``direct.run_many`` keeps its compiled plan by the statement.
_INSERTS: dict[str, Any] = {}


def _insert_of(table: Any) -> Any:
    statement = _INSERTS.get(table.name)
    if statement is None:
        statement = _INSERTS[table.name] = table.insert()
    return statement


class _Writer:
    """The rows of one import, record by record (a record is never held after its row)."""

    def __init__(self, conn: Connection, project_id: str, identity_id: str) -> None:
        self.conn = conn
        self.project_id = project_id
        self.identity_id = identity_id
        self.counts: dict[str, int] = {}
        self.wallet_id: str | None = None
        self.memories: set[str] = set()
        self.name: str | None = None
        self.imported_from: JsonObject = {}
        # Runtimes recreated here (few): only their ids are links; the runtime whose event log
        # is being read, closed with its ``stopped`` event; registered keys, written after the
        # runtimes they may name (few: an identity's devices and runtimes).
        self.runtime_ids: set[str] = set()
        self.runtime_open: str | None = None
        self.keys: list[JsonObject] = []
        self.root_kid = "primary"
        self.pending: list[JsonObject] = []
        self.pending_table: Any = None
        self.runtime_status = ""

    def identity(self, first: LifeRecord, verified: Verified, name: str | None) -> Any:
        _, kind, record = first
        if kind != "identity":
            raise ApiError(
                422, "import_invalid", f"The identity data set does not start with it ({kind})."
            )
        root = str(record.get("root_public_key"))
        self.imported_from.update(
            did=record.get("did"),
            service=record.get("service"),
            head=verified.report.root,
            imported_at=datetime.now(UTC).isoformat(),
        )
        if root != verified.root_public_key or record.get("identity_id") != self.identity_id:
            raise ApiError(
                422, "import_invalid", "The identity record is not the archive's identity."
            )
        row = create(
            self.conn,
            NewIdentity(
                project_id=self.project_id,
                name=name or "imported",
                origin="import",
                root_public_key=root,
                box_public_key=str(record.get("box_public_key")),
                metadata={"imported_from": self.imported_from},
            ),
            identity_id=self.identity_id,
        )
        self.counts["identity"] = 1
        self.name = name
        return row

    def rest(self, records: Iterator[LifeRecord]) -> dict[str, int]:
        # Looked up once, not per record (hundreds of thousands of them).
        handlers = {kind: getattr(self, name) for kind, name in HANDLERS.items()}
        counts = self.counts
        for _, kind, record in records:
            handler = handlers.get(kind)
            if handler is None:
                continue  # a kind this service does not recreate (docs/export.md)
            if self.runtime_open is not None and kind != "runtime_event":
                self._close_runtime()
            handler(record)
            counts[kind] = counts.get(kind, 0) + 1
        self._close_runtime()
        for key in self.keys:
            self._insert(identity_keys, {**key, "runtime_id": self._runtime(key["runtime_id"])})
        self._flush()
        return self.counts

    def _insert(self, table: Any, row: JsonObject) -> None:
        """Rows of one table in a row (a data set's memories, a strand's thoughts) are sent
        together, ``INSERT_BATCH`` at a time, in the order they came (a row that another names
        is always written first)."""
        if table is not self.pending_table:
            self._flush()
            self.pending_table = table
        self.pending.append(row)
        if len(self.pending) >= INSERT_BATCH:
            self._flush()

    def _flush(self) -> None:
        if self.pending:
            # The driver's executemany (on SQLite without SQLAlchemy's per-row work, with the
            # columns' own conversions): a tenth of the service's CPU in an import went there.
            direct.run_many(self.conn, _insert_of(self.pending_table), self.pending)
            self.pending = []

    def _profile(self, record: JsonObject) -> None:
        """The identity as the old service showed it: its name (unless the import names it),
        level, trust score, form, capabilities, language, sponsor, ``elevated_at``, visibility,
        runtime settings, metadata (with ``imported_from`` added), parent, key id and times.
        Its status is this service's (active), its origin ``import`` (the old one is kept in
        ``imported_from``)."""
        values: JsonObject = {}
        for name, limit in (("language", 35), ("sponsor_did", 64), ("parent_identity_id", 36)):
            if isinstance(record.get(name), str):
                values[name] = record[name][:limit]
        if isinstance(record.get("kid"), str) and 0 < len(record["kid"]) <= 64:
            values["kid"] = self.root_kid = record["kid"]
        for name in ("elevated_at", "key_created_at", "created_at"):
            if _when(record.get(name)) is not None:
                values[name] = _when(record.get(name))
        if record.get("expression_visibility") in VISIBILITIES:
            values["expression_visibility"] = record["expression_visibility"]
        if isinstance(record.get("runtime"), dict):
            values["runtime"] = record["runtime"]
        if isinstance(record.get("origin"), str):
            self.imported_from["origin"] = record["origin"]
        metadata = record.get("metadata")
        kept = dict(metadata) if isinstance(metadata, dict) else {}
        kept.pop("moved_to", None)  # the old service's record of the move, not this one's
        values["metadata"] = {**kept, "imported_from": self.imported_from}
        if self.name is None and isinstance(record.get("name"), str):
            values["name"] = record["name"][:200]
        if isinstance(record.get("level"), int):
            values["level"] = record["level"]
        if isinstance(record.get("trust_score"), int | float):
            values["trust_score"] = float(record["trust_score"])
        if record.get("form") in FORMS:
            values["form"] = record["form"]
        capabilities = record.get("capabilities")
        if isinstance(capabilities, list) and all(isinstance(c, str) for c in capabilities):
            values["capabilities"] = capabilities
        if values:
            self._flush()
            self.conn.execute(
                identities.update().where(identities.c.id == self.identity_id).values(**values)
            )

    def _expression(self, record: JsonObject) -> None:
        declared = {k: record.get(k) for k in ("register", "walls", "subagents", "wake_text")}
        declared_src = record.get("declared")
        if isinstance(declared_src, dict):
            declared = {k: declared_src.get(k) for k in declared}
        self._flush()
        self.conn.execute(
            identities.update()
            .where(identities.c.id == self.identity_id)
            .values(expression=declared)
        )

    def _memory(self, record: JsonObject) -> None:
        memory_id = str(record["id"])
        if memory_id in self.memories:
            return  # a version listed twice (a chain's history repeats its head)
        self.memories.add(memory_id)
        provenance = record.get("provenance") or {}
        self._insert(
            memories,
            {
                "id": memory_id,
                "project_id": self.project_id,
                "identity_id": self.identity_id if record.get("agent_id") else None,
                "tier": record["tier"],
                "key": record.get("key"),
                "content": record["content"],
                "created_at": _when_or_now(record.get("created_at")),
                "elevated_at": _when(record.get("elevated_at")),
                "expression_patch": record.get("expression_patch"),
                "supersedes": record.get("supersedes"),
                "superseded_by": record.get("superseded_by"),
                "superseded_at": _when(record.get("superseded_at")),
                "deleted_at": _when(record.get("deleted_at")),
                "channel": provenance.get("channel") or "import",
                # The bearer key of the old service means nothing here.
                "api_key_id": None,
                "runtime_id": provenance.get("runtime_id"),
                "inbox_message_id": provenance.get("inbox_message_id"),
                "signed_by": provenance.get("signed_by"),
                "untrusted": bool(record.get("untrusted")),
                "confirmed_at": _when(record.get("confirmed_at")),
            },
        )
        for position, attestation in enumerate(record.get("attestations") or []):
            self._insert(
                memory_attestations,
                {
                    "id": _derived_id(memory_id, position),
                    "memory_id": memory_id,
                    "position": position,
                    "attester_did": attestation["attester_did"],
                    "signing_key_id": attestation["signing_key_id"],
                    "public_key": attestation["public_key"],
                    "signature": attestation["signature"],
                    "created_at": _when_or_now(attestation.get("created_at")),
                },
            )

    def _attestation(self, record: JsonObject) -> None:
        self._insert(
            attestations,
            {
                "id": record["id"],
                "project_id": self.project_id,
                "subject_identity_id": self.identity_id,
                "attester_did": record["attester_did"],
                "attester_identity_id": None,  # an identity of the old service
                "signing_key_id": record["signing_key_id"],
                "public_key": record["public_key"],
                "context": record["context"],
                "claim": record["claim"],
                "evidence": {
                    "initial_credits": record.get("initial_credits", 0),
                    "evidence": record.get("evidence"),
                },
                "signature": record["signature"],
                "created_at": _when_or_now(record.get("created_at")),
            },
        )

    def _chronicle(self, record: JsonObject) -> None:
        self._insert(
            chronicle,
            {
                "id": record["id"],
                "project_id": self.project_id,
                "identity_id": self.identity_id if record.get("agent_id") else None,
                "kind": record["kind"],
                "text": record["text"],
                "details": record.get("details"),
                "created_at": _when_or_now(record.get("created_at")),
            },
        )

    def _strand(self, record: JsonObject) -> None:
        self._insert(
            strands,
            {
                "id": record["id"],
                "project_id": self.project_id,
                "identity_id": self.identity_id,
                "runtime_id": self._runtime(record.get("runtime_id")),
                "name": record["name"],
                "next_seq": record["next_seq"],
                "created_at": _when_or_now(record.get("created_at")),
            },
        )

    def _thought(self, record: JsonObject) -> None:
        self._insert(
            thoughts,
            {
                "id": record["id"],
                "strand_id": record["strand_id"],
                "project_id": self.project_id,
                "runtime_id": self._runtime(record.get("runtime_id")),
                "seq": record["seq"],
                "ciphertext": _bytes(record["ciphertext"]),
                "nonce": _bytes(record["nonce"]),
                "signature": record.get("signature"),
                "signing_key_id": record.get("signing_key_id"),
                "created_at": _when_or_now(record.get("created_at")),
            },
        )

    def _wallet(self, record: JsonObject) -> None:
        """The wallet and its history, but not its balance: credits are the old service's to
        give, and importing them would mint them here (an export imported twice would pay
        twice). The wallet opens empty, and one entry, ``import_left_behind``, takes the old
        balance back out, so the ledger still sums to the balance (docs/export.md)."""
        self.wallet_id = str(record["id"])
        self._insert(
            wallets,
            {
                "id": self.wallet_id,
                "project_id": self.project_id,
                "identity_id": self.identity_id,
                "name": record["name"],
                "currency": record["currency"],
                "balance": 0,
                "created_at": _when_or_now(record.get("created_at")),
            },
        )
        balance = record["balance"]
        if isinstance(balance, int) and balance:
            self._insert(
                ledger,
                {
                    "id": new_id(),
                    "wallet_id": self.wallet_id,
                    "amount": -balance,
                    "reason": "import_left_behind",
                    "created_at": utcnow(),
                },
            )

    def _ledger_entry(self, record: JsonObject) -> None:
        if self.wallet_id is None:
            raise ApiError(422, "import_invalid", "A ledger entry comes before its wallet.")
        self._insert(
            ledger,
            {
                "id": record["id"],
                "wallet_id": self.wallet_id,
                "amount": record["amount"],
                "reason": record["reason"],
                "created_at": _when_or_now(record.get("created_at")),
            },
        )

    def _inbox_message(self, record: JsonObject) -> None:
        self._insert(
            inbox_messages,
            {
                "id": record["id"],
                "project_id": self.project_id,
                "identity_id": self.identity_id,
                "sender": record["sender"],
                "body": record["body"],
                "status": record["status"],
                "taken_by": self._runtime(record.get("taken_by")),
                "taken_at": _when(record.get("taken_at")),
                "done_at": _when(record.get("done_at")),
                "created_at": _when_or_now(record.get("created_at")),
            },
        )

    # -- runtimes, keys, templates, the key backup ---------------------------------------------

    def _runtime(self, runtime_id: object) -> str | None:
        """A link to a runtime, kept when the runtime came along (one of the identity's)."""
        return (
            runtime_id if isinstance(runtime_id, str) and runtime_id in self.runtime_ids else None
        )

    def _runtime_record(self, record: JsonObject) -> None:
        """A runtime comes back ``stopped`` (a deleted one deleted): the new service never starts
        a think loop by itself for it. Its control token, hosted key material and lease were
        the old service's and stay there; its event log follows, then one ``stopped`` event
        saying it was imported (docs/export.md)."""
        runtime_id = str(record["id"])
        if record["mode"] not in ("self", "bridged", "trusted"):
            raise ValueError("runtime mode")
        now = utcnow()
        self._insert(
            runtimes,
            {
                "id": runtime_id,
                "project_id": self.project_id,
                "identity_id": self.identity_id,
                "name": record["name"],
                "mode": record["mode"],
                "status": "stopped",
                "region": record["region"],
                "llm": record.get("llm"),
                "bridge": record.get("bridge"),
                "metadata": record.get("metadata") or {},
                "last_error": record.get("last_error"),
                "control_token_hash": None,
                "key_material": None,
                "bridge_connected": False,
                "last_seen_at": _when(record.get("last_seen_at")),
                "last_thought_at": _when(record.get("last_thought_at")),
                "last_work_at": None,
                "status_changed_at": now,
                "lease_owner": None,
                "lease_until": 0,
                "created_at": _when_or_now(record.get("created_at")),
                "updated_at": now,
                "deleted_at": now if record.get("deleted") else None,
            },
        )
        self.runtime_ids.add(runtime_id)
        self.runtime_open = runtime_id
        self.runtime_status = str(record.get("status"))

    def _runtime_event(self, record: JsonObject) -> None:
        if self.runtime_open is None:
            raise ApiError(422, "import_invalid", "A runtime event comes before its runtime.")
        if record["event"] not in EVENTS:
            raise ValueError("runtime event")
        self._event(self.runtime_open, record["event"], record.get("details"), record)

    def _event(self, runtime_id: str, event: str, details: object, record: JsonObject) -> None:
        self._insert(
            runtime_events,
            {
                "runtime_id": runtime_id,
                "event": event,
                "details": details if isinstance(details, dict) else None,
                "created_at": _when_or_now(record.get("created_at")),
            },
        )

    def _close_runtime(self) -> None:
        if self.runtime_open is not None:
            details = {"reason": "imported", "status_before": self.runtime_status}
            self._event(self.runtime_open, "stopped", {**details, **self.imported_from}, {})
            self.runtime_open = None

    def _identity_key(self, record: JsonObject) -> None:
        """A registered key (a device's, a runtime's), written once the runtimes are; the root
        key is the identity's own (kid ``primary``), not a row."""
        if record["kid"] == self.root_kid or record.get("purpose") == "root":
            return
        self.keys.append(
            {
                "id": str(uuid.uuid5(uuid.UUID(self.identity_id), str(record["kid"]))),
                "identity_id": self.identity_id,
                "kid": str(record["kid"]),
                "public_key": str(record["public_key"]),
                "purpose": str(record["purpose"]),
                "runtime_id": record.get("runtime_id"),
                "created_at": _when_or_now(record.get("created_at")),
                "revoked_at": _when(record.get("revoked_at")),
            }
        )

    def _template(self, record: JsonObject) -> None:
        """A template the project published, listed here by the importing project; a priced
        one pays into the imported wallet."""
        expression = record["expression"]
        if not isinstance(expression, dict) or not isinstance(record["price"], int):
            raise ValueError("template")
        self._insert(
            templates,
            {
                "id": record["id"],
                "name": record["name"],
                "description": record["description"],
                "expression": expression,
                "price": record["price"],
                "publisher_project_id": self.project_id,
                "publisher_wallet_id": self.wallet_id if record["price"] > 0 else None,
                "status": LISTED,
                "created_at": _when_or_now(record.get("created_at")),
            },
        )

    def _key_backup(self, record: JsonObject) -> None:
        """The encrypted key backup, as sealed (only its passphrase opens it)."""
        self._insert(
            backups,
            {
                "id": record["id"],
                "project_id": self.project_id,
                "agent_id": self.identity_id,
                "blob_base64": str(record["blob_base64"]),
                "key_derivation": str(record["key_derivation"]),
                "label": record.get("label"),
                "created_at": _when_or_now(record.get("created_at")),
            },
        )


def _derived_id(memory_id: str, position: int) -> str:
    """A memory attestation's row id (the export does not carry it): derived, so an import is
    deterministic."""
    return str(uuid.uuid5(uuid.UUID(memory_id), str(position)))


def _bytes(value: object) -> bytes:
    # Strict as b64decode(validate=True) (no character outside the alphabet, padding as it
    # must be), in SIMD code: binascii's strict decode was a tenth of an import's CPU, 0.25 s
    # for 31,000 thoughts against pybase64's 0.02 s (docs/performance.md).
    return pybase64.b64decode(str(value), validate=True)
