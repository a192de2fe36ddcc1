"""Runtimes, strands, thoughts, the inbox and identity keys, as calls: everything a ``self``
runtime's user-side loop needs (docs/runtimes.md "Self custody", docs/strands.md).

:class:`RuntimeCalls` is a mixin of :class:`hearth.client.HearthClient`, typed with the
:class:`~hearth.client.common.Transport` self-type.

Custody: thoughts are sealed and opened here, on the caller's machine. :meth:`thought_write`
seals the plaintext under the caller's K_master (AES-256-GCM, ``hearth.proofs.thoughts``) and
signs the write with the caller's key (the identity's root key, kid ``primary``, or a registered
key); only the nonce, the ciphertext and the signature are sent. :meth:`thoughts` opens what it
reads when given K_master. K_master, private keys and plaintexts never leave the process, and
never appear in a ``repr``: opened plaintexts are left out of their result's ``repr``.

Registering and revoking an identity key is a signing-key mutation: with ``root_key`` the root
proof is made automatically (``_proven``), as for foundational memories.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from hearth.proofs import b64_decode, b64_encode
from hearth.proofs.key_types import Ed25519PrivateKey
from hearth.proofs.thoughts import (
    SealedThought,
    ThoughtOpenError,
    open_thought,
    seal_thought,
    write_body,
)

from .calls import Call, op, paged
from .common import Transport, _obj, _objects, _opt_str, _str, query, segment
from .memories import Memory

__all__ = [
    "ROOT_KID",
    "ControlToken",
    "IdentityKey",
    "InboxMessage",
    "InboxPage",
    "Runtime",
    "RuntimeCalls",
    "RuntimeEvent",
    "RuntimeEventPage",
    "RuntimePage",
    "Strand",
    "StrandPage",
    "Thought",
    "ThoughtOpenError",
    "ThoughtPage",
    "ThoughtWritten",
]

ROOT_KID = "primary"  # the identity's root key, as a signing key id of thought writes
MAX_THOUGHT_PAGE = 100  # the service's largest page of thoughts


def _int(data: Mapping[str, Any], name: str) -> int:
    value = data.get(name)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _opt_int(data: Mapping[str, Any], name: str) -> int | None:
    value = data.get(name)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _opt_obj(data: Mapping[str, Any], name: str) -> dict[str, Any] | None:
    value = data.get(name)
    return value if isinstance(value, dict) else None


# ---- results --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Runtime:
    """A runtime record with its liveness fields. ``control_token`` is set once, in the answer
    that provisions a bridged runtime, and left out of the ``repr``."""

    id: str
    name: str
    mode: str
    identity_id: str | None
    status: str
    region: str
    llm: dict[str, Any] | None
    bridge: dict[str, Any] | None
    metadata: dict[str, Any]
    last_error: str | None
    runtime_public_key: str | None
    bridge_connected: bool
    last_seen_at: str | None
    last_thought_at: str | None
    thought_count_24h: int
    status_changed_at: str | None
    created_at: str
    deleted: bool
    control_token: str | None = field(default=None, repr=False)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Runtime:
        return cls(
            id=_str(data, "id"),
            name=_str(data, "name"),
            mode=_str(data, "mode"),
            identity_id=_opt_str(data, "identity_id"),
            status=_str(data, "status"),
            region=_str(data, "region"),
            llm=_opt_obj(data, "llm"),
            bridge=_opt_obj(data, "bridge"),
            metadata=_obj(data.get("metadata")),
            last_error=_opt_str(data, "last_error"),
            runtime_public_key=_opt_str(data, "runtime_public_key"),
            bridge_connected=data.get("bridge_connected") is True,
            last_seen_at=_opt_str(data, "last_seen_at"),
            last_thought_at=_opt_str(data, "last_thought_at"),
            thought_count_24h=_int(data, "thought_count_24h"),
            status_changed_at=_opt_str(data, "status_changed_at"),
            created_at=_str(data, "created_at"),
            deleted=data.get("deleted") is True,
            control_token=_opt_str(data, "control_token"),
        )


@dataclass(frozen=True)
class RuntimePage:
    items: tuple[Runtime, ...]
    next_cursor: str | None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RuntimePage:
        return cls(_objects(data.get("items"), Runtime.from_json), _opt_str(data, "next_cursor"))


@dataclass(frozen=True)
class RuntimeEvent:
    id: int
    event: str
    details: dict[str, Any]
    created_at: str

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RuntimeEvent:
        return cls(
            id=_int(data, "id"),
            event=_str(data, "event"),
            details=_obj(data.get("details")),
            created_at=_str(data, "created_at"),
        )


@dataclass(frozen=True)
class RuntimeEventPage:
    items: tuple[RuntimeEvent, ...]
    next_cursor: str | None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RuntimeEventPage:
        return cls(
            _objects(data.get("items"), RuntimeEvent.from_json), _opt_str(data, "next_cursor")
        )


@dataclass(frozen=True)
class ControlToken:
    """A bridged runtime's new control token, answered once (left out of the ``repr``)."""

    runtime_id: str
    rotated_at: str
    control_token: str = field(repr=False)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ControlToken:
        return cls(
            runtime_id=_str(data, "runtime_id"),
            rotated_at=_str(data, "rotated_at"),
            control_token=_str(data, "control_token"),
        )


