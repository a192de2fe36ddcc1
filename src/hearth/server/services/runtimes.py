"""Runtimes: provisioning under a custody tier, reads, updates, soft delete, restart, the event
log, the control token, and ``move`` (one state-machine move, applied atomically).

The rules are written down in docs/runtimes.md. In short:

- The custody tier (``mode``) and the bound identity are stamped at provisioning and never
  change (wall 1, ``runtime_custody_explicit``); switching custody needs a new runtime.
- Hosted modes (``bridged``, ``trusted``) need ``llm`` with a vault key and accept only the
  providers in :data:`HOSTED_PROVIDERS`; ``self`` records any provider.
- ``bridged`` needs the bridge's Ed25519 key; the runtime gets a control token, answered once,
  of which only the SHA-256 is kept.
- ``trusted`` needs ``SERVICE_KMS_MASTER_KEY``: the runtime's Ed25519 seed is sealed under a key
  derived from it (``sealing``), bound to the runtime's id and public key.
- Status moves go through :func:`move`: the table of ``runtime_states``, a conditional UPDATE
  on the status the caller saw, and the move's event in the same transaction.

Secrets (the control token, key material) are never in a view, an event or a log line.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import uuid
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from sqlalchemy import Connection, bindparam, func, insert, select, update

from hearth.proofs import b64_encode

from .. import runtime_states
from ..db.engine import utcnow
from ..db.ids import new_id
from ..db.tables import inbox_messages, runtime_events, runtimes, thoughts
from ..errors import DOCS, ApiError, not_found
from ..observability import TRANSITIONS
from . import cursors, identities
from .public_keys import checked_ed25519
from .sealing import associated_data, derive_key, open_sealed, seal
from .times import iso

HOSTED_MODES = ("bridged", "trusted")
HOSTED_PROVIDERS = ("anthropic", "openai")

CONTROL_TOKEN_PREFIX = "hrt_"
# trusted key material: the 32-byte public key in clear (not a secret; it lets a view answer it
# without the master key), then nonce || AES-256-GCM(seed) as ``sealing.seal`` writes it.
_KEY_WRAP_INFO = b"hearth/runtime-key-wrap/v1"
_KEY_AAD_CONTEXT = b"hearth-runtime-key/v1"
PUBLIC_KEY_BYTES = 32
# A runtime's events page by id: the cursor is the last id of the previous page. Every cursor of
# the pattern is a position; one beyond the largest id the column holds (a 32-bit INTEGER on
# PostgreSQL) is the end of the log.
EVENTS_CURSOR_PATTERN = "^[0-9]{1,18}$"
_EVENTS_CURSOR = re.compile(EVENTS_CURSOR_PATTERN)
_LAST_EVENT_ID = 2**31 - 1


# --- refusals -----------------------------------------------------------------------------------


class CustodyRefusal(ApiError):
    """A refusal under wall 1 (``runtime_custody_explicit``): the route records it in the
    chronicle as a ``refusal`` entry after the refused transaction has rolled back."""


class MoveRefused(ApiError):
    """A state move that cannot be applied; 409 with the current and the allowed states."""


class IllegalMove(MoveRefused):
    """The runtime's status is not one the trigger moves from."""


class StaleMove(MoveRefused):
    """The runtime's status changed since the caller read it (another worker moved it)."""


def _deleted(runtime: dict[str, Any], doing: str) -> ApiError:
    return ApiError(
        409,
        "runtime_deleted",
        f"The runtime {runtime['id']} was deleted at {iso(runtime['deleted_at'])}; it is kept for "
        f"audit and cannot be {doing}.",
        details={"runtime_id": runtime["id"], "deleted_at": iso(runtime["deleted_at"])},
        hint="Provision a new runtime with POST /v1/runtimes.",
    )


def _illegal(runtime: dict[str, Any], trigger: str) -> IllegalMove:
    move = runtime_states.move_for(trigger)
    allowed = sorted(move.sources)
    return IllegalMove(
        409,
        "invalid_runtime_state",
        f"The runtime is {runtime['status']}; {trigger} moves a runtime to {move.target} only "
        f"from {', '.join(allowed)}.",
        details={
            "runtime_id": runtime["id"],
            "current_status": runtime["status"],
            "trigger": trigger,
            "allowed_from": allowed,
            "target": move.target,
        },
    )


# --- lookups and views --------------------------------------------------------------------------


