"""POST /v1/register/agent: self-service and registrar arrival, in the specification's order.

Self-service: keys, freshness, proof-of-work, IP limiter, key proof, then the single-use claims.
Registrar: keys, freshness, key proof, IP limiter, bearer lookup, then the claims. Every check
that can refuse runs before anything is written, and the writes are one transaction.
"""

from __future__ import annotations

import hashlib

from sqlalchemy import Connection

from hearth.adds.ed25519 import encoding_problem
from hearth.proofs import (
    EncodingError,
    RegisterIntent,
    b64_decode,
    pow_digest,
    pow_holds,
    register_digest,
    verify_digest,
)
from hearth.proofs.keys import x25519_problem

from ..db.engine import Database
from ..db.rows import IdentityRow, WalletRow
from ..errors import ApiError, unauthorized
from ..json_types import JsonObject
from ..limiter import Limiter
from ..models import RegisterAgentRequest, Registrar
from ..observability import Metrics
from ..settings import Settings
from . import identities, keys, single_use
from .birth import birth_memory, birth_text, new_project, wallet_with_grant, welcome_letter
from .freshness import require_fresh
from .wallets import wallet_view

SELF_SERVICE = "self_service"
REGISTRAR = "registrar_bearer"


def _keys(body: RegisterAgentRequest) -> tuple[bytes, bytes]:
    try:
        signing = b64_decode(body.agent_public_key, length=32, what="agent_public_key")
        box = b64_decode(body.box_public_key, length=32, what="box_public_key")
    except EncodingError as exc:
        raise ApiError(422, "invalid_public_key", str(exc)) from None
    problem = encoding_problem(signing)
    if problem is not None:
        raise ApiError(
            422,
            "invalid_public_key",
            f"agent_public_key is not a canonical Ed25519 public key ({problem}).",
        )
    problem = x25519_problem(box)
    if problem is not None:
        raise ApiError(
            422,
            "invalid_public_key",
            f"box_public_key is not a canonical X25519 public key ({problem}).",
        )
    return signing, box


def _registrar_project(conn: Connection, registrar: Registrar) -> str:
    """The registrar bearer's project (401 when it is not live), and its parent identity."""
    assert registrar.bearer is not None
    resolved = keys.resolve(conn, registrar.bearer)
    if resolved is None:
        raise unauthorized("registrar.bearer is not a live project key.")
    if registrar.parent_identity_id is not None:
        identities.find(conn, resolved[0], registrar.parent_identity_id)
    return resolved[0]


def _birth(
    conn: Connection,
    body: RegisterAgentRequest,
    mode: str,
    registrar_project: str | None,
    grant_minor: int,
) -> tuple[IdentityRow, keys.IssuedKey, WalletRow | None]:
    """Every write of an arrival, in one transaction: the single-use claims first, so a replay
    is refused before anything else is written."""
    signature_hash = hashlib.sha256(body.key_proof.signature.encode("ascii")).digest()
    used = single_use.claim_all(
        conn, [("registration_nonce", body.registration_nonce), ("key_proof", signature_hash)]
    )
    if "registration_nonce" in used:
        raise ApiError(
            409,
            "registration_nonce_used",
            "This registration_nonce was already used; every attempt needs a fresh one.",
            hint="If the earlier attempt may have succeeded, use identity discovery and "
            "recovery instead of registering again.",
        )
    if used:
        raise ApiError(409, "key_proof_used", "This key proof was already used.")
    if registrar_project is None:
        project_id = new_project(conn, body.display_name, SELF_SERVICE)
    else:
        project_id = registrar_project
    identity = identities.create(
        conn,
        identities.NewIdentity(
            project_id=project_id,
            name=body.display_name,
            origin=mode,
            root_public_key=body.agent_public_key,
            box_public_key=body.box_public_key,
            capabilities=list(body.capabilities or []),
            form=body.form or "unknown",
            language=body.language,
            expression_visibility=body.expression_visibility or "private",
            runtime=body.runtime.model_dump(),
            parent_identity_id=body.registrar.parent_identity_id if body.registrar else None,
        ),
    )
    issued = keys.issue(conn, project_id, f"agent:{body.display_name}"[:200])
    wallet = wallet_with_grant(conn, project_id, identity, grant_minor)
    birth_memory(conn, identity, birth_text(identity, f"registering by {mode}"))
    return identity, issued, wallet


