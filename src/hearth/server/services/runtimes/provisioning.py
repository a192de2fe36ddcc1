"""What a runtime is made of: provisioning under a custody tier (``create``) and the changes a
PATCH may make (``update_runtime``).

- The custody tier (``mode``) and the bound identity are stamped at provisioning and never
  change (wall 1, ``runtime_custody_explicit``); switching custody needs a new runtime.
- Hosted modes (``bridged``, ``trusted``) need ``llm`` with a vault key and accept only the
  providers in :data:`HOSTED_PROVIDERS`; ``self`` records any provider.
- ``bridged`` needs the bridge's Ed25519 key; the runtime gets a control token, answered once,
  of which only the hash is kept.
- ``trusted`` needs ``SERVICE_KMS_MASTER_KEY``: the runtime's Ed25519 seed is sealed under a key
  derived from it, bound to the runtime's id and public key (``proofs.runtime_keys``).
"""

from __future__ import annotations

from dataclasses import replace
from urllib.parse import urlsplit

from sqlalchemy import Connection, insert, update

from hearth.proofs import runtime_keys
from hearth.proofs.key_types import Ed25519PrivateKey

from ... import runtime_states
from ...canon import HOSTED_MODES, CustodyMode
from ...db.engine import utcnow
from ...db.ids import new_id
from ...db.rows import RuntimeRow
from ...db.tables import runtimes
from ...errors import ApiError
from ...json_types import JsonObject
from .. import identities
from ..public_keys import checked_ed25519
from .events import append_event
from .records import canonical_uuid, find, row_by_id, view, view_one
from .refusals import immutable_field, kms_missing, runtime_deleted

__all__ = ["HOSTED_PROVIDERS", "create", "update_runtime"]

HOSTED_PROVIDERS = ("anthropic", "openai")


def _check_llm(mode: CustodyMode, llm: JsonObject | None) -> None:
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


def _check_bridge(bridge: JsonObject) -> JsonObject:
    checked_ed25519(bridge["pubkey"], "bridge.pubkey")
    key_id = canonical_uuid(bridge["key_id"])
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
    if identity.status != "active":
        raise ApiError(
            422,
            "identity_inactive",
            f"The identity {identity.id} is {identity.status}: a runtime binds to an "
            "active identity only.",
            details={"field": "identity_id", "identity_status": identity.status},
        )
    return str(identity.id)


_INSERT = insert(runtimes)


def create(
    conn: Connection, project_id: str, body: JsonObject, *, kms_master_key: str | None
) -> JsonObject:
    """Provision a runtime (status ``provisioned``, event ``provisioned``). Returns its view,
    with ``control_token`` for a bridged runtime: the one time it is ever answered."""
    mode: CustodyMode = body["mode"]
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
        token, token_hash = runtime_keys.new_control_token()
    if mode == "trusted":
        assert kms_master_key
        key_material = runtime_keys.wrap_runtime_key(
            runtime_id, Ed25519PrivateKey.generate(), kms_master_key
        )
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
    return {**view(RuntimeRow.of(row)), "control_token": token}


def update_runtime(
    conn: Connection, project_id: str, runtime_id: str, patch: JsonObject
) -> JsonObject:
    """Apply a PATCH (only the fields sent; see models_runtimes.RuntimePatch)."""
    runtime = find(conn, project_id, runtime_id)
    if patch.get("mode") is not None and patch["mode"] != runtime.mode:
        raise immutable_field("mode", runtime.mode, patch["mode"])
    if patch.get("identity_id") is not None:
        requested = patch["identity_id"]
        canonical = canonical_uuid(requested)
        if requested.startswith("did:svc:"):
            canonical = canonical_uuid(requested.removeprefix("did:svc:"))
        if canonical is None or canonical != runtime.identity_id:
            raise immutable_field("identity_id", runtime.identity_id, requested)
    if runtime.deleted_at is not None:
        raise runtime_deleted(runtime, "changed")
    values: JsonObject = {}
    if patch.get("name") is not None:
        values["name"] = patch["name"]
    if patch.get("region") is not None:
        values["region"] = patch["region"]
    if patch.get("metadata") is not None:
        values["metadata"] = patch["metadata"]
    if patch.get("llm") is not None:
        sent = {k: v for k, v in patch["llm"].items() if v is not None}
        merged = {**(runtime.llm or {}), **sent}
        if not merged.get("provider") or not merged.get("model"):
            raise ApiError(
                422,
                "llm_incomplete",
                "This runtime has no llm yet: send both llm.provider and llm.model.",
                details={"field": "llm"},
            )
        _check_llm(runtime.mode, merged)
        values["llm"] = merged
    if patch.get("bridge") is not None:
        sent_bridge = patch["bridge"]
        stored = runtime.bridge
        if stored is None:
            raise ApiError(
                422,
                "bridge_not_applicable",
                f"`bridge` belongs to bridged custody; a {runtime.mode} runtime has no bridge.",
                details={"field": "bridge", "mode": runtime.mode},
            )
        for name in ("pubkey", "key_id"):
            requested = sent_bridge.get(name)
            if requested is not None and requested != stored[name]:
                raise immutable_field(f"bridge.{name}", stored[name], requested)
        if "advertised_url" in sent_bridge:
            _check_advertised_url(sent_bridge["advertised_url"])
            values["bridge"] = {**stored, "advertised_url": sent_bridge["advertised_url"]}
    if values:
        values["updated_at"] = utcnow()
        changed = conn.execute(
            update(runtimes)
            .where(runtimes.c.id == runtime.id, runtimes.c.deleted_at.is_(None))
            .values(**values)
        )
        if changed.rowcount != 1:
            raise runtime_deleted(row_by_id(conn, runtime.id), "changed")
        runtime = replace(runtime, **values)
    return view_one(conn, runtime)
