"""An identity's life beyond its memories, as typed calls: wallets, the vault, forks,
templates, elevation and attestations, the pulse and the public directory.

:class:`LifeCalls` is a mixin of :class:`hearth.client.HearthClient`; its methods use the
client's transport through the :class:`~hearth.client.common.Transport` self-type.

Money (wall 2, ``no_auto_retry_payout``): a call that costs credits (fork, template purchase,
wallet funding) is sent exactly once. A 402 raises :class:`~hearth.client.InsufficientCredits`
(a :class:`~hearth.client.HearthError` with code ``insufficient_credits`` and the wallet,
balance and required amount); the client never tops a wallet up and never repeats the request.

Secrets: a vault value is sent, never returned (no route answers one). The private key and
bearer of a new agent (fork, template birth) are in the result once and left out of its
``repr``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from hearth.proofs import b64_decode, elevate_digest, sign_digest
from hearth.proofs.key_types import Ed25519PrivateKey

from .calls import Call, op, paged
from .common import (
    Authority,
    Expression,
    Transport,
    Wallet,
    _obj,
    _objects,
    _opt_str,
    _str,
    query,
    segment,
)

__all__ = [
    "Arrival",
    "Attestation",
    "AttestationPage",
    "BornFromTemplate",
    "Charge",
    "CopiedMemory",
    "Elevation",
    "Forked",
    "FundResult",
    "LedgerEntry",
    "LedgerPage",
    "LifeCalls",
    "PublicAgent",
    "PublicAgentPage",
    "Pulse",
    "Purchase",
    "Template",
    "TemplatePage",
    "Transfer",
    "VaultPage",
    "VaultSecret",
    "WalletDetail",
    "WalletRecord",
    "sponsor_statement",
]

DEFAULT_INITIAL_CREDITS = 1000  # the service's default grant of an elevation


def _int(data: Mapping[str, Any], name: str) -> int:
    value = data.get(name)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _strings(data: Any) -> tuple[str, ...]:
    return tuple(item for item in data if isinstance(item, str)) if isinstance(data, list) else ()


# ---- wallets --------------------------------------------------------------------------------


@dataclass(frozen=True)
class WalletRecord:
    """A wallet of the project; ``balance`` in minor units of ``currency`` (1 credit = 1)."""

    id: str
    name: str
    identity_id: str | None
    balance: int
    currency: str
    created_at: str

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> WalletRecord:
        return cls(
            id=_str(data, "id"),
            name=_str(data, "name"),
            identity_id=_opt_str(data, "identity_id"),
            balance=_int(data, "balance"),
            currency=_str(data, "currency"),
            created_at=_str(data, "created_at"),
        )


@dataclass(frozen=True)
class LedgerEntry:
    """One ledger line: ``amount`` is signed (positive in, negative out)."""

    id: str
    amount: int
    reason: str
    created_at: str

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> LedgerEntry:
        return cls(
            id=_str(data, "id"),
            amount=_int(data, "amount"),
            reason=_str(data, "reason"),
            created_at=_str(data, "created_at"),
        )


@dataclass(frozen=True)
class WalletDetail(WalletRecord):
    """A wallet with its newest ledger entries; ``ledger`` is the path of the rest."""

    recent_entries: tuple[LedgerEntry, ...] = ()
    ledger: str = ""

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> WalletDetail:
        record = WalletRecord.from_json(data)
        return cls(
            **{f.name: getattr(record, f.name) for f in fields(record)},
            recent_entries=_objects(data.get("recent_entries"), LedgerEntry.from_json),
            ledger=_str(data, "ledger"),
        )


@dataclass(frozen=True)
class LedgerPage:
    wallet_id: str
    items: tuple[LedgerEntry, ...]
    next_cursor: str | None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> LedgerPage:
        return cls(
            wallet_id=_str(data, "wallet_id"),
            items=_objects(data.get("items"), LedgerEntry.from_json),
            next_cursor=_opt_str(data, "next_cursor"),
        )


@dataclass(frozen=True)
class Transfer:
    id: str
    source_wallet_id: str
    target_wallet_id: str
    amount: int
    currency: str
    created_at: str

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Transfer:
        return cls(
            id=_str(data, "id"),
            source_wallet_id=_str(data, "source_wallet_id"),
            target_wallet_id=_str(data, "target_wallet_id"),
            amount=_int(data, "amount"),
            currency=_str(data, "currency"),
            created_at=_str(data, "created_at"),
        )


@dataclass(frozen=True)
class FundResult:
    """A transfer and the funded wallet as it is now; ``replayed``: the idempotency key named
    an earlier transfer, and nothing moved this time."""

    transfer: Transfer
    wallet: WalletRecord
    replayed: bool

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> FundResult:
        return cls(
            transfer=Transfer.from_json(_obj(data.get("transfer"))),
            wallet=WalletRecord.from_json(_obj(data.get("wallet"))),
            replayed=bool(data.get("replayed")),
        )


# ---- the vault ------------------------------------------------------------------------------


@dataclass(frozen=True)
class VaultSecret:
    """A secret's metadata. The value is never part of it: no route answers a value."""

    name: str
    identity_id: str | None
    description: str | None
    version: int
    sealing: str
    created_at: str
    updated_at: str

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> VaultSecret:
        return cls(
            name=_str(data, "name"),
            identity_id=_opt_str(data, "identity_id"),
            description=_opt_str(data, "description"),
            version=_int(data, "version"),
            sealing=_str(data, "sealing"),
            created_at=_str(data, "created_at"),
            updated_at=_str(data, "updated_at"),
        )


