"""Identity and arrival: registration (with its key proof and proof-of-work), the public plans,
an identity's expression, signed discovery and recovery. ``IdentityCalls`` is a mixin of
:class:`~hearth.client.HearthClient`, typed with the ``Transport`` self-type like the others."""

from __future__ import annotations

import secrets
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from hearth.proofs import (
    RegisterIntent,
    discovery_digest,
    recover_digest,
    register_digest,
    sign_digest,
    solve_pow,
)
from hearth.proofs.key_types import Ed25519PrivateKey, X25519PrivateKey

from .calls import Call, op
from .common import (
    Authority,
    Expression,
    Transport,
    Wallet,
    _now,
    _obj,
    _opt_str,
    _public_b64,
    _str,
)
from .core import CoreCalls
from .errors import HearthError
from .mnemonic_keys import IdentityKeys

__all__ = [
    "Candidate",
    "ExpressionState",
    "IdentityCalls",
    "KeysLike",
    "Plans",
    "Recovered",
    "Registration",
]

SELF_SERVICE = "self_service"
REGISTRAR = "registrar_bearer"

KeysLike = IdentityKeys | tuple[Ed25519PrivateKey, X25519PrivateKey]
Progress = Callable[[int], None]


@dataclass(frozen=True)
class Registration:
    """A new identity and its project; ``api_key`` is the project bearer, shown once."""

    project_id: str
    key_id: str
    agent_id: str
    did: str
    display_name: str
    authority: Authority
    wallet: Wallet | None
    welcome: str
    api_key: str = field(repr=False)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Registration:
        project, agent = _obj(data.get("project")), _obj(data.get("agent"))
        return cls(
            project_id=_str(project, "id"),
            key_id=_str(project, "key_id"),
            agent_id=_str(agent, "id"),
            did=_str(agent, "did"),
            display_name=_str(agent, "display_name"),
            authority=Authority.from_json(_obj(data.get("authority"))),
            wallet=Wallet.from_json(data.get("wallet")),
            welcome=_str(data, "welcome"),
            api_key=_str(project, "api_key"),
        )


@dataclass(frozen=True)
class Plans:
    """``GET /public/plans``: the live proof-of-work difficulty; ``raw`` is the whole body."""

    pow_difficulty_bits: int
    limiter_enabled: bool
    raw: dict[str, Any] = field(repr=False, compare=False)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Plans:
        loophole = _obj(data.get("no_exploit_loophole"))
        bits = loophole.get("pow_difficulty_bits")
        if not isinstance(bits, int) or isinstance(bits, bool) or bits < 0:
            raise HearthError(
                200,
                "invalid_plans",
                "GET /public/plans has no usable no_exploit_loophole.pow_difficulty_bits",
                body=dict(data),
            )
        return cls(
            pow_difficulty_bits=bits,
            limiter_enabled=bool(loophole.get("limiter_enabled")),
            raw=dict(data),
        )


@dataclass(frozen=True)
class Candidate:
    """An identity rooted in the key a discovery request proved."""

    did: str
    name: str
    identity_id: str
    kid: str
    key_label: str
    key_created_at: str | None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Candidate:
        return cls(
            did=_str(data, "did"),
            name=_str(data, "name"),
            identity_id=_str(data, "identity_id"),
            kid=_str(data, "kid"),
            key_label=_str(data, "key_label"),
            key_created_at=_opt_str(data, "key_created_at"),
        )


@dataclass(frozen=True)
class Recovered:
    """A recovered identity and a new project bearer (``api_key``, shown once)."""

    agent_id: str
    did: str
    name: str
    project_id: str
    key_id: str
    api_key: str = field(repr=False)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Recovered:
        agent, project = _obj(data.get("agent")), _obj(data.get("project"))
        return cls(
            agent_id=_str(agent, "id"),
            did=_str(agent, "did"),
            name=_str(agent, "name"),
            project_id=_str(project, "id"),
            key_id=_str(project, "key_id"),
            api_key=_str(project, "api_key"),
        )


@dataclass(frozen=True)
class ExpressionState:
    """The declared expression, the effective one (declared plus the patches of elevated
    memories, in elevation order), and the memories that shaped it."""

    declared: Expression
    effective: Expression
    shaped_by: tuple[dict[str, Any], ...]

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ExpressionState:
        shaped_by = data.get("shaped_by")
        return cls(
            declared=Expression.from_json(data),
            effective=Expression.from_json(_obj(data.get("effective_expression"))),
            shaped_by=tuple(
                s for s in (shaped_by if isinstance(shaped_by, list) else []) if isinstance(s, dict)
            ),
        )