@dataclass(frozen=True)
class Strand:
    id: str
    identity_id: str | None
    runtime_id: str | None
    name: str
    next_seq: int
    created_at: str

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Strand:
        return cls(
            id=_str(data, "id"),
            identity_id=_opt_str(data, "identity_id"),
            runtime_id=_opt_str(data, "runtime_id"),
            name=_str(data, "name"),
            next_seq=_int(data, "next_seq"),
            created_at=_str(data, "created_at"),
        )


@dataclass(frozen=True)
class StrandPage:
    items: tuple[Strand, ...]
    next_cursor: str | None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> StrandPage:
        return cls(_objects(data.get("items"), Strand.from_json), _opt_str(data, "next_cursor"))


@dataclass(frozen=True)
class Thought:
    """A stored thought: the sealed bytes as the service keeps them, and ``plaintext`` when it
    was opened on this machine (never in the ``repr``)."""

    id: str
    strand_id: str
    runtime_id: str | None
    seq: int
    nonce: bytes
    ciphertext: bytes
    signing_key_id: str | None
    signature: str | None
    created_at: str
    plaintext: bytes | None = field(default=None, repr=False, compare=False)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Thought:
        return cls(
            id=_str(data, "id"),
            strand_id=_str(data, "strand_id"),
            runtime_id=_opt_str(data, "runtime_id"),
            seq=_int(data, "seq"),
            nonce=b64_decode(_str(data, "nonce"), what="nonce"),
            ciphertext=b64_decode(_str(data, "ciphertext"), what="ciphertext"),
            signing_key_id=_opt_str(data, "signing_key_id"),
            signature=_opt_str(data, "signature"),
            created_at=_str(data, "created_at"),
        )

    def opened(self, k_master: bytes) -> Thought:
        """This thought with its plaintext; :class:`ThoughtOpenError` when it does not open
        under ``k_master`` at its strand and seq (the same error whatever failed)."""
        plaintext = open_thought(k_master, self.strand_id, self.seq, self.nonce, self.ciphertext)
        return Thought(
            id=self.id,
            strand_id=self.strand_id,
            runtime_id=self.runtime_id,
            seq=self.seq,
            nonce=self.nonce,
            ciphertext=self.ciphertext,
            signing_key_id=self.signing_key_id,
            signature=self.signature,
            created_at=self.created_at,
            plaintext=plaintext,
        )


@dataclass(frozen=True)
class ThoughtPage:
    strand_id: str
    items: tuple[Thought, ...]
    next_after_seq: int | None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ThoughtPage:
        return cls(
            strand_id=_str(data, "strand_id"),
            items=_objects(data.get("items"), Thought.from_json),
            next_after_seq=_opt_int(data, "next_after_seq"),
        )