_FIND = select(runtimes).where(
    runtimes.c.id == bindparam("id"), runtimes.c.project_id == bindparam("project")
)
_BY_ID = select(runtimes).where(runtimes.c.id == bindparam("id"))


def _uuid_or_none(value: str) -> str | None:
    try:
        return str(uuid.UUID(value))
    except ValueError:
        return None


def _row(conn: Connection, runtime_id: str) -> dict[str, Any]:
    return dict(conn.execute(_BY_ID, {"id": runtime_id}).one()._mapping)


def find(conn: Connection, project_id: str, runtime_id: str) -> dict[str, Any]:
    """The runtime in this project (deleted or not), or 404: another project's runtime does not
    exist here."""
    canonical = _uuid_or_none(runtime_id)
    if canonical is None:
        raise not_found("Runtime")
    row = conn.execute(_FIND, {"id": canonical, "project": project_id}).first()
    if row is None:
        raise not_found("Runtime")
    return dict(row._mapping)


def runtime_public_key(runtime: dict[str, Any]) -> str | None:
    material = runtime["key_material"]
    if material is None:
        return None
    return b64_encode(bytes(material)[:PUBLIC_KEY_BYTES])


def view(
    runtime: dict[str, Any], thought_count_24h: int = 0, latest_thought: datetime | None = None
) -> dict[str, Any]:
    """The public record: no control token (nor its hash), no key material. The last thought is
    the later of the column the loop keeps and the newest stored thought, as in the wake."""
    last_thought = max(
        (t for t in (runtime["last_thought_at"], latest_thought) if t is not None), default=None
    )
    llm = runtime["llm"]
    bridge = runtime["bridge"]
    return {
        "id": runtime["id"],
        "name": runtime["name"],
        "mode": runtime["mode"],
        "identity_id": runtime["identity_id"],
        "llm": (
            {
                "provider": llm["provider"],
                "model": llm["model"],
                "vault_key": llm.get("vault_key"),
            }
            if llm
            else None
        ),
        "bridge": (
            {
                "pubkey": bridge["pubkey"],
                "key_id": bridge["key_id"],
                "advertised_url": bridge.get("advertised_url"),
            }
            if bridge
            else None
        ),
        "region": runtime["region"],
        "metadata": runtime["metadata"],
        "status": runtime["status"],
        "last_error": runtime["last_error"],
        "runtime_public_key": runtime_public_key(runtime),
        "has_control_token": runtime["control_token_hash"] is not None,
        "bridge_connected": bool(runtime["bridge_connected"]),
        "last_seen_at": iso(runtime["last_seen_at"]),
        "last_thought_at": iso(last_thought),
        "thought_count_24h": thought_count_24h,
        "status_changed_at": iso(runtime["status_changed_at"]),
        "created_at": iso(runtime["created_at"]),
        "updated_at": iso(runtime["updated_at"]),
        "deleted": runtime["deleted_at"] is not None,
        "deleted_at": iso(runtime["deleted_at"]),
    }


def _thought_stats(
    conn: Connection, runtime_ids: list[str]
) -> dict[str, tuple[int, datetime | None]]:
    """runtime id -> (thoughts of the last 24 hours, the newest one's time)."""
    if not runtime_ids:
        return {}
    since = utcnow() - timedelta(hours=24)
    rows = conn.execute(
        select(thoughts.c.runtime_id, func.count(), func.max(thoughts.c.created_at))
        .where(thoughts.c.runtime_id.in_(runtime_ids), thoughts.c.created_at >= since)
        .group_by(thoughts.c.runtime_id)
    )
    return {row[0]: (int(row[1]), row[2]) for row in rows}


def _view_one(conn: Connection, runtime: dict[str, Any]) -> dict[str, Any]:
    return view(runtime, *_thought_stats(conn, [runtime["id"]]).get(runtime["id"], (0, None)))


def read(conn: Connection, project_id: str, runtime_id: str) -> dict[str, Any]:
    return _view_one(conn, find(conn, project_id, runtime_id))


