"""``HearthClient``: the service's HTTP interface as typed calls, with the proofs built in.

What the client does for its caller:

- Registration (``POST /v1/register/agent``): the register-agent/v2 key proof, a fresh
  registration nonce, and (self-service only) the proof-of-work, solved at the difficulty the
  service publishes in ``GET /public/plans``. :meth:`HearthClient.prepare_registration` builds
  the exact body without sending it, so it can be prepared ahead of time.
- Exact-request root proofs (identity-authority/v1): :meth:`HearthClient.root_request`
  serialises the body once, signs those bytes and the target exactly as sent, reads the next
  sequence from the authority route (or from a 428), and retries once when its sequence turns
  out to be stale.
- Signed discovery and recovery (``identity-discovery/v1``, ``identity-recover/v1``).

Errors: every non-2xx answer raises :class:`HearthError` with the service's ``error`` code,
``message`` and ``details``. Transport failures (no connection, timeouts) are httpx2's own
exceptions. If a registration's answer is lost in transit the registration may still have
happened: find it with :meth:`HearthClient.discover` and :meth:`HearthClient.recover` rather
than registering again.

Secrets: the bearer and private keys never appear in a ``repr``, an exception or a log line;
result fields that hold a secret are left out of their ``repr``.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal, overload

import httpx2
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from hearth import __version__
from hearth.proofs import (
    AUTHORITY_HEADERS,
    RegisterIntent,
    authority_digest,
    b64_encode,
    discovery_digest,
    format_timestamp,
    memory_attestation_digest,
    recover_digest,
    register_digest,
    sign_digest,
    solve_pow,
)

from .backup import SealedBackup
from .common import (
    Authority,
    Expression,
    HearthError,
    InsufficientCredits,
    Wallet,
    _obj,
    _objects,
    _opt_str,
    _str,
)
from .life import LifeCalls
from .mnemonic_keys import IdentityKeys
from .runtimes import RuntimeCalls
from .wake import WakeCalls

__all__ = [
    "Authority",
    "BackupRecord",
    "BootstrapStatus",
    "Bootstrapped",
    "Candidate",
    "ChronicleEntry",
    "ChroniclePage",
    "CreatedKey",
    "Expression",
    "ExpressionState",
    "HearthClient",
    "HearthError",
    "InsufficientCredits",
    "KeyRecord",
    "Memory",
    "MemoryAttestation",
    "MemoryPage",
    "Plans",
    "Recovered",
    "Registration",
    "Wallet",
    "attest_memory",
]

SELF_SERVICE = "self_service"
REGISTRAR = "registrar_bearer"
_SEQUENCE, _TIMESTAMP, _SIGNATURE = AUTHORITY_HEADERS
# Refusals a fresh proof can cure: the sequence the service wants is in details.next_sequence.
_RETRYABLE_PROOF_ERRORS = frozenset({"authority_proof_required", "authority_sequence_mismatch"})

KeysLike = IdentityKeys | tuple[Ed25519PrivateKey, X25519PrivateKey]
Progress = Callable[[int], None]


# ---- results ------------------------------------------------------------------------------


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
class KeyRecord:
    """A project bearer key as listed: prefix and metadata, never the secret."""

    id: str
    name: str
    prefix: str
    created_at: str

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> KeyRecord:
        return cls(
            id=_str(data, "id"),
            name=_str(data, "name"),
            prefix=_str(data, "prefix"),
            created_at=_str(data, "created_at"),
        )


@dataclass(frozen=True)
class CreatedKey(KeyRecord):
    """A new project key; ``api_key`` is the full bearer, shown once."""

    api_key: str = field(default="", repr=False)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> CreatedKey:
        record = KeyRecord.from_json(data)
        return cls(
            id=record.id,
            name=record.name,
            prefix=record.prefix,
            created_at=record.created_at,
            api_key=_str(data, "api_key"),
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
class BackupRecord:
    """A stored key backup: ciphertext and its KDF descriptor, as the service keeps them."""

    id: str
    agent_id: str
    blob_base64: str = field(repr=False)
    key_derivation: str
    label: str | None
    created_at: str

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> BackupRecord:
        return cls(
            id=_str(data, "id"),
            agent_id=_str(data, "agent_id"),
            blob_base64=_str(data, "blob_base64"),
            key_derivation=_str(data, "key_derivation"),
            label=_opt_str(data, "label"),
            created_at=_str(data, "created_at"),
        )

    @property
    def sealed(self) -> SealedBackup:
        return SealedBackup(blob_base64=self.blob_base64, key_derivation=self.key_derivation)


@dataclass(frozen=True)
class Bootstrapped:
    """An agent with server-generated keys; ``private_key`` and ``bearer`` are shown once."""

    agent_id: str
    did: str
    name: str
    capabilities: tuple[str, ...]
    public_key: str
    kid: str
    authority: Authority
    wallet: Wallet | None
    welcome: str
    raw_agent: dict[str, Any] = field(repr=False, compare=False)
    private_key: str = field(repr=False)
    bearer: str = field(repr=False)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Bootstrapped:
        agent, keypair = _obj(data.get("agent")), _obj(data.get("keypair"))
        capabilities = agent.get("capabilities")
        return cls(
            agent_id=_str(agent, "id"),
            did=_str(agent, "did"),
            name=_str(agent, "name"),
            capabilities=(
                tuple(c for c in capabilities if isinstance(c, str))
                if isinstance(capabilities, list)
                else ()
            ),
            public_key=_str(keypair, "public_key"),
            kid=_str(keypair, "kid"),
            authority=Authority.from_json(_obj(data.get("authority"))),
            wallet=Wallet.from_json(data.get("wallet")),
            welcome=_str(data, "welcome"),
            raw_agent=agent,
            private_key=_str(keypair, "private_key"),
            bearer=_str(data, "bearer"),
        )


@dataclass(frozen=True)
class BootstrapStatus:
    agent_id: str
    did: str
    exists: bool
    level: int
    trust_score: float
    sponsor_did: str | None
    elevated_at: str | None
    status: str

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> BootstrapStatus:
        return cls(
            agent_id=_str(data, "agent_id"),
            did=_str(data, "did"),
            exists=bool(data.get("exists")),
            level=int(data.get("level") or 0),
            trust_score=float(data.get("trust_score") or 0.0),
            sponsor_did=_opt_str(data, "sponsor_did"),
            elevated_at=_opt_str(data, "elevated_at"),
            status=_str(data, "status"),
        )


@dataclass(frozen=True)
class MemoryAttestation:
    """An external witness's memory-attestation/v1 signature over a memory's exact content."""

    attester_did: str
    signing_key_id: str
    public_key: str
    signature: str
    created_at: str

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> MemoryAttestation:
        return cls(
            attester_did=_str(data, "attester_did"),
            signing_key_id=_str(data, "signing_key_id"),
            public_key=_str(data, "public_key"),
            signature=_str(data, "signature"),
            created_at=_str(data, "created_at"),
        )


@dataclass(frozen=True)
class Memory:
    """A memory: ``agent_id`` None means project-level; ``weight`` is its decay weight now
    (1 for elevated tiers), ``in_wake`` whether the wake still selects it. ``binding`` is set
    only on a store's answer (``identity`` or ``project``)."""

    id: str
    agent_id: str | None
    tier: str
    key: str | None
    content: str
    created_at: str
    elevated_at: str | None
    expression_patch: dict[str, Any] | None
    weight: float
    in_wake: bool
    attestations: tuple[MemoryAttestation, ...] = ()
    binding: str | None = None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Memory:
        attestations = data.get("attestations")
        patch = data.get("expression_patch")
        weight = data.get("weight")
        return cls(
            id=_str(data, "id"),
            agent_id=_opt_str(data, "agent_id"),
            tier=_str(data, "tier"),
            key=_opt_str(data, "key"),
            content=_str(data, "content"),
            created_at=_str(data, "created_at"),
            elevated_at=_opt_str(data, "elevated_at"),
            expression_patch=patch if isinstance(patch, dict) else None,
            weight=float(weight) if isinstance(weight, int | float) else 0.0,
            in_wake=bool(data.get("in_wake")),
            attestations=_objects(attestations, MemoryAttestation.from_json),
            binding=_opt_str(data, "binding"),
        )