@dataclass(frozen=True)
class ThoughtWritten:
    id: str
    strand_id: str
    identity_id: str | None
    runtime_id: str | None
    seq: int
    signing_key_id: str | None
    created_at: str
    next_seq: int

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ThoughtWritten:
        return cls(
            id=_str(data, "id"),
            strand_id=_str(data, "strand_id"),
            identity_id=_opt_str(data, "identity_id"),
            runtime_id=_opt_str(data, "runtime_id"),
            seq=_int(data, "seq"),
            signing_key_id=_opt_str(data, "signing_key_id"),
            created_at=_str(data, "created_at"),
            next_seq=_int(data, "next_seq"),
        )


@dataclass(frozen=True)
class InboxMessage:
    """A message to an identity; ``woke_runtimes`` is set in the answer to a send."""

    id: str
    identity_id: str
    sender: str
    body: str = field(repr=False)
    status: str
    taken_by: str | None
    taken_at: str | None
    done_at: str | None
    created_at: str
    woke_runtimes: tuple[str, ...] = ()

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> InboxMessage:
        woke = data.get("woke_runtimes")
        return cls(
            id=_str(data, "id"),
            identity_id=_str(data, "identity_id"),
            sender=_str(data, "sender"),
            body=_str(data, "body"),
            status=_str(data, "status"),
            taken_by=_opt_str(data, "taken_by"),
            taken_at=_opt_str(data, "taken_at"),
            done_at=_opt_str(data, "done_at"),
            created_at=_str(data, "created_at"),
            woke_runtimes=(
                tuple(w for w in woke if isinstance(w, str)) if isinstance(woke, list) else ()
            ),
        )


@dataclass(frozen=True)
class InboxPage:
    items: tuple[InboxMessage, ...]
    next_cursor: str | None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> InboxPage:
        return cls(
            _objects(data.get("items"), InboxMessage.from_json), _opt_str(data, "next_cursor")
        )


@dataclass(frozen=True)
class IdentityKey:
    """A key of an identity: the root key (kid ``primary``) or a registered one."""

    identity_id: str
    kid: str
    public_key: str
    purpose: str
    runtime_id: str | None
    created_at: str | None
    revoked_at: str | None
    revoked: bool

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> IdentityKey:
        return cls(
            identity_id=_str(data, "identity_id"),
            kid=_str(data, "kid"),
            public_key=_str(data, "public_key"),
            purpose=_str(data, "purpose"),
            runtime_id=_opt_str(data, "runtime_id"),
            created_at=_opt_str(data, "created_at"),
            revoked_at=_opt_str(data, "revoked_at"),
            revoked=data.get("revoked") is True,
        )


# ---- shared steps (module functions: a mixin method can call only the Transport) -------------


def _strand(t: Transport, strand_id: str) -> Call[Strand]:
    return Strand.from_json((yield from t._json("GET", f"/v1/strands/{segment(strand_id)}")))


def _thought_page(
    t: Transport, strand_id: str, after_seq: int, limit: int | None, k_master: bytes | None
) -> Call[ThoughtPage]:
    params = query(after_seq=after_seq, limit=limit)
    page = ThoughtPage.from_json(
        (yield from t._json("GET", f"/v1/strands/{segment(strand_id)}/thoughts", params=params))
    )
    if k_master is None:
        return page
    return ThoughtPage(
        page.strand_id, tuple(item.opened(k_master) for item in page.items), page.next_after_seq
    )


def _runtime_path(runtime_id: str, *rest: str) -> str:
    return "/".join(("/v1/runtimes", segment(runtime_id), *(segment(r) for r in rest)))


# ---- the calls ------------------------------------------------------------------------------