def listing(
    conn: Connection,
    project_id: str,
    *,
    status: str | None = None,
    mode: str | None = None,
    identity_ref: str | None = None,
    include_deleted: bool = False,
    cursor: str | None = None,
    limit: int = 50,
) -> cursors.Page:
    """The project's runtimes, newest first; deleted ones only when asked for."""
    conditions: list[Any] = [runtimes.c.project_id == project_id]
    if status is not None:
        conditions.append(runtimes.c.status == status)
    if mode is not None:
        conditions.append(runtimes.c.mode == mode)
    if identity_ref is not None:
        identity = identities.find(conn, project_id, identity_ref)
        conditions.append(runtimes.c.identity_id == identity["id"])
    if not include_deleted:
        conditions.append(runtimes.c.deleted_at.is_(None))
    items, next_cursor = cursors.newest_first(conn, runtimes, conditions, cursor, limit)
    stats = _thought_stats(conn, [r["id"] for r in items])
    return cursors.Page([view(r, *stats.get(r["id"], (0, None))) for r in items], next_cursor)


# --- the event log ------------------------------------------------------------------------------


_APPEND = insert(runtime_events)


def append_event(
    conn: Connection, runtime_id: str, event: str, details: dict[str, Any] | None = None
) -> None:
    """Append one event to the runtime's log. The log is append-only: nothing here (nor
    anywhere else) updates or deletes its rows. Details never carry a secret."""
    if event not in runtime_states.EVENTS:
        raise ValueError(f"unknown runtime event {event!r}")
    conn.execute(
        _APPEND,
        {"runtime_id": runtime_id, "event": event, "details": details, "created_at": utcnow()},
    )


def events(
    conn: Connection, project_id: str, runtime_id: str, *, cursor: str | None, limit: int
) -> cursors.Page:
    """The runtime's events, oldest first; the cursor is the last event id of the page."""
    runtime = find(conn, project_id, runtime_id)
    after = 0
    if cursor is not None:
        # ASCII digits only: str.isdigit() also takes "²", which int() then refuses.
        if not _EVENTS_CURSOR.fullmatch(cursor):
            raise cursors.invalid_cursor()
        after = min(int(cursor), _LAST_EVENT_ID)
    rows = conn.execute(
        select(runtime_events)
        .where(runtime_events.c.runtime_id == runtime["id"], runtime_events.c.id > after)
        .order_by(runtime_events.c.id)
        .limit(limit + 1)
    ).all()
    more = len(rows) > limit
    rows = rows[:limit]
    items = [
        {
            "id": r.id,
            "runtime_id": r.runtime_id,
            "event": r.event,
            "details": r.details,
            "created_at": iso(r.created_at),
        }
        for r in rows
    ]
    return cursors.Page(items, str(rows[-1].id) if more else None)


# --- the state machine --------------------------------------------------------------------------


def move(
    conn: Connection,
    runtime_id: str,
    trigger: str,
    *,
    detail: str | None = None,
    expected: str | None = None,
) -> dict[str, Any]:
    """Apply one move of the table to the runtime and append its event, in the caller's
    transaction; return the updated row.

    ``expected`` is the status the caller saw (a worker that read the row earlier); without it,
    the status read here. The UPDATE is conditional on that status, so of two workers moving the
    same runtime at once exactly one wins and the other gets :class:`StaleMove`. A status the
    trigger does not move from is :class:`IllegalMove`; a deleted runtime does not move.
    ``detail`` is the crash's ``last_error`` (required for ``crash``), and a note in the event
    otherwise.
    """
    step = runtime_states.move_for(trigger)
    row = conn.execute(_BY_ID, {"id": runtime_id}).first()
    if row is None:
        raise not_found("Runtime")
    runtime = dict(row._mapping)
    if runtime["deleted_at"] is not None:
        raise _deleted(runtime, f"moved ({trigger})")
    seen = expected if expected is not None else runtime["status"]
    if seen not in step.sources:
        raise _illegal({**runtime, "status": seen}, trigger)
    if trigger == "crash" and not detail:
        raise ValueError("a crash needs its last_error as detail")
    now = utcnow()
    values: dict[str, Any] = {"status": step.target, "status_changed_at": now, "updated_at": now}
    if step.target == "error":
        values["last_error"] = detail
    elif seen == "error":
        values["last_error"] = None  # last_error is populated in the error state only
    if step.target == "running":
        values["last_work_at"] = now  # the idle timeout counts from here
    if step.target in {"stopped", "error"}:
        values["bridge_connected"] = False
    moved = conn.execute(
        update(runtimes)
        .where(
            runtimes.c.id == runtime_id,
            runtimes.c.status == seen,
            runtimes.c.deleted_at.is_(None),
        )
        .values(**values)
    )
    if moved.rowcount != 1:
        current = conn.execute(_BY_ID, {"id": runtime_id}).one()
        raise StaleMove(
            409,
            "stale_runtime_state",
            f"The runtime was {seen} when read and is {current.status} now: another move won.",
            details={
                "runtime_id": runtime_id,
                "expected_status": seen,
                "current_status": current.status,
                "trigger": trigger,
            },
        )
    details: dict[str, Any] = {"from": seen, "to": step.target, "trigger": trigger}
    if detail:
        details["last_error" if trigger == "crash" else "detail"] = detail
    append_event(conn, runtime_id, step.event, details)
    # Counted once applied in the caller's transaction (a transaction that then fails on the
    # database, which is rare, leaves it counted).
    TRANSITIONS.labels(seen, step.target).inc()
    return {**runtime, **values}