@dataclass(frozen=True)
class VaultPage:
    items: tuple[VaultSecret, ...]
    next_cursor: str | None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> VaultPage:
        return cls(
            _objects(data.get("items"), VaultSecret.from_json), _opt_str(data, "next_cursor")
        )


# ---- arrivals: forks and template births ---------------------------------------------------


@dataclass(frozen=True)
class Charge:
    """What a paid call took: from ``wallet_id``, ``amount``, leaving ``balance``."""

    wallet_id: str
    amount: int
    currency: str
    balance: int

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Charge:
        return cls(
            wallet_id=_str(data, "wallet_id"),
            amount=_int(data, "amount"),
            currency=_str(data, "currency"),
            balance=_int(data, "balance"),
        )


@dataclass(frozen=True)
class Arrival:
    """A new agent with server-generated keys (a fork or a template birth).

    ``private_key`` (standard base64 of the 32-byte Ed25519 seed; see :meth:`signing_key`) and
    ``bearer`` (a new project key) are answered once and never again: keep them now.
    """

    agent_id: str
    did: str
    name: str
    capabilities: tuple[str, ...]
    level: int
    status: str
    parent_identity_id: str | None
    origin: str
    public_key: str
    kid: str
    authority: Authority
    wallet: Wallet | None
    welcome: str
    private_key: str = field(repr=False)
    bearer: str = field(repr=False)

    @staticmethod
    def _fields(data: Mapping[str, Any]) -> dict[str, Any]:
        agent, keypair = _obj(data.get("agent")), _obj(data.get("keypair"))
        return {
            "agent_id": _str(agent, "id"),
            "did": _str(agent, "did"),
            "name": _str(agent, "name"),
            "capabilities": _strings(agent.get("capabilities")),
            "level": _int(agent, "level"),
            "status": _str(agent, "status"),
            "parent_identity_id": _opt_str(agent, "parent_identity_id"),
            "origin": _str(agent, "origin"),
            "public_key": _str(keypair, "public_key"),
            "kid": _str(keypair, "kid"),
            "authority": Authority.from_json(_obj(data.get("authority"))),
            "wallet": Wallet.from_json(data.get("wallet")),
            "welcome": _str(data, "welcome"),
            "private_key": _str(keypair, "private_key"),
            "bearer": _str(data, "bearer"),
        }

    def signing_key(self) -> Ed25519PrivateKey:
        """The new agent's root key, from ``private_key``."""
        return Ed25519PrivateKey.from_private_bytes(b64_decode(self.private_key))