class RuntimeCalls:
    """Runtimes and their self-custody loop, strands and thoughts, the inbox, identity keys."""

    # -- runtimes --

    @op
    def runtime_create(
        self: Transport,
        name: str,
        mode: str,
        *,
        identity_id: str | None = None,
        llm: Mapping[str, Any] | None = None,
        bridge: Mapping[str, Any] | None = None,
        region: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> Call[Runtime]:
        """Provision a runtime under a custody tier (``self``, ``bridged``, ``trusted``); a
        bridged runtime's ``control_token`` is in this answer only."""
        body: dict[str, Any] = {"name": name, "mode": mode}
        optional = {
            "identity_id": identity_id,
            "llm": dict(llm) if llm is not None else None,
            "bridge": dict(bridge) if bridge is not None else None,
            "region": region,
            "metadata": dict(metadata) if metadata is not None else None,
        }
        body.update({k: v for k, v in optional.items() if v is not None})
        return Runtime.from_json((yield from self._json("POST", "/v1/runtimes", body=body)))

    @op
    def runtimes(
        self: Transport,
        *,
        mode: str | None = None,
        status: str | None = None,
        identity_id: str | None = None,
        include_deleted: bool = False,
        cursor: str | None = None,
        limit: int | None = None,
    ) -> Call[RuntimePage]:
        """One page of the project's runtimes, newest first."""
        params = query(
            mode=mode,
            status=status,
            identity_id=identity_id,
            include_deleted=True if include_deleted else None,
            cursor=cursor,
            limit=limit,
        )
        return RuntimePage.from_json((yield from self._json("GET", "/v1/runtimes", params=params)))

    iter_runtimes = paged(runtimes)

    @op
    def runtime(self: Transport, runtime_id: str) -> Call[Runtime]:
        """A runtime with its liveness fields (a deleted one too, marked deleted)."""
        return Runtime.from_json((yield from self._json("GET", _runtime_path(runtime_id))))

    @op
    def runtime_patch(self: Transport, /, runtime_id: str, **fields: Any) -> Call[Runtime]:
        """Change ``name``, ``llm``, ``region``, ``metadata`` or ``bridge`` (its
        ``advertised_url``); only the fields given are sent (``None`` is sent as null)."""
        return Runtime.from_json(
            (yield from self._json("PATCH", _runtime_path(runtime_id), body=fields))
        )

    @op
    def runtime_delete(self: Transport, runtime_id: str) -> Call[Runtime]:
        """Soft delete: the record is kept for audit, marked deleted."""
        return Runtime.from_json((yield from self._json("DELETE", _runtime_path(runtime_id))))

    @op
    def runtime_restart(self: Transport, runtime_id: str) -> Call[Runtime]:
        """Recover a runtime in ``error``: it re-enters ``starting``."""
        return Runtime.from_json(
            (yield from self._json("POST", _runtime_path(runtime_id, "restart")))
        )

    @op
    def runtime_events(
        self: Transport, runtime_id: str, *, cursor: str | None = None, limit: int | None = None
    ) -> Call[RuntimeEventPage]:
        """One page of the runtime's append-only event log, oldest first."""
        params = query(cursor=cursor, limit=limit)
        return RuntimeEventPage.from_json(
            (yield from self._json("GET", _runtime_path(runtime_id, "events"), params=params))
        )

    iter_runtime_events = paged(runtime_events)

    @op
    def runtime_control_token(self: Transport, runtime_id: str) -> Call[ControlToken]:
        """Rotate a bridged runtime's control token; the new one is answered once."""
        return ControlToken.from_json(
            (yield from self._json("POST", _runtime_path(runtime_id, "control-token")))
        )

    # -- a self runtime's loop --

    @op
    def runtime_heartbeat(self: Transport, runtime_id: str) -> Call[Runtime]:
        """A self runtime's loop reports in: ``last_seen_at``, and the first heartbeat moves it
        to ``running`` (docs/runtimes.md, "Self custody")."""
        return Runtime.from_json(
            (yield from self._json("POST", _runtime_path(runtime_id, "heartbeat")))
        )

    @op
    def runtime_take(self: Transport, runtime_id: str) -> Call[InboxMessage | None]:
        """Take the identity's oldest pending message for this self runtime; None when none is
        waiting. No other loop can take it until it is released."""
        response = yield from self._send("POST", _runtime_path(runtime_id, "inbox", "take"))
        if response.status_code == 204 or not response.content:
            return None
        return InboxMessage.from_json(_obj(response.json()))

    @op
    def runtime_complete(self: Transport, runtime_id: str, message_id: str) -> Call[InboxMessage]:
        """Mark a message this runtime took as done (after its thought is stored)."""
        return InboxMessage.from_json(
            (
                yield from self._json(
                    "POST", _runtime_path(runtime_id, "inbox", message_id, "complete")
                )
            )
        )

    @op
    def runtime_remember(
        self: Transport, runtime_id: str, message_id: str, *, key: str | None = None
    ) -> Call[Memory]:
        """Store a message this runtime took as a memory of its identity: untrusted (its text
        came from outside) until a person confirms it (``memory_confirm``)."""
        path = _runtime_path(runtime_id, "inbox", message_id, "remember")
        body = {"key": key} if key is not None else None
        return Memory.from_json((yield from self._json("POST", path, body=body)))

    @op
    def runtime_release(self: Transport, runtime_id: str, message_id: str) -> Call[InboxMessage]:
        """Give back a message this runtime took: it is pending again."""
        return InboxMessage.from_json(
            (
                yield from self._json(
                    "POST", _runtime_path(runtime_id, "inbox", message_id, "release")
                )
            )
        )

    # -- strands and thoughts --

    @op
    def strand_create(
        self: Transport, identity_id: str, name: str, *, runtime_id: str | None = None
    ) -> Call[Strand]:
        """A new strand of the identity, optionally bound to one of its runtimes (its thoughts
        then count as that runtime's)."""
        body: dict[str, Any] = {"identity_id": identity_id, "name": name}
        if runtime_id is not None:
            body["runtime_id"] = runtime_id
        return Strand.from_json((yield from self._json("POST", "/v1/strands", body=body)))

    @op
    def strands(
        self: Transport,
        *,
        identity_id: str | None = None,
        runtime_id: str | None = None,
        cursor: str | None = None,
        limit: int | None = None,
    ) -> Call[StrandPage]:
        """One page of the project's strands, newest first."""
        params = query(identity_id=identity_id, runtime_id=runtime_id, cursor=cursor, limit=limit)
        return StrandPage.from_json((yield from self._json("GET", "/v1/strands", params=params)))

    iter_strands = paged(strands)

    @op
    def strand(self: Transport, strand_id: str) -> Call[Strand]:
        """A strand, with the ``next_seq`` its next thought must carry."""
        return (yield from _strand(self, strand_id))

    @op
    def thought_write(
        self: Transport,
        strand_id: str,
        plaintext: bytes,
        *,
        k_master: bytes,
        signing_key: Ed25519PrivateKey,
        signing_key_id: str = ROOT_KID,
        seq: int | None = None,
    ) -> Call[ThoughtWritten]:
        """Seal ``plaintext`` under ``k_master`` for the strand's next seq (read from the
        strand when ``seq`` is None) and write it, signed by ``signing_key`` under
        ``signing_key_id`` (``primary``: the identity's root key). Only the nonce, the
        ciphertext and the signature leave this machine. A seq taken meanwhile by another
        writer is 409 ``thought_seq_conflict``: nothing was stored, and the caller may seal
        again for the new seq."""
        if seq is None:
            seq = (yield from _strand(self, strand_id)).next_seq
        sealed = seal_thought(k_master, strand_id, seq, plaintext)
        body = write_body(signing_key, signing_key_id, strand_id, seq, sealed)
        return ThoughtWritten.from_json(
            (yield from self._json("POST", f"/v1/strands/{segment(strand_id)}/thoughts", body=body))
        )

    @op
    def thought_write_sealed(
        self: Transport,
        strand_id: str,
        seq: int,
        sealed: SealedThought,
        *,
        signing_key: Ed25519PrivateKey,
        signing_key_id: str = ROOT_KID,
    ) -> Call[ThoughtWritten]:
        """Write a thought sealed elsewhere (``hearth.proofs.thoughts.seal_thought``)."""
        body = write_body(signing_key, signing_key_id, strand_id, seq, sealed)
        return ThoughtWritten.from_json(
            (yield from self._json("POST", f"/v1/strands/{segment(strand_id)}/thoughts", body=body))
        )

    @op
    def thoughts(
        self: Transport,
        strand_id: str,
        *,
        k_master: bytes | None = None,
        after_seq: int = 0,
        limit: int | None = None,
    ) -> Call[ThoughtPage]:
        """One page of the strand's thoughts in seq order after ``after_seq``. With
        ``k_master`` each is opened here (``plaintext``); one that does not open raises
        :class:`ThoughtOpenError`."""
        return (yield from _thought_page(self, strand_id, after_seq, limit, k_master))

    iter_thoughts = paged(thoughts, cursor="after_seq", following="next_after_seq")

    @op
    def recent_thoughts(
        self: Transport, strand_id: str, *, k_master: bytes | None = None, count: int = 20
    ) -> Call[list[Thought]]:
        """The strand's last ``count`` thoughts (at most 100), oldest first, opened with
        ``k_master`` when given: the context a think cycle reads."""
        if not 1 <= count <= MAX_THOUGHT_PAGE:
            raise ValueError(f"count is 1 to {MAX_THOUGHT_PAGE}")
        last = (yield from _strand(self, strand_id)).next_seq - 1
        if last < 1:
            return []
        after = max(0, last - count)
        return list((yield from _thought_page(self, strand_id, after, count, k_master)).items)

    # -- the inbox --

    @op
    def inbox_send(
        self: Transport, identity_id: str, body: str, *, sender: str
    ) -> Call[InboxMessage]:
        """Send a message to an identity; its idle runtimes wake (``woke_runtimes``)."""
        return InboxMessage.from_json(
            (
                yield from self._json(
                    "POST",
                    f"/v1/identities/{segment(identity_id)}/inbox",
                    body={"sender": sender, "body": body},
                )
            )
        )

    @op
    def inbox(
        self: Transport,
        identity_id: str,
        *,
        status: str | None = None,
        cursor: str | None = None,
        limit: int | None = None,
    ) -> Call[InboxPage]:
        """One page of the identity's messages, newest first."""
        params = query(status=status, cursor=cursor, limit=limit)
        return InboxPage.from_json(
            (
                yield from self._json(
                    "GET", f"/v1/identities/{segment(identity_id)}/inbox", params=params
                )
            )
        )

    iter_inbox = paged(inbox)

    # -- identity keys --

    @op
    def identity_key_register(
        self: Transport,
        identity_id: str,
        kid: str,
        public_key: Ed25519PrivateKey | str,
        *,
        purpose: str = "device",
        runtime_id: str | None = None,
        root_key: Ed25519PrivateKey | None = None,
    ) -> Call[IdentityKey]:
        """Register a ``device`` or ``runtime`` signing key for the identity. ``public_key`` is
        a key (its public half is sent) or its standard base64. An agent_root identity needs
        ``root_key``: the root proof is made automatically."""
        if isinstance(public_key, Ed25519PrivateKey):
            public_key = b64_encode(public_key.public_key().public_bytes_raw())
        body: dict[str, Any] = {"kid": kid, "public_key": public_key, "purpose": purpose}
        if runtime_id is not None:
            body["runtime_id"] = runtime_id
        path = f"/v1/identities/{segment(identity_id)}/keys"
        return IdentityKey.from_json(
            _obj((yield from self._proven("POST", path, body, identity_id, root_key)))
        )

    @op
    def identity_keys(self: Transport, identity_id: str) -> Call[list[IdentityKey]]:
        """The identity's keys: the root key (``primary``) first, then registered ones."""
        data = yield from self._json("GET", f"/v1/identities/{segment(identity_id)}/keys")
        return list(_objects(data.get("items"), IdentityKey.from_json))

    @op
    def identity_key_revoke(
        self: Transport, identity_id: str, kid: str, *, root_key: Ed25519PrivateKey | None = None
    ) -> Call[IdentityKey]:
        """Revoke a registered key: it signs nothing from now on (root proof with
        ``root_key``)."""
        path = f"/v1/identities/{segment(identity_id)}/keys/{segment(kid)}"
        return IdentityKey.from_json(
            _obj((yield from self._proven("DELETE", path, None, identity_id, root_key)))
        )