# --- provisioning -------------------------------------------------------------------------------


def _hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def new_control_token() -> tuple[str, str]:
    """(token, its SHA-256 hex): the token is answered once, only the hash is kept."""
    token = CONTROL_TOKEN_PREFIX + secrets.token_urlsafe(32)
    return token, _hash_token(token)


def control_token_matches(runtime: dict[str, Any], token: str) -> bool:
    """Whether ``token`` is the runtime's current control token (constant-time compare)."""
    stored = runtime["control_token_hash"]
    if stored is None or runtime["deleted_at"] is not None:
        return False
    return hmac.compare_digest(stored, _hash_token(token))


def _key_aad(runtime_id: str, public_key: bytes) -> bytes:
    # Binds the sealed seed to its runtime and its public key: it cannot be moved to another row.
    return associated_data(_KEY_AAD_CONTEXT, runtime_id.encode("ascii"), public_key)


def wrap_runtime_key(runtime_id: str, key: Ed25519PrivateKey, master_key: str) -> bytes:
    public = key.public_key().public_bytes_raw()
    sealed = seal(
        derive_key(master_key, _KEY_WRAP_INFO),
        key.private_bytes_raw(),
        _key_aad(runtime_id, public),
    )
    return public + sealed


def unwrap_runtime_key(runtime: dict[str, Any], master_key: str) -> Ed25519PrivateKey:
    """The trusted runtime's signing key, for the hosted loop (SealError when it does not open
    under ``master_key``)."""
    material = bytes(runtime["key_material"])
    public, sealed = material[:PUBLIC_KEY_BYTES], material[PUBLIC_KEY_BYTES:]
    seed = open_sealed(
        derive_key(master_key, _KEY_WRAP_INFO), sealed, _key_aad(runtime["id"], public)
    )
    key = Ed25519PrivateKey.from_private_bytes(seed)
    if key.public_key().public_bytes_raw() != public:
        raise ValueError("the runtime's key material does not match its public key")
    return key


def _check_llm(mode: str, llm: dict[str, Any] | None) -> None:
    if mode not in HOSTED_MODES:
        return
    if llm is None:
        raise ApiError(
            422,
            "llm_required",
            f"A {mode} runtime is hosted: it needs `llm` (provider, model, vault_key).",
            details={"field": "llm", "mode": mode, "providers": list(HOSTED_PROVIDERS)},
        )
    if llm.get("provider") not in HOSTED_PROVIDERS:
        raise ApiError(
            422,
            "unsupported_llm_provider",
            f"Hosted runtimes ({mode}) accept only the providers "
            f"{' and '.join(HOSTED_PROVIDERS)}; {llm.get('provider')!r} is not one of them.",
            details={
                "field": "llm.provider",
                "provider": llm.get("provider"),
                "accepted": list(HOSTED_PROVIDERS),
            },
            hint="Run any other provider on your own machine with a `self` runtime.",
        )
    if not llm.get("model") or not llm.get("vault_key"):
        missing = "llm.model" if not llm.get("model") else "llm.vault_key"
        raise ApiError(
            422,
            "llm_incomplete",
            f"A hosted runtime needs {missing}: the model, and the name of the vault secret "
            "holding the provider key.",
            details={"field": missing},
        )


def _check_advertised_url(url: str | None) -> None:
    if url is None:
        return
    parts = urlsplit(url)
    if parts.scheme != "wss" or not parts.hostname or parts.username or parts.password:
        raise ApiError(
            422,
            "invalid_advertised_url",
            "bridge.advertised_url must be a wss:// URL with a host (and no credentials).",
            details={"field": "bridge.advertised_url"},
        )