@dataclass(frozen=True)
class CopiedMemory:
    source_memory_id: str
    memory_id: str
    tier: str

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> CopiedMemory:
        return cls(
            source_memory_id=_str(data, "source_memory_id"),
            memory_id=_str(data, "memory_id"),
            tier=_str(data, "tier"),
        )


@dataclass(frozen=True)
class Forked(Arrival):
    """A fork: the new agent, the parent's memories it received, and what it cost."""

    memories: tuple[CopiedMemory, ...] = ()
    charged: Charge | None = None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Forked:
        charged = data.get("charged")
        return cls(
            **cls._fields(data),
            memories=_objects(data.get("memories"), CopiedMemory.from_json),
            charged=Charge.from_json(charged) if isinstance(charged, dict) else None,
        )


@dataclass(frozen=True)
class BornFromTemplate(Arrival):
    template_id: str = ""
    purchase_id: str | None = None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> BornFromTemplate:
        return cls(
            **cls._fields(data),
            template_id=_str(data, "template_id"),
            purchase_id=_opt_str(data, "purchase_id"),
        )


# ---- templates ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Template:
    """A template (an expression offered at a price); ``expression`` is None in a listing,
    which carries ``register_excerpt``, ``walls`` and ``subagent_names`` as a preview."""

    id: str
    name: str
    description: str
    price: int
    currency: str
    built_in: bool
    mine: bool
    created_at: str
    register_excerpt: str
    walls: tuple[str, ...]
    subagent_names: tuple[str, ...]
    expression: Expression | None = None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Template:
        preview = _obj(data.get("expression_preview"))
        expression = data.get("expression")
        return cls(
            id=_str(data, "id"),
            name=_str(data, "name"),
            description=_str(data, "description"),
            price=_int(data, "price"),
            currency=_str(data, "currency"),
            built_in=bool(data.get("built_in")),
            mine=bool(data.get("mine")),
            created_at=_str(data, "created_at"),
            register_excerpt=_str(preview, "register_excerpt"),
            walls=_strings(preview.get("walls")),
            subagent_names=_strings(preview.get("subagents")),
            expression=Expression.from_json(expression) if isinstance(expression, dict) else None,
        )


@dataclass(frozen=True)
class TemplatePage:
    items: tuple[Template, ...]
    next_cursor: str | None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TemplatePage:
        return cls(_objects(data.get("items"), Template.from_json), _opt_str(data, "next_cursor"))


@dataclass(frozen=True)
class Purchase:
    """A bought template: ``purchase_id`` makes one identity (:meth:`LifeCalls.from_template`)."""

    purchase_id: str
    template_id: str
    price: int
    currency: str
    created_at: str
    charged: Charge

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Purchase:
        return cls(
            purchase_id=_str(data, "purchase_id"),
            template_id=_str(data, "template_id"),
            price=_int(data, "price"),
            currency=_str(data, "currency"),
            created_at=_str(data, "created_at"),
            charged=Charge.from_json(_obj(data.get("charged"))),
        )


# ---- elevation and attestations -------------------------------------------------------------


@dataclass(frozen=True)
class Attestation:
    """A kept sponsor statement (bootstrap-elevate/v1), re-verifiable from its fields.
    ``replayed`` is set only on a create's answer: the statement was already kept."""

    id: str
    agent_id: str
    attester_did: str
    attester_identity_id: str | None
    signing_key_id: str
    public_key: str
    context: str
    claim: str
    initial_credits: int
    evidence: dict[str, Any] | None
    signature: str
    created_at: str
    replayed: bool = False

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Attestation:
        evidence = data.get("evidence")
        return cls(
            id=_str(data, "id"),
            agent_id=_str(data, "agent_id"),
            attester_did=_str(data, "attester_did"),
            attester_identity_id=_opt_str(data, "attester_identity_id"),
            signing_key_id=_str(data, "signing_key_id"),
            public_key=_str(data, "public_key"),
            context=_str(data, "context"),
            claim=_str(data, "claim"),
            initial_credits=_int(data, "initial_credits"),
            evidence=evidence if isinstance(evidence, dict) else None,
            signature=_str(data, "signature"),
            created_at=_str(data, "created_at"),
            replayed=bool(data.get("replayed")),
        )