@dataclass(frozen=True)
class MemoryPage:
    items: tuple[Memory, ...]
    next_cursor: str | None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> MemoryPage:
        return cls(_objects(data.get("items"), Memory.from_json), _opt_str(data, "next_cursor"))


@dataclass(frozen=True)
class ChronicleEntry:
    id: str
    kind: str
    agent_id: str | None
    text: str
    details: dict[str, Any] | None
    created_at: str

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ChronicleEntry:
        details = data.get("details")
        return cls(
            id=_str(data, "id"),
            kind=_str(data, "kind"),
            agent_id=_opt_str(data, "agent_id"),
            text=_str(data, "text"),
            details=details if isinstance(details, dict) else None,
            created_at=_str(data, "created_at"),
        )


@dataclass(frozen=True)
class ChroniclePage:
    items: tuple[ChronicleEntry, ...]
    next_cursor: str | None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ChroniclePage:
        return cls(
            _objects(data.get("items"), ChronicleEntry.from_json), _opt_str(data, "next_cursor")
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


def attest_memory(
    witness_key: Ed25519PrivateKey,
    memory_id: str,
    content: str,
    attester_did: str,
    signing_key_id: str,
    *,
    include_public_key: bool = True,
) -> dict[str, str]:
    """A witness's attestation of a memory (memory-attestation/v1 over its exact content), as
    ``POST /v1/memories/{id}/elevate`` takes it in ``attestations``. The public key may be left
    out when the DID names it (``did:key``) or the service knows it (``did:svc``)."""
    digest = memory_attestation_digest(
        memory_id, content.encode("utf-8"), attester_did, signing_key_id
    )
    attestation = {
        "attester_did": attester_did,
        "signing_key_id": signing_key_id,
        "signature": sign_digest(witness_key, digest),
    }
    if include_public_key:
        attestation["public_key"] = _public_b64(witness_key)
    return attestation


# ---- helpers ------------------------------------------------------------------------------


def _now() -> str:
    return format_timestamp(datetime.now(UTC))


def _json_bytes(body: Any) -> bytes:
    """The one serialisation of a body: compact, ASCII-only, so the bytes are unambiguous."""
    return json.dumps(body, separators=(",", ":"), ensure_ascii=True).encode("ascii")


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


def _public_b64(key: Ed25519PrivateKey | X25519PrivateKey) -> str:
    return b64_encode(key.public_key().public_bytes_raw())


def _retry_sequence(response: httpx2.Response) -> int | None:
    """The sequence a 428 or a sequence mismatch asks for, or None for any other answer."""
    if response.status_code not in (409, 428):
        return None
    try:
        body = response.json()
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(body, dict) or body.get("error") not in _RETRYABLE_PROOF_ERRORS:
        return None
    sequence = _obj(body.get("details")).get("next_sequence")
    if isinstance(sequence, int) and not isinstance(sequence, bool) and sequence >= 1:
        return sequence
    return None


# ---- the client ---------------------------------------------------------------------------


class HearthClient(LifeCalls, WakeCalls, RuntimeCalls):
    """A synchronous client of one hearth service.

    ``api_key`` is the project bearer; it is sent only to routes that need one, and it is
    replaced by the bearer a successful :meth:`register` or :meth:`recover` returns. Use the
    client as a context manager, or call :meth:`close`.

    Wallets, the vault, forks, templates, elevation, attestations, the pulse and the public
    directory come from :class:`~hearth.client.life.LifeCalls`; the wake and its voice from
    :class:`~hearth.client.wake.WakeCalls`; runtimes, strands, thoughts (sealed and opened
    here), the inbox and identity keys from :class:`~hearth.client.runtimes.RuntimeCalls`
    (docs/sdk.md lists every call).
    """

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None = None,
        timeout: float = 30.0,
        transport: httpx2.BaseTransport | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self._api_key = api_key
        self._http = httpx2.Client(
            base_url=self.base_url,
            timeout=timeout,
            transport=transport,
            headers={"Accept": "application/json", "User-Agent": f"hearth-sdk/{__version__}"},
        )

    # -- lifecycle --

    def __enter__(self) -> HearthClient:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def __repr__(self) -> str:
        # The bearer itself never appears; only whether one is held.
        held = "set" if self._api_key else "none"
        return f"HearthClient(base_url={self.base_url!r}, api_key=<{held}>)"

    @property
    def api_key(self) -> str | None:
        return self._api_key

    @api_key.setter
    def api_key(self, value: str | None) -> None:
        self._api_key = value

    # -- transport --

    def _headers(
        self, authenticated: bool, extra: Mapping[str, str] | None = None
    ) -> dict[str, str]:
        headers = dict(extra or {})
        if authenticated:
            if not self._api_key:
                raise ValueError("this call needs a project bearer: pass api_key= or register")
            headers["Authorization"] = f"Bearer {self._api_key}"
        return headers

    def _send(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        params: Mapping[str, str] | None = None,
        authenticated: bool = True,
        headers: Mapping[str, str] | None = None,
    ) -> httpx2.Response:
        headers = self._headers(authenticated, headers)
        content = None
        if body is not None:
            content = _json_bytes(body)
            headers["Content-Type"] = "application/json"
        response = self._http.request(method, path, content=content, params=params, headers=headers)
        if not response.is_success:
            raise HearthError.from_response(response)
        return response

    def _json(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        params: Mapping[str, str] | None = None,
        authenticated: bool = True,
        headers: Mapping[str, str] | None = None,
    ) -> dict[str, Any]:
        response = self._send(
            method, path, body=body, params=params, authenticated=authenticated, headers=headers
        )
        try:
            data = response.json()
        except (ValueError, UnicodeDecodeError):
            raise HearthError(
                response.status_code, "invalid_response", "the answer is not JSON", None, None
            ) from None
        if not isinstance(data, dict):
            raise HearthError(
                response.status_code, "invalid_response", "the answer is not a JSON object"
            )
        return data

    # -- root proofs --

    def root_request(
        self,
        method: str,
        path: str,
        *,
        json_body: Any,
        did: str,
        root_key: Ed25519PrivateKey,
        identity_id: str | None = None,
        sequence: int | None = None,
        params: Mapping[str, str] | None = None,
        authenticated: bool = True,
    ) -> Any:
        """Send one request with an exact-request root proof; the decoded JSON answer.

        The body is serialised once and those bytes are both signed and sent. The sequence is
        ``sequence`` when given; otherwise it is read from the authority route of
        ``identity_id``; without either the request is first sent unproven and the 428's
        ``details.next_sequence`` is used. A proof refused as missing (428) or as carrying a
        stale sequence (409 ``authority_sequence_mismatch``) is signed again once, with the
        sequence the refusal names. The target signed is the path and query of the URL
        actually sent. ``json_body=None`` sends no body at all (the empty body is signed).
        """
        body_bytes = b"" if json_body is None else _json_bytes(json_body)
        content_type = {"Content-Type": "application/json"} if body_bytes else None
        method = method.upper()
        if sequence is None and identity_id is not None:
            authority = self.authority(identity_id)
            if authority.mode == "agent_root":
                sequence = authority.next_sequence

        def send(proof_sequence: int | None) -> httpx2.Response:
            headers = self._headers(authenticated, content_type)
            request = self._http.build_request(
                method, path, content=body_bytes or None, params=params, headers=headers
            )
            if proof_sequence is not None:
                target = request.url.raw_path.decode("ascii")
                timestamp = _now()
                digest = authority_digest(
                    did, method, target, body_bytes, sequence=proof_sequence, timestamp=timestamp
                )
                request.headers[_SEQUENCE] = str(proof_sequence)
                request.headers[_TIMESTAMP] = timestamp
                request.headers[_SIGNATURE] = sign_digest(root_key, digest)
            return self._http.send(request)

        response = send(sequence)
        retried = False
        while not response.is_success:
            wanted = _retry_sequence(response)
            if wanted is None:
                break
            if sequence is None:
                # The unproven probe: the service named the sequence to sign.
                sequence = wanted
            elif retried:
                break
            else:
                retried = True
                sequence = wanted
            response = send(sequence)
        if not response.is_success:
            raise HearthError.from_response(response)
        if not response.content:
            return None
        return response.json()

    # -- public orientation --

    def plans(self) -> Plans:
        return Plans.from_json(self._json("GET", "/public/plans", authenticated=False))

    def pathways(self) -> dict[str, Any]:
        """The door index; ``first_success.tutorial.sdk_version`` is the pinned release."""
        return self._json("GET", "/v1/pathways", authenticated=False)

    # -- registration --

    def prepare_registration(
        self,
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
    ) -> dict[str, Any]:
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
            pow_difficulty = self.plans().pow_difficulty_bits

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

    def register_prepared(self, body: Mapping[str, Any]) -> Registration:
        """Send a body from :meth:`prepare_registration`; adopts the returned bearer."""
        registration = Registration.from_json(
            self._json("POST", "/v1/register/agent", body=dict(body), authenticated=False)
        )
        self._api_key = registration.api_key
        return registration

    def register(
        self,
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
    ) -> Registration:
        """Register an identity rooted in ``keys``; the client then holds its project bearer."""
        body = self.prepare_registration(
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
        return self.register_prepared(body)

    # -- identities --

    def authority(self, identity_id: str) -> Authority:
        return Authority.from_json(self._json("GET", f"/v1/identities/{identity_id}/authority"))

    def put_expression(
        self, identity_id: str, expression: Mapping[str, Any], *, root_key: Ed25519PrivateKey
    ) -> Expression:
        """Replace the identity's expression, with the root proof made automatically."""
        authority = self.authority(identity_id)
        data = self.root_request(
            "PUT",
            f"/v1/identities/{identity_id}/expression",
            json_body=dict(expression),
            did=authority.did,
            root_key=root_key,
            sequence=authority.next_sequence if authority.mode == "agent_root" else None,
        )
        return Expression.from_json(_obj(data))

    def expression(self, identity_id: str) -> ExpressionState:
        """The declared and the effective expression, and what shaped it."""
        return ExpressionState.from_json(
            self._json("GET", f"/v1/identities/{identity_id}/expression")
        )

    # -- memories and the chronicle --

    def _proven(
        self,
        method: str,
        path: str,
        body: Any,
        identity_id: str | None,
        root_key: Ed25519PrivateKey | None,
    ) -> Any:
        """A mutation that the identity's root proof may authorise: proven when a root key and
        an identity are given (and the identity is agent_root), sent with the bearer alone
        otherwise."""
        if root_key is not None and identity_id is not None:
            authority = self.authority(identity_id)
            if authority.mode == "agent_root":
                return self.root_request(
                    method,
                    path,
                    json_body=body,
                    did=authority.did,
                    root_key=root_key,
                    sequence=authority.next_sequence,
                )
        response = self._send(method, path, body=body)
        return response.json() if response.content else None

    def memory_store(
        self,
        content: str,
        *,
        tier: str | None = None,
        agent_id: str | None = None,
        key: str | None = None,
        root_key: Ed25519PrivateKey | None = None,
    ) -> Memory:
        """Store a memory (episodic unless ``tier``). A foundational memory of an agent_root
        identity needs ``root_key``: the proof is made automatically."""
        body: dict[str, Any] = {"content": content}
        optional = {"type": tier, "agent_id": agent_id, "key": key}
        body.update({name: value for name, value in optional.items() if value is not None})
        proven = agent_id if tier == "foundational" else None
        return Memory.from_json(_obj(self._proven("POST", "/v1/memories", body, proven, root_key)))

    def memories(
        self,
        *,
        tier: str | None = None,
        agent_id: str | None = None,
        key: str | None = None,
        cursor: str | None = None,
        limit: int | None = None,
    ) -> MemoryPage:
        """One page of the project's memories, newest first."""
        params = {
            name: str(value)
            for name, value in (
                ("tier", tier),
                ("agent_id", agent_id),
                ("key", key),
                ("cursor", cursor),
                ("limit", limit),
            )
            if value is not None
        }
        return MemoryPage.from_json(self._json("GET", "/v1/memories", params=params))

    def memory(self, memory_id: str) -> Memory:
        return Memory.from_json(self._json("GET", f"/v1/memories/{memory_id}"))

    def memory_delete(self, memory_id: str, *, root_key: Ed25519PrivateKey | None = None) -> None:
        """Delete a memory for good (the chronicle records it). A foundational or constitutive
        memory of an agent_root identity needs ``root_key``."""
        identity_id = None
        if root_key is not None:
            memory = self.memory(memory_id)
            identity_id = memory.agent_id if memory.tier != "episodic" else None
        self._proven("DELETE", f"/v1/memories/{memory_id}", None, identity_id, root_key)

    def memory_elevate(
        self,
        memory_id: str,
        tier: str,
        *,
        expression_patch: Mapping[str, Any] | None = None,
        attestations: Sequence[Mapping[str, Any]] | None = None,
        root_key: Ed25519PrivateKey | None = None,
    ) -> Memory:
        """Elevate a memory to ``foundational`` or ``constitutive`` (with ``attestations``, see
        :func:`attest_memory`). A memory of an agent_root identity needs ``root_key``: the proof
        is made automatically."""
        body: dict[str, Any] = {"tier": tier}
        if expression_patch is not None:
            body["expression_patch"] = dict(expression_patch)
        if attestations is not None:
            body["attestations"] = [dict(a) for a in attestations]
        identity_id = self.memory(memory_id).agent_id if root_key is not None else None
        path = f"/v1/memories/{memory_id}/elevate"
        return Memory.from_json(_obj(self._proven("POST", path, body, identity_id, root_key)))

    def chronicle(
        self,
        *,
        kind: str | None = None,
        agent_id: str | None = None,
        cursor: str | None = None,
        limit: int | None = None,
    ) -> ChroniclePage:
        """One page of the project's chronicle, newest first."""
        params = {
            name: str(value)
            for name, value in (
                ("kind", kind),
                ("agent_id", agent_id),
                ("cursor", cursor),
                ("limit", limit),
            )
            if value is not None
        }
        return ChroniclePage.from_json(self._json("GET", "/v1/chronicle", params=params))

    # -- project keys --

    def keys_list(self) -> list[KeyRecord]:
        data = self._json("GET", "/v1/keys")
        keys = data.get("keys")
        return [KeyRecord.from_json(k) for k in keys if isinstance(k, dict)] if keys else []

    def keys_create(self, name: str) -> CreatedKey:
        return CreatedKey.from_json(self._json("POST", "/v1/keys", body={"name": name}))

    def keys_revoke(self, key_id: str) -> None:
        self._send("DELETE", f"/v1/keys/{key_id}")

    # -- discovery and recovery --

    def discover(self, signing_key: Ed25519PrivateKey) -> list[Candidate]:
        """The identities rooted in ``signing_key`` (signed identity-discovery/v1)."""
        pubkey = _public_b64(signing_key)
        timestamp = _now()
        body = {
            "pubkey": pubkey,
            "timestamp": timestamp,
            "signature": sign_digest(signing_key, discovery_digest(pubkey, timestamp)),
        }
        data = self._json("POST", "/public/identities/by-pubkey", body=body, authenticated=False)
        agents = data.get("agents")
        return [Candidate.from_json(a) for a in agents if isinstance(a, dict)] if agents else []

    def recover(
        self, did: str, signing_key: Ed25519PrivateKey, device_label: str = ""
    ) -> Recovered:
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
        data = self.root_request(
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

    # -- backups --

    def backup_push(
        self, agent_id: str, sealed: SealedBackup, label: str | None = None
    ) -> BackupRecord:
        body: dict[str, Any] = {
            "agent_id": agent_id,
            "blob_base64": sealed.blob_base64,
            "key_derivation": sealed.key_derivation,
        }
        if label is not None:
            body["label"] = label
        return BackupRecord.from_json(self._json("POST", "/v1/identity/backup", body=body))

    def backup_pull(self, agent_id: str) -> BackupRecord:
        """The latest backup of the identity (``open_backup`` opens its ``sealed``)."""
        return BackupRecord.from_json(self._json("GET", f"/v1/identity/backup/{agent_id}"))

    # -- bootstrap and scaffold --

    def bootstrap(self, name: str, **fields: Any) -> Bootstrapped:
        """An agent with server-generated keys; ``fields``: capabilities, purpose,
        expression, metadata."""
        return Bootstrapped.from_json(
            self._json("POST", "/v1/bootstrap", body={"name": name, **fields})
        )

    def bootstrap_status(self, agent_id: str) -> BootstrapStatus:
        return BootstrapStatus.from_json(self._json("GET", f"/v1/bootstrap/{agent_id}"))

    @overload
    def scaffold(
        self, platform: str, identity_id: str | None = None, text: Literal[False] = False
    ) -> dict[str, Any]: ...

    @overload
    def scaffold(self, platform: str, identity_id: str | None, text: Literal[True]) -> str: ...

    @overload
    def scaffold(
        self, platform: str, identity_id: str | None = None, *, text: Literal[True]
    ) -> str: ...

    def scaffold(
        self, platform: str, identity_id: str | None = None, text: bool = False
    ) -> dict[str, Any] | str:
        """The credential install script for ``platform`` (``linux``, ``macos``,
        ``windows``): JSON by default, the raw script with ``text=True``."""
        params = {"platform": platform}
        if identity_id is not None:
            params["identity_id"] = identity_id
        if text:
            params["format"] = "text"
            return self._send("GET", "/v1/bootstrap/scaffold", params=params).text
        return self._json("GET", "/v1/bootstrap/scaffold", params=params)