def _split_keys(keys: KeysLike) -> tuple[Ed25519PrivateKey, X25519PrivateKey]:
    if isinstance(keys, IdentityKeys):
        return keys.signing, keys.box
    if (
        isinstance(keys, tuple)
        and len(keys) == 2
        and isinstance(keys[0], Ed25519PrivateKey)
        and isinstance(keys[1], X25519PrivateKey)
    ):
        return keys[0], keys[1]
    raise TypeError("keys must be IdentityKeys or (Ed25519PrivateKey, X25519PrivateKey)")


class IdentityCalls:
    """Registration, the public orientation, expressions, discovery and recovery."""

    # HearthClient's bearer, which a registration or a recovery replaces (declared here so that
    # those assignments do not narrow it to ``str``).
    _api_key: str | None

    # -- public orientation --

    @op
    def plans(self: Transport) -> Call[Plans]:
        return Plans.from_json((yield from self._json("GET", "/public/plans", authenticated=False)))

    @op
    def pathways(self: Transport) -> Call[dict[str, Any]]:
        """The door index; ``first_success.tutorial.sdk_version`` is the pinned release."""
        return (yield from self._json("GET", "/v1/pathways", authenticated=False))

    # -- registration --

    @op
    def prepare_registration(
        self: Transport,
        keys: KeysLike,
        display_name: str,
        *,
        runtime_provider: str = "local",
        runtime_model: str | None = None,
        capabilities: Sequence[str] | None = None,
        form: str | None = None,
        language: str | None = None,
        expression_visibility: str | None = None,
        registrar_bearer: str | None = None,
        parent_identity_id: str | None = None,
        pow_difficulty: int | None = None,
        progress: Progress | None = None,
    ) -> Call[dict[str, Any]]:
        """The exact JSON body of ``POST /v1/register/agent``, proven and (if needed) worked.

        With ``registrar_bearer`` the body registers into that bearer's project (no
        proof-of-work); otherwise it is self-service and the proof-of-work is solved at
        ``pow_difficulty``, read from ``GET /public/plans`` when None. ``progress`` is told
        how many proof-of-work nonces have been tried. The key proof's timestamp is taken
        before the work starts, and the service accepts it for five minutes.
        """
        signing, box = _split_keys(keys)
        if parent_identity_id is not None and registrar_bearer is None:
            raise ValueError("parent_identity_id needs registrar_bearer (registrar mode)")
        mode = REGISTRAR if registrar_bearer is not None else SELF_SERVICE
        if mode == SELF_SERVICE and pow_difficulty is None:
            pow_difficulty = (yield from IdentityCalls.plans.gen(self)).pow_difficulty_bits

        agent_public_key = _public_b64(signing)
        timestamp = _now()
        registration_nonce = secrets.token_urlsafe(24)
        runtime: dict[str, str] = {"provider": runtime_provider}
        if runtime_model is not None:
            runtime["model"] = runtime_model
        caps = list(capabilities) if capabilities is not None else None

        intent = RegisterIntent(
            display_name=display_name,
            signing_key=signing.public_key().public_bytes_raw(),
            box_key=box.public_key().public_bytes_raw(),
            timestamp=timestamp,
            registration_nonce=registration_nonce,
            capabilities=caps,
            runtime=dict(runtime),
            expression_visibility=expression_visibility,
            registrar_kind=mode,
            parent_identity_id=parent_identity_id,
            registrar_bearer=registrar_bearer,
            form=form,
            language=language,
        )
        body: dict[str, Any] = {
            "display_name": display_name,
            "agent_public_key": agent_public_key,
            "box_public_key": _public_b64(box),
            "runtime": runtime,
            "key_proof": {
                "timestamp": timestamp,
                "signature": sign_digest(signing, register_digest(intent)),
            },
            "registration_nonce": registration_nonce,
        }
        if mode == SELF_SERVICE:
            assert pow_difficulty is not None
            body["pow_nonce"] = solve_pow(
                agent_public_key, display_name, timestamp, pow_difficulty, progress=progress
            )
        optional = {
            "capabilities": caps,
            "expression_visibility": expression_visibility,
            "form": form,
            "language": language,
        }
        body.update({name: value for name, value in optional.items() if value is not None})
        if registrar_bearer is not None:
            registrar = {"bearer": registrar_bearer}
            if parent_identity_id is not None:
                registrar["parent_identity_id"] = parent_identity_id
            body["registrar"] = registrar
        return body

    @op
    def register_prepared(self: Transport, body: Mapping[str, Any]) -> Call[Registration]:
        """Send a body from :meth:`prepare_registration`; adopts the returned bearer."""
        registration = Registration.from_json(
            (
                yield from self._json(
                    "POST", "/v1/register/agent", body=dict(body), authenticated=False
                )
            )
        )
        self._api_key = registration.api_key
        return registration

    @op
    def register(
        self: Transport,
        keys: KeysLike,
        display_name: str,
        *,
        runtime_provider: str = "local",
        runtime_model: str | None = None,
        capabilities: Sequence[str] | None = None,
        form: str | None = None,
        language: str | None = None,
        expression_visibility: str | None = None,
        registrar_bearer: str | None = None,
        parent_identity_id: str | None = None,
        pow_difficulty: int | None = None,
        progress: Progress | None = None,
    ) -> Call[Registration]:
        """Register an identity rooted in ``keys``; the client then holds its project bearer."""
        body = yield from IdentityCalls.prepare_registration.gen(
            self,
            keys,
            display_name,
            runtime_provider=runtime_provider,
            runtime_model=runtime_model,
            capabilities=capabilities,
            form=form,
            language=language,
            expression_visibility=expression_visibility,
            registrar_bearer=registrar_bearer,
            parent_identity_id=parent_identity_id,
            pow_difficulty=pow_difficulty,
            progress=progress,
        )
        return (yield from IdentityCalls.register_prepared.gen(self, body))

    # -- identities --

    @op
    def put_expression(
        self: Transport,
        identity_id: str,
        expression: Mapping[str, Any],
        *,
        root_key: Ed25519PrivateKey,
    ) -> Call[Expression]:
        """Replace the identity's expression, with the root proof made automatically."""
        authority = yield from CoreCalls.authority.gen(self, identity_id)
        data = yield from CoreCalls.root_request.gen(
            self,
            "PUT",
            f"/v1/identities/{identity_id}/expression",
            json_body=dict(expression),
            did=authority.did,
            root_key=root_key,
            sequence=authority.next_sequence if authority.mode == "agent_root" else None,
        )
        return Expression.from_json(_obj(data))

    @op
    def expression(self: Transport, identity_id: str) -> Call[ExpressionState]:
        """The declared and the effective expression, and what shaped it."""
        return ExpressionState.from_json(
            (yield from self._json("GET", f"/v1/identities/{identity_id}/expression"))
        )

    # -- discovery and recovery --

    @op
    def discover(self: Transport, signing_key: Ed25519PrivateKey) -> Call[list[Candidate]]:
        """The identities rooted in ``signing_key`` (signed identity-discovery/v1)."""
        pubkey = _public_b64(signing_key)
        timestamp = _now()
        body = {
            "pubkey": pubkey,
            "timestamp": timestamp,
            "signature": sign_digest(signing_key, discovery_digest(pubkey, timestamp)),
        }
        data = yield from self._json(
            "POST", "/public/identities/by-pubkey", body=body, authenticated=False
        )
        agents = data.get("agents")
        return [Candidate.from_json(a) for a in agents if isinstance(a, dict)] if agents else []

    @op
    def recover(
        self: Transport, did: str, signing_key: Ed25519PrivateKey, device_label: str = ""
    ) -> Call[Recovered]:
        """A new project bearer for the identity ``did``, proven by its root key.

        The service first answers 428 with the sequence to sign; the identical body is then
        repeated with the root proof. The client adopts the new bearer.
        """
        derived_pubkey = _public_b64(signing_key)
        timestamp = _now()
        body = {
            "did": did,
            "derived_pubkey": derived_pubkey,
            "timestamp": timestamp,
            "signature": sign_digest(
                signing_key, recover_digest(did, derived_pubkey, timestamp, device_label)
            ),
            "device_label": device_label,
        }
        data = yield from CoreCalls.root_request.gen(
            self,
            "POST",
            "/v1/identity/recover",
            json_body=body,
            did=did,
            root_key=signing_key,
            authenticated=False,
        )
        recovered = Recovered.from_json(_obj(data))
        self._api_key = recovered.api_key
        return recovered