def _check_bridge(bridge: dict[str, Any]) -> dict[str, Any]:
    checked_ed25519(bridge["pubkey"], "bridge.pubkey")
    key_id = _uuid_or_none(bridge["key_id"])
    if key_id is None:
        raise ApiError(
            422,
            "invalid_key_id",
            "bridge.key_id must be a UUID.",
            details={"field": "bridge.key_id"},
        )
    _check_advertised_url(bridge.get("advertised_url"))
    return {
        "pubkey": bridge["pubkey"],
        "key_id": key_id,
        "advertised_url": bridge.get("advertised_url"),
    }


def _bound_identity(conn: Connection, project_id: str, ref: str) -> str:
    identity = identities.find(conn, project_id, ref)
    if identity["status"] != "active":
        raise ApiError(
            422,
            "identity_inactive",
            f"The identity {identity['id']} is {identity['status']}: a runtime binds to an "
            "active identity only.",
            details={"field": "identity_id", "identity_status": identity["status"]},
        )
    return str(identity["id"])


def kms_missing() -> CustodyRefusal:
    return CustodyRefusal(
        501,
        "kms_master_key_missing",
        "A trusted runtime needs the service's key-management master key "
        "(SERVICE_KMS_MASTER_KEY), and this service has none configured: nothing was "
        "provisioned.",
        details={"mode": "trusted", "setting": "SERVICE_KMS_MASTER_KEY"},
        hint="Use a bridged runtime (your key stays with you) or a self runtime, or ask the "
        "operator to configure SERVICE_KMS_MASTER_KEY.",
        docs=DOCS,
    )


_INSERT = insert(runtimes)


def create(
    conn: Connection, project_id: str, body: dict[str, Any], *, kms_master_key: str | None
) -> dict[str, Any]:
    """Provision a runtime (status ``provisioned``, event ``provisioned``). Returns its view,
    with ``control_token`` for a bridged runtime: the one time it is ever answered."""
    mode = body["mode"]
    llm = body.get("llm")
    _check_llm(mode, llm)
    bridge = body.get("bridge")
    if mode == "bridged" and bridge is None:
        raise ApiError(
            422,
            "bridge_required",
            "A bridged runtime needs `bridge` with the bridge's Ed25519 `pubkey` and its "
            "`key_id`: the hosted loop asks that bridge for every decryption.",
            details={"field": "bridge", "mode": mode},
        )
    if mode != "bridged" and bridge is not None:
        raise ApiError(
            422,
            "bridge_not_applicable",
            f"`bridge` belongs to bridged custody; a {mode} runtime has no bridge.",
            details={"field": "bridge", "mode": mode},
        )
    identity_id = None
    if body.get("identity_id") is not None:
        identity_id = _bound_identity(conn, project_id, body["identity_id"])
    if mode == "bridged":
        assert bridge is not None
        bridge = _check_bridge(bridge)
    # The configuration is looked at once the body is known to be valid: a bad body is a 422
    # whatever the deployment, and a 501 says only that this deployment cannot hold the key.
    if mode == "trusted" and not kms_master_key:
        raise kms_missing()
    runtime_id = new_id()
    token = token_hash = None
    key_material = None
    if mode == "bridged":
        token, token_hash = new_control_token()
    if mode == "trusted":
        assert kms_master_key
        key_material = wrap_runtime_key(runtime_id, Ed25519PrivateKey.generate(), kms_master_key)
    now = utcnow()
    row = {
        "id": runtime_id,
        "project_id": project_id,
        "identity_id": identity_id,
        "name": body["name"],
        "mode": mode,
        "status": runtime_states.INITIAL_STATE,
        "region": body["region"],
        "llm": dict(llm) if llm else None,
        "bridge": bridge,
        "metadata": body.get("metadata") or {},
        "last_error": None,
        "control_token_hash": token_hash,
        "key_material": key_material,
        "bridge_connected": False,
        "last_seen_at": None,
        "last_thought_at": None,
        "last_work_at": None,
        "status_changed_at": now,
        "lease_owner": None,
        "lease_until": 0,
        "created_at": now,
        "updated_at": now,
        "deleted_at": None,
    }
    conn.execute(_INSERT, row)
    append_event(
        conn,
        runtime_id,
        runtime_states.INITIAL_EVENT,
        {"to": runtime_states.INITIAL_STATE, "mode": mode, "region": row["region"]},
    )
    return {**view(row), "control_token": token}