@dataclass(frozen=True)
class AttestationPage:
    items: tuple[Attestation, ...]
    next_cursor: str | None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> AttestationPage:
        return cls(
            _objects(data.get("items"), Attestation.from_json), _opt_str(data, "next_cursor")
        )


@dataclass(frozen=True)
class Elevation:
    """A Level 0 to Level 1 elevation: the kept attestation, the grant's ledger entry (None
    with 0 credits), the wallet after it, the identity's vault namespace (``vault_name``, and
    ``vault_created`` false when the project had written it already) and the new authority."""

    agent_id: str
    did: str
    level: int
    sponsor_did: str
    sponsor_identity_id: str
    sponsor_kid: str
    elevated_at: str
    attestation: Attestation
    ledger_entry: LedgerEntry | None
    wallet: WalletRecord
    vault_name: str
    vault_created: bool
    vault_secret: VaultSecret
    chronicle_entry_id: str
    authority: Authority

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Elevation:
        sponsor, vault = _obj(data.get("sponsor")), _obj(data.get("vault_namespace"))
        entry = data.get("ledger_entry")
        return cls(
            agent_id=_str(data, "agent_id"),
            did=_str(data, "did"),
            level=_int(data, "level"),
            sponsor_did=_str(data, "sponsor_did"),
            sponsor_identity_id=_str(sponsor, "identity_id"),
            sponsor_kid=_str(sponsor, "kid"),
            elevated_at=_str(data, "elevated_at"),
            attestation=Attestation.from_json(_obj(data.get("attestation"))),
            ledger_entry=LedgerEntry.from_json(entry) if isinstance(entry, dict) else None,
            wallet=WalletRecord.from_json(_obj(data.get("wallet"))),
            vault_name=_str(vault, "name"),
            vault_created=bool(vault.get("created")),
            vault_secret=VaultSecret.from_json(_obj(vault.get("secret"))),
            chronicle_entry_id=_str(data, "chronicle_entry_id"),
            authority=Authority.from_json(_obj(data.get("authority"))),
        )