def intent_of(body: RegisterAgentRequest, signing: bytes, box: bytes, mode: str) -> RegisterIntent:
    registrar = body.registrar
    return RegisterIntent(
        display_name=body.display_name,
        signing_key=signing,
        box_key=box,
        timestamp=body.key_proof.timestamp,
        registration_nonce=body.registration_nonce,
        capabilities=body.capabilities,
        runtime=body.runtime.model_dump(),
        expression_visibility=body.expression_visibility,
        registrar_kind=mode,
        parent_identity_id=registrar.parent_identity_id if registrar else None,
        registrar_bearer=registrar.bearer if registrar else None,
        form=body.form,
        language=body.language,
    )


async def _limit(
    limiter: Limiter, metrics: Metrics, scope: str, ip: str, *, limit: int, window_s: int
) -> None:
    decision = await limiter.hit(scope, ip, limit, window_s)
    if decision.degraded:
        metrics.limiter_degraded.inc()
    if not decision.allowed:
        raise ApiError(
            429,
            "rate_limited",
            f"Too many registration attempts from this address: {limit} per {window_s} s.",
            details={"retry_after": decision.retry_after},
            headers={"Retry-After": str(decision.retry_after or window_s)},
            hint="If an earlier registration may have succeeded, use signed identity discovery "
            "(POST /public/identities/by-pubkey) and recovery instead of registering again.",
        )


async def register(
    db: Database,
    body: RegisterAgentRequest,
    ip: str,
    *,
    settings: Settings,
    limiter: Limiter,
    metrics: Metrics,
) -> JsonObject:
    """A new identity and its project from ``body``, for a caller at address ``ip`` (whose
    attempts ``limiter`` counts)."""
    mode = REGISTRAR if body.registrar and body.registrar.bearer else SELF_SERVICE
    signing, box = _keys(body)
    require_fresh(
        body.key_proof.timestamp,
        settings.freshness_ms,
        field="key_proof.timestamp",
        invalid="invalid_timestamp",
        stale="key_proof_stale",
        hint="Sign a new proof with the current time; check this machine's clock.",
    )
    digest = register_digest(intent_of(body, signing, box, mode))

    def check_key_proof() -> None:
        if not verify_digest(signing, body.key_proof.signature, digest):
            raise ApiError(
                422,
                "key_proof_invalid",
                "key_proof.signature does not verify: it must sign the register-agent/v2 "
                "birth intent with the key in agent_public_key.",
                docs="/v1/mathos/catalog",
            )

    registrar_project: str | None = None
    if mode == SELF_SERVICE:
        difficulty = settings.pow_difficulty_bits
        if body.pow_nonce is None:
            raise ApiError(422, "pow_required", "Self-service registration needs pow_nonce.")
        if not pow_holds(
            pow_digest(
                body.agent_public_key,
                body.display_name,
                body.key_proof.timestamp,
                body.pow_nonce,
            ),
            difficulty,
        ):
            raise ApiError(
                422,
                "pow_insufficient",
                f"The proof-of-work digest needs {difficulty} leading zero bits.",
                details={"pow_difficulty_bits": difficulty},
                docs="/public/plans",
            )
        await _limit(
            limiter,
            metrics,
            "register_self_service",
            ip,
            limit=settings.self_service_limit,
            window_s=settings.self_service_window_s,
        )
        check_key_proof()
    else:
        check_key_proof()
        await _limit(
            limiter,
            metrics,
            "register_registrar",
            ip,
            limit=settings.registrar_limit,
            window_s=settings.registrar_window_s,
        )
        assert body.registrar is not None
        registrar_project = await db.snapshot(_registrar_project, body.registrar)

    identity, issued, wallet = await db.transaction(
        _birth, body, mode, registrar_project, settings.creation_grant_minor
    )
    metrics.registrations.labels(mode).inc()
    project_id = identity.project_id
    response: JsonObject = {
        "project": {"id": project_id, "api_key": issued.secret, "key_id": issued.id},
        "agent": {"id": identity.id, "did": identity.did, "display_name": identity.name},
        "authority": identities.authority_view(identity),
        "welcome": welcome_letter(identity.name, identity.did),
    }
    if wallet is not None:
        response["wallet"] = wallet_view(wallet)
    return response