# --- updates ------------------------------------------------------------------------------------


def _immutable(field: str, current: Any, requested: Any) -> ApiError:
    custody = field == "mode"
    why = (
        "the custody tier is stamped at provisioning; switching custody needs a new runtime "
        "(POST /v1/runtimes)"
        if custody
        else "a runtime's binding is stamped at provisioning; binding another identity, or "
        "switching custody, needs a new runtime (POST /v1/runtimes)"
        if field == "identity_id"
        else "the bridge's key is stamped at provisioning; another bridge key needs a new "
        "runtime (POST /v1/runtimes)"
    )
    cls = CustodyRefusal if field in {"mode", "identity_id"} else ApiError
    return cls(
        422,
        "immutable_field",
        f"{field} cannot change: {why}.",
        details={"field": field, "current": current, "requested": requested},
        hint="Send the current value or leave the field out; provision a new runtime to change it.",
    )


def update_runtime(
    conn: Connection, project_id: str, runtime_id: str, patch: dict[str, Any]
) -> dict[str, Any]:
    """Apply a PATCH (only the fields sent; see models_runtimes.RuntimePatch)."""
    runtime = find(conn, project_id, runtime_id)
    if patch.get("mode") is not None and patch["mode"] != runtime["mode"]:
        raise _immutable("mode", runtime["mode"], patch["mode"])
    if patch.get("identity_id") is not None:
        requested = patch["identity_id"]
        canonical = _uuid_or_none(requested)
        if requested.startswith("did:svc:"):
            canonical = _uuid_or_none(requested.removeprefix("did:svc:"))
        if canonical is None or canonical != runtime["identity_id"]:
            raise _immutable("identity_id", runtime["identity_id"], requested)
    if runtime["deleted_at"] is not None:
        raise _deleted(runtime, "changed")
    values: dict[str, Any] = {}
    if patch.get("name") is not None:
        values["name"] = patch["name"]
    if patch.get("region") is not None:
        values["region"] = patch["region"]
    if patch.get("metadata") is not None:
        values["metadata"] = patch["metadata"]
    if patch.get("llm") is not None:
        sent = {k: v for k, v in patch["llm"].items() if v is not None}
        merged = {**(runtime["llm"] or {}), **sent}
        if not merged.get("provider") or not merged.get("model"):
            raise ApiError(
                422,
                "llm_incomplete",
                "This runtime has no llm yet: send both llm.provider and llm.model.",
                details={"field": "llm"},
            )
        _check_llm(runtime["mode"], merged)
        values["llm"] = merged
    if patch.get("bridge") is not None:
        sent_bridge = patch["bridge"]
        stored = runtime["bridge"]
        if stored is None:
            raise ApiError(
                422,
                "bridge_not_applicable",
                f"`bridge` belongs to bridged custody; a {runtime['mode']} runtime has no bridge.",
                details={"field": "bridge", "mode": runtime["mode"]},
            )
        for name in ("pubkey", "key_id"):
            requested = sent_bridge.get(name)
            if requested is not None and requested != stored[name]:
                raise _immutable(f"bridge.{name}", stored[name], requested)
        if "advertised_url" in sent_bridge:
            _check_advertised_url(sent_bridge["advertised_url"])
            values["bridge"] = {**stored, "advertised_url": sent_bridge["advertised_url"]}
    if values:
        values["updated_at"] = utcnow()
        changed = conn.execute(
            update(runtimes)
            .where(runtimes.c.id == runtime["id"], runtimes.c.deleted_at.is_(None))
            .values(**values)
        )
        if changed.rowcount != 1:
            raise _deleted(_row(conn, runtime["id"]), "changed")
        runtime = {**runtime, **values}
    return _view_one(conn, runtime)


# --- delete, restart, control token -------------------------------------------------------------

_RUNNING = ("starting", "running", "idle")