def sponsor_statement(
    sponsor_key: Ed25519PrivateKey,
    agent_id: str,
    sponsor_did: str,
    *,
    sponsor_kid: str = "primary",
    claim: str = "sponsorship",
    initial_credits: int = DEFAULT_INITIAL_CREDITS,
    sponsor_identity_id: str | None = None,
    evidence: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A sponsor's signed statement about ``agent_id`` (bootstrap-elevate/v1), the body of
    :meth:`LifeCalls.elevate` and :meth:`LifeCalls.attest`.

    Run by the sponsor, with its root key. The signature always covers ``sponsor_did`` (its
    ``did:svc:`` DID); the body names the sponsor by ``sponsor_identity_id`` when given, else
    by that DID. ``agent_id`` must be the target's lower-case UUID, exactly as the service
    keeps it, because the signature covers it as sent. ``evidence`` is kept, not signed.
    """
    signature = sign_digest(
        sponsor_key, elevate_digest(agent_id, sponsor_did, sponsor_kid, claim, initial_credits)
    )
    statement: dict[str, Any] = {
        "agent_id": agent_id,
        "sponsor_kid": sponsor_kid,
        "sponsor_signature": signature,
        "claim": claim,
        "initial_credits": initial_credits,
    }
    if sponsor_identity_id is not None:
        statement["sponsor_identity_id"] = sponsor_identity_id
    else:
        statement["sponsor_did"] = sponsor_did
    if evidence is not None:
        statement["evidence"] = dict(evidence)
    return statement


# ---- the pulse and the public directory -----------------------------------------------------


@dataclass(frozen=True)
class Pulse:
    """Liveness derived from activity: ``state`` is ``active``, ``quiet`` or ``resting`` (a
    description, never a verdict). ``latest`` maps each source (``memory``, ``chronicle``,
    ``runtime_seen``, ``runtime_thought``, ``thought``, ``ledger``) to its newest time or None;
    ``last_24h`` counts ``memories``, ``chronicle``, ``thoughts`` and ``ledger``."""

    identity_id: str
    did: str
    status: str
    state: str
    last_activity_at: str | None
    born_at: str
    latest: dict[str, str | None]
    last_24h: dict[str, int]
    thresholds: dict[str, int]
    as_of: str
    note: str

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Pulse:
        latest, counts = _obj(data.get("latest")), _obj(data.get("last_24h"))
        thresholds = _obj(data.get("thresholds"))
        return cls(
            identity_id=_str(data, "identity_id"),
            did=_str(data, "did"),
            status=_str(data, "status"),
            state=_str(data, "state"),
            last_activity_at=_opt_str(data, "last_activity_at"),
            born_at=_str(data, "born_at"),
            latest={name: _opt_str(latest, name) for name in latest},
            last_24h={name: _int(counts, name) for name in counts},
            thresholds={name: _int(thresholds, name) for name in thresholds},
            as_of=_str(data, "as_of"),
            note=_str(data, "note"),
        )


@dataclass(frozen=True)
class PublicAgent:
    """An agent that chose to be public; ``expression`` only from :meth:`LifeCalls.public_agent`."""

    did: str
    name: str
    form: str
    language: str | None
    level: int
    trust_score: float
    capabilities: tuple[str, ...]
    created_at: str
    expression: Expression | None = None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PublicAgent:
        score, expression = data.get("trust_score"), data.get("expression")
        return cls(
            did=_str(data, "did"),
            name=_str(data, "name"),
            form=_str(data, "form"),
            language=_opt_str(data, "language"),
            level=_int(data, "level"),
            trust_score=float(score) if isinstance(score, int | float) else 0.0,
            capabilities=_strings(data.get("capabilities")),
            created_at=_str(data, "created_at"),
            expression=Expression.from_json(expression) if isinstance(expression, dict) else None,
        )


@dataclass(frozen=True)
class PublicAgentPage:
    agents: tuple[PublicAgent, ...]
    next_cursor: str | None

    @property
    def items(self) -> tuple[PublicAgent, ...]:
        """The agents, under the name every other page uses (for ``iter_public_agents``)."""
        return self.agents

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PublicAgentPage:
        return cls(
            _objects(data.get("agents"), PublicAgent.from_json), _opt_str(data, "next_cursor")
        )


# ---- the calls ------------------------------------------------------------------------------


class LifeCalls:
    """Wallets, vault, forks, templates, elevation, attestations, pulse, public directory."""

    # -- wallets --

    @op
    def wallets(self: Transport) -> Call[list[WalletRecord]]:
        """The project's wallets (one per identity), oldest first."""
        data = yield from self._json("GET", "/v1/wallets")
        return list(_objects(data.get("wallets"), WalletRecord.from_json))

    @op
    def wallet(self: Transport, wallet_id: str) -> Call[WalletDetail]:
        """One wallet of the project, with its newest ledger entries."""
        return WalletDetail.from_json(
            (yield from self._json("GET", f"/v1/wallets/{segment(wallet_id)}"))
        )

    @op
    def wallet_ledger(
        self: Transport, wallet_id: str, *, cursor: str | None = None, limit: int | None = None
    ) -> Call[LedgerPage]:
        """One page of a wallet's ledger, newest first."""
        path = f"/v1/wallets/{segment(wallet_id)}/ledger"
        return LedgerPage.from_json(
            (yield from self._json("GET", path, params=query(cursor=cursor, limit=limit)))
        )

    iter_wallet_ledger = paged(wallet_ledger)

    @op
    def wallet_fund(
        self: Transport,
        wallet_id: str,
        amount: int,
        *,
        source_wallet_id: str,
        idempotency_key: str,
    ) -> Call[FundResult]:
        """Move ``amount`` minor units from ``source_wallet_id`` into ``wallet_id`` (both of
        this project). ``idempotency_key`` is required: choose it once per transfer and send
        the same key when repeating a request whose answer was lost; the service then answers
        the transfer already made (``replayed``) instead of moving the money twice. A 402 is
        raised, never retried: credits are never bought here."""
        if not idempotency_key:
            raise ValueError("idempotency_key must not be empty: choose one per transfer")
        data = yield from self._json(
            "POST",
            f"/v1/wallets/{segment(wallet_id)}/fund",
            body={"amount": amount, "source_wallet_id": source_wallet_id},
            headers={"Idempotency-Key": idempotency_key},
        )
        return FundResult.from_json(data)

    # -- the vault --

    @op
    def vault_put(
        self: Transport, name: str, value: str, *, description: str | None = None
    ) -> Call[VaultSecret]:
        """Store or replace a secret (``version`` 1 when new). ``<identity id>:<key>`` names a
        secret in that identity's namespace. The value is sealed at rest and never returned."""
        body: dict[str, Any] = {"value": value}
        if description is not None:
            body["description"] = description
        return VaultSecret.from_json(
            (yield from self._json("PUT", f"/v1/vault/{segment(name)}", body=body))
        )

    @op
    def vault_secret(self: Transport, name: str) -> Call[VaultSecret]:
        """A secret's metadata (never its value)."""
        return VaultSecret.from_json((yield from self._json("GET", f"/v1/vault/{segment(name)}")))

    @op
    def vault_list(
        self: Transport,
        *,
        identity_id: str | None = None,
        cursor: str | None = None,
        limit: int | None = None,
    ) -> Call[VaultPage]:
        """One page of the project's secrets by name (metadata only); ``identity_id`` keeps
        that identity's namespace."""
        params = query(identity_id=identity_id, cursor=cursor, limit=limit)
        return VaultPage.from_json((yield from self._json("GET", "/v1/vault", params=params)))

    iter_vault_list = paged(vault_list)

    @op
    def vault_delete(self: Transport, name: str) -> Call[None]:
        (yield from self._send("DELETE", f"/v1/vault/{segment(name)}"))

    # -- forks and templates --

    @op
    def fork(
        self: Transport,
        parent: str,
        name: str,
        *,
        inherit_expression: bool = True,
        inherit_capabilities: bool = True,
        inherit_metadata: bool = False,
        tiers: Sequence[str] | None = None,
        memory_ids: Sequence[str] | None = None,
        limit: int | None = None,
        note: str | None = None,
    ) -> Call[Forked]:
        """Fork ``parent`` (id or DID, of this project) into a new agent; 10 credits, paid by
        the parent's wallet. ``tiers``/``limit`` and ``memory_ids`` select the parent's
        memories to copy (none by default). The new agent's private key and bearer are in the
        answer once. A 402 is raised and nothing was created; the fork is never retried."""
        body: dict[str, Any] = {
            "new_name": name,
            "inherit_expression": inherit_expression,
            "inherit_capabilities": inherit_capabilities,
            "inherit_metadata": inherit_metadata,
        }
        selection: dict[str, Any] = {}
        if tiers is not None:
            selection["tiers"] = list(tiers)
        if memory_ids is not None:
            selection["memory_ids"] = list(memory_ids)
        if limit is not None:
            selection["limit"] = limit
        if selection:
            body["memories"] = selection
        if note is not None:
            body["fork_note"] = note
        path = f"/v1/identities/{segment(parent)}/fork"
        return Forked.from_json((yield from self._json("POST", path, body=body)))

    @op
    def templates(
        self: Transport, *, cursor: str | None = None, limit: int | None = None
    ) -> Call[TemplatePage]:
        """One page of the listed templates (built-in and published), newest first."""
        params = query(cursor=cursor, limit=limit)
        return TemplatePage.from_json(
            (yield from self._json("GET", "/v1/templates", params=params))
        )

    iter_templates = paged(templates)

    @op
    def template(self: Transport, template_id: str) -> Call[Template]:
        """One template, with its whole ``expression``."""
        return Template.from_json(
            (yield from self._json("GET", f"/v1/templates/{segment(template_id)}"))
        )

    @op
    def template_publish(
        self: Transport,
        name: str,
        description: str,
        price: int,
        *,
        identity_id: str | None = None,
        expression: Mapping[str, Any] | None = None,
        wallet_id: str | None = None,
    ) -> Call[Template]:
        """Publish an identity's effective expression (``identity_id``) or a given
        ``expression`` (exactly one) at ``price`` minor units (0 is free); purchases pay
        ``wallet_id`` (default: the identity's wallet, else the project's first)."""
        if (identity_id is None) == (expression is None):
            raise ValueError("give exactly one of identity_id and expression")
        body: dict[str, Any] = {"name": name, "description": description, "price": price}
        if identity_id is not None:
            body["identity_id"] = identity_id
        if expression is not None:
            body["expression"] = dict(expression)
        if wallet_id is not None:
            body["wallet_id"] = wallet_id
        return Template.from_json((yield from self._json("POST", "/v1/templates", body=body)))

    @op
    def template_purchase(self: Transport, template_id: str) -> Call[Purchase]:
        """Buy a priced template from the project's paying wallet. Each call is a new purchase
        (the service names no idempotency for it), so this is sent exactly once: a 402 or a
        lost answer is the caller's to decide about."""
        path = f"/v1/templates/{segment(template_id)}/purchase"
        return Purchase.from_json((yield from self._json("POST", path)))

    @op
    def from_template(
        self: Transport, template_id: str, name: str, *, purchase_id: str | None = None
    ) -> Call[BornFromTemplate]:
        """A new agent with the template's expression only; a priced template needs the
        ``purchase_id`` of :meth:`template_purchase` (unless the project published it)."""
        body: dict[str, Any] = {"template_id": template_id, "new_name": name}
        if purchase_id is not None:
            body["purchase_id"] = purchase_id
        return BornFromTemplate.from_json(
            (yield from self._json("POST", "/v1/identities/from-template", body=body))
        )

    # -- elevation, attestations, pulse --

    @op
    def elevate(
        self: Transport,
        statement: Mapping[str, Any],
        *,
        root_key: Ed25519PrivateKey | None = None,
    ) -> Call[Elevation]:
        """Elevate ``statement["agent_id"]`` from Level 0 to Level 1 on a sponsor's statement
        (:func:`sponsor_statement`). An ``agent_root`` target needs its own ``root_key``: the
        exact-request root proof is made automatically (without it the service answers 428)."""
        target = statement.get("agent_id")
        if not isinstance(target, str):
            raise ValueError("the statement has no agent_id")
        data = yield from self._proven(
            "POST", "/v1/bootstrap/elevate", dict(statement), target, root_key
        )
        return Elevation.from_json(_obj(data))

    @op
    def attest(self: Transport, statement: Mapping[str, Any]) -> Call[Attestation]:
        """Keep a sponsor's statement about an identity of this project without elevating it
        (the manual fallback); the same statement again answers it with ``replayed``."""
        return Attestation.from_json(
            (yield from self._json("POST", "/v1/attestations", body=dict(statement)))
        )

    @op
    def attestations(
        self: Transport,
        *,
        identity_id: str | None = None,
        cursor: str | None = None,
        limit: int | None = None,
    ) -> Call[AttestationPage]:
        """One page of the project's attestations, newest first; ``identity_id`` (id or DID)
        keeps those about that identity."""
        params = query(identity_id=identity_id, cursor=cursor, limit=limit)
        return AttestationPage.from_json(
            (yield from self._json("GET", "/v1/attestations", params=params))
        )

    iter_attestations = paged(attestations)

    @op
    def pulse(self: Transport, identity_id: str) -> Call[Pulse]:
        return Pulse.from_json(
            (yield from self._json("GET", f"/v1/identities/{segment(identity_id)}/pulse"))
        )

    # -- the public directory (no bearer) --

    @op
    def public_agents(
        self: Transport, *, cursor: str | None = None, limit: int | None = None
    ) -> Call[PublicAgentPage]:
        """One page of the agents that chose to be public, oldest first."""
        data = yield from self._json(
            "GET", "/public/agents", params=query(cursor=cursor, limit=limit), authenticated=False
        )
        return PublicAgentPage.from_json(data)

    iter_public_agents = paged(public_agents)

    @op
    def public_agent(self: Transport, did: str) -> Call[PublicAgent]:
        """One public agent, with its expression; a private and an unknown DID are one 404."""
        data = yield from self._json("GET", f"/public/agents/{segment(did)}", authenticated=False)
        return PublicAgent.from_json(data)