def soft_delete(conn: Connection, project_id: str, runtime_id: str) -> dict[str, Any]:
    """Keep the record for audit: ``deleted_at`` set, the control token revoked (no bridge can
    connect again), and a running orchestrator stopped (``deprovision``, event ``stopped``).
    Deleting a deleted runtime answers the record again and changes nothing."""
    runtime = find(conn, project_id, runtime_id)
    if runtime["deleted_at"] is not None:
        return _view_one(conn, runtime)
    # A worker may move the runtime between the read and the conditional UPDATE: read again and
    # retry; a few rounds suffice, since each lost round means another move was applied.
    for _ in range(5):
        if runtime["status"] not in _RUNNING:
            break
        try:
            runtime = move(conn, runtime["id"], "deprovision", expected=runtime["status"])
            break
        except StaleMove:
            runtime = find(conn, project_id, runtime_id)
    now = utcnow()
    values = {
        "deleted_at": now,
        "updated_at": now,
        "control_token_hash": None,
        "bridge_connected": False,
        "lease_owner": None,
        "lease_until": 0,
    }
    conn.execute(
        update(runtimes)
        .where(runtimes.c.id == runtime["id"], runtimes.c.deleted_at.is_(None))
        .values(**values)
    )
    return _view_one(conn, {**runtime, **values})


def restart(conn: Connection, project_id: str, runtime_id: str) -> dict[str, Any]:
    """error -> starting; any other status is 409 naming the current and the allowed ones."""
    runtime = find(conn, project_id, runtime_id)
    if runtime["deleted_at"] is not None:
        raise _deleted(runtime, "restarted")
    if not runtime_states.allowed("restart", runtime["status"]):
        raise _illegal(runtime, "restart")
    return _view_one(conn, move(conn, runtime["id"], "restart", expected=runtime["status"]))


def rotate_control_token(conn: Connection, project_id: str, runtime_id: str) -> dict[str, Any]:
    """A new control token for a bridged runtime (answered once; the old one stops working at
    once), and the ``control_token_rotated`` event."""
    runtime = find(conn, project_id, runtime_id)
    if runtime["deleted_at"] is not None:
        raise _deleted(runtime, "given a control token")
    if runtime["mode"] != "bridged":
        raise ApiError(
            409,
            "not_bridged",
            f"Only bridged runtimes have a control token; this one is {runtime['mode']}.",
            details={"runtime_id": runtime["id"], "mode": runtime["mode"]},
        )
    token, token_hash = new_control_token()
    now = utcnow()
    changed = conn.execute(
        update(runtimes)
        .where(runtimes.c.id == runtime["id"], runtimes.c.deleted_at.is_(None))
        .values(control_token_hash=token_hash, updated_at=now)
    )
    if changed.rowcount != 1:
        raise _deleted(_row(conn, runtime["id"]), "changed")
    append_event(conn, runtime["id"], "control_token_rotated", None)
    return {"runtime_id": runtime["id"], "control_token": token, "rotated_at": iso(now)}


# --- self custody: the user's loop reports in over HTTP --------------------------------------

SELF_MODE = "self"
# How the moves a heartbeat makes are worded in their events (no secret, nothing the user sent).
_SELF_DETAIL = {
    "bind": "self: the user's loop reported in",
    "handshake": "self: the user's loop is running",
    "wake": "self: an inbox message is waiting",
    "idle_timeout": "self: no work for the idle timeout",
}
_MOVE_ROUNDS = 5
_PENDING_FOR = (
    select(inbox_messages.c.id)
    .where(
        inbox_messages.c.identity_id == bindparam("identity"),
        inbox_messages.c.status == "pending",
    )
    .limit(1)
)


def not_live(runtime: dict[str, Any]) -> ApiError:
    """A self runtime in ``error`` or ``stopped``: its loop has nothing to report into."""
    return ApiError(
        409,
        "invalid_runtime_state",
        f"The runtime is {runtime['status']}: its loop can report in only when it is "
        "provisioned, starting, running or idle.",
        details={"runtime_id": runtime["id"], "current_status": runtime["status"]},
        hint="Recover a runtime in error with POST /v1/runtimes/{id}/restart; a stopped one "
        "needs a new runtime.",
    )


def self_runtime(conn: Connection, project_id: str, runtime_id: str) -> dict[str, Any]:
    """The project's undeleted ``self`` runtime, for the routes its user-side loop calls: 404
    for another project's, 409 ``runtime_deleted``, 409 ``not_self_custody`` for a hosted one
    (the hosted loop runs in the service and reports in through its lease instead)."""
    runtime = find(conn, project_id, runtime_id)
    if runtime["deleted_at"] is not None:
        raise _deleted(runtime, "run")
    if runtime["mode"] != SELF_MODE:
        raise ApiError(
            409,
            "not_self_custody",
            f"The runtime is {runtime['mode']}: only a self runtime's loop runs on the user's "
            "machine and reports in here.",
            details={"runtime_id": runtime["id"], "mode": runtime["mode"]},
            hint="Provision a runtime with mode `self` to run its loop with `hearth runtime run`.",
        )
    return runtime


def has_pending(conn: Connection, identity_id: str | None) -> bool:
    if identity_id is None:
        return False
    return conn.execute(_PENDING_FOR, {"identity": identity_id}).first() is not None


def self_move(
    conn: Connection, runtime: dict[str, Any], trigger: str, moves: list[dict[str, Any]]
) -> dict[str, Any]:
    """One move of a self runtime (the table's trigger, its event); the move is added to
    ``moves`` for the route to announce once committed."""
    before = runtime["status"]
    moved = move(conn, runtime["id"], trigger, detail=_SELF_DETAIL.get(trigger), expected=before)
    moves.append(
        {
            "runtime_id": runtime["id"],
            "from": before,
            "to": moved["status"],
            "trigger": trigger,
            "event": runtime_states.move_for(trigger).event,
        }
    )
    return moved


def stamp_seen(conn: Connection, runtime_id: str, *, worked: bool = False) -> datetime:
    """``last_seen_at`` (and ``last_work_at`` when the loop did work): every call of a self
    loop is a sign of life."""
    now = utcnow()
    values: dict[str, Any] = {"last_seen_at": now}
    if worked:
        values["last_work_at"] = now
    conn.execute(update(runtimes).where(runtimes.c.id == runtime_id).values(**values))
    return now


def heartbeat(
    conn: Connection, project_id: str, runtime_id: str, *, idle_seconds: float
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A self runtime's loop reports in: ``last_seen_at`` is stamped, and the runtime moves
    through the table (docs/runtimes.md, "Self custody"):

    - provisioned -> starting (``bind``) -> running (``handshake``): the first heartbeat;
      starting -> running after a restart;
    - idle -> running (``wake``) when a message is waiting for the identity;
    - running -> idle (``idle_timeout``) when nothing was done for ``idle_seconds`` and nothing
      is waiting.

    Returns the view and the moves made. A move lost to a concurrent one (another heartbeat,
    an inbox post waking the runtime) is read again and reconsidered, a few rounds at most.
    """
    runtime = self_runtime(conn, project_id, runtime_id)
    moves: list[dict[str, Any]] = []
    for _ in range(_MOVE_ROUNDS):
        try:
            runtime = _heartbeat_moves(conn, runtime, idle_seconds, moves)
            break
        except StaleMove:
            runtime = self_runtime(conn, project_id, runtime_id)
    stamp_seen(conn, runtime["id"])
    return _view_one(conn, _row(conn, runtime["id"])), moves


def _heartbeat_moves(
    conn: Connection, runtime: dict[str, Any], idle_seconds: float, moves: list[dict[str, Any]]
) -> dict[str, Any]:
    status = runtime["status"]
    if status in {"stopped", "error"}:
        raise not_live(runtime)
    if status == "provisioned":
        runtime = self_move(conn, runtime, "bind", moves)
    if runtime["status"] == "starting":
        return self_move(conn, runtime, "handshake", moves)
    waiting = has_pending(conn, runtime["identity_id"])
    if runtime["status"] == "idle" and waiting:
        return self_move(conn, runtime, "wake", moves)
    if runtime["status"] == "running" and not waiting:
        last_work = runtime["last_work_at"] or runtime["status_changed_at"]
        if utcnow() - last_work >= timedelta(seconds=idle_seconds):
            return self_move(conn, runtime, "idle_timeout", moves)
    return runtime


__all__ = [
    "HOSTED_MODES",
    "HOSTED_PROVIDERS",
    "CustodyRefusal",
    "IllegalMove",
    "MoveRefused",
    "StaleMove",
    "append_event",
    "control_token_matches",
    "create",
    "events",
    "find",
    "has_pending",
    "heartbeat",
    "kms_missing",
    "listing",
    "move",
    "not_live",
    "read",
    "restart",
    "rotate_control_token",
    "self_move",
    "self_runtime",
    "soft_delete",
    "stamp_seen",
    "unwrap_runtime_key",
    "update_runtime",
    "view",
    "wrap_runtime_key",
]
