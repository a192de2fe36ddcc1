"""Strands and their thoughts (docs/strands.md).

A strand is a sequence of thoughts of one identity, optionally bound to one of its runtimes.
A thought is stored as ``ciphertext`` and ``nonce`` only (wall 7,
``thought_storage_ciphertext_only``): the service never sees its plaintext and does not check
that the bytes were encrypted (the specification says so). Every write is signed over exactly
the bytes stored (``hearth.proofs.recipes.thought_write_digest``) by the identity's root key or
an unrevoked registered key (``identity_keys.verification_key``), and takes the strand's next
seq, claimed by one conditional UPDATE, so that of two writers of one seq exactly one wins.

Order of checks of a write: the strand, the encodings, the key, the signature; then the seq
claim and the insert, in one transaction. A refused write changes nothing.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, bindparam, select, update

from hearth.proofs import EncodingError, b64_decode, b64_encode
from hearth.proofs.recipes import thought_write_digest, verify_digest

from ..db.engine import utcnow
from ..db.ids import new_id
from ..db.rows import StrandRow, ThoughtRow
from ..db.tables import strands, thoughts
from ..errors import ApiError, not_found
from ..json_types import JsonObject
from . import cursors, identities, identity_keys
from . import runtimes as runtime_service
from .times import iso

FIRST_SEQ = 1
NONCE_BYTES = 12
TAG_BYTES = 16
MAX_CIPHERTEXT_BYTES = 65_536 + TAG_BYTES
# Names a plaintext would travel under; a body carrying one is refused under wall 7 before
# anything else is read of it.
PLAINTEXT_FIELDS = ("plaintext", "content", "text")

_INSERT_STRAND = strands.insert()
_INSERT_THOUGHT = thoughts.insert()
_BY_ID = select(strands).where(strands.c.id == bindparam("id"))
_CLAIM_SEQ = (
    update(strands)
    .where(strands.c.id == bindparam("strand"), strands.c.next_seq == bindparam("seq"))
    .values(next_seq=bindparam("seq") + 1)
)
_NEXT_SEQ = select(strands.c.next_seq).where(strands.c.id == bindparam("strand"))


def plaintext_refused(fields: list[str]) -> ApiError:
    return ApiError(
        422,
        "plaintext_refused",
        "Thoughts are stored as ciphertext and nonce only (wall 7, "
        "thought_storage_ciphertext_only): a plaintext field is never accepted.",
        details={"wall": "thought_storage_ciphertext_only", "fields": fields},
        hint="Seal the thought under K_master (AES-256-GCM, AAD strand-thought/v1 0x00 strand_id "
        "0x00 seq) and send `ciphertext` and `nonce`.",
    )


@dataclass(frozen=True, slots=True)
class Written:
    """A thought just stored, with what its answer adds: the strand's identity and next seq."""

    thought: ThoughtRow
    identity_id: str | None
    next_seq: int


def view(strand: StrandRow) -> JsonObject:
    return {
        "id": strand.id,
        "identity_id": strand.identity_id,
        "runtime_id": strand.runtime_id,
        "name": strand.name,
        "next_seq": strand.next_seq,
        "created_at": iso(strand.created_at),
    }


def thought_view(row: ThoughtRow) -> JsonObject:
    return {
        "id": row.id,
        "strand_id": row.strand_id,
        "runtime_id": row.runtime_id,
        "seq": row.seq,
        "nonce": b64_encode(bytes(row.nonce)),
        "ciphertext": b64_encode(bytes(row.ciphertext)),
        "signing_key_id": row.signing_key_id,
        "signature": row.signature,
        "created_at": iso(row.created_at),
    }


def strand_by_id(conn: Connection, strand_id: str) -> StrandRow | None:
    """The strand, whatever its project (the orchestrator's lookup), or None."""
    try:
        canonical = str(uuid.UUID(strand_id))
    except ValueError:
        return None
    row = conn.execute(_BY_ID, {"id": canonical}).first()
    return StrandRow.of(row._mapping) if row else None


def find(conn: Connection, project_id: str, strand_id: str) -> StrandRow:
    """The strand in this project, or 404: another project's strand does not exist here."""
    strand = strand_by_id(conn, strand_id)
    if strand is None or strand.project_id != project_id:
        raise not_found("Strand")
    return strand


def create(
    conn: Connection, project_id: str, *, identity_ref: str, name: str, runtime_ref: str | None
) -> JsonObject:
    """POST /v1/strands: the new strand's view."""
    return view(
        create_row(conn, project_id, identity_ref=identity_ref, name=name, runtime_ref=runtime_ref)
    )


def create_row(
    conn: Connection, project_id: str, *, identity_ref: str, name: str, runtime_ref: str | None
) -> StrandRow:
    """A new strand of the identity (bound to the runtime, which must think for it)."""
    identity = identities.find(conn, project_id, identity_ref)
    runtime_id = None
    if runtime_ref is not None:
        runtime = runtime_service.find(conn, project_id, runtime_ref)
        if runtime.identity_id != identity.id:
            raise ApiError(
                422,
                "runtime_identity_mismatch",
                "The runtime is not bound to this identity: a strand's runtime thinks for the "
                "strand's identity.",
                details={"field": "runtime_id", "runtime_identity_id": runtime.identity_id},
            )
        if runtime.deleted_at is not None:
            raise ApiError(
                409,
                "runtime_deleted",
                "The runtime was deleted; a new strand cannot be bound to it.",
                details={"runtime_id": runtime.id, "deleted_at": iso(runtime.deleted_at)},
            )
        runtime_id = runtime.id
    row = {
        "id": new_id(),
        "project_id": project_id,
        "identity_id": identity.id,
        "runtime_id": runtime_id,
        "name": name,
        "next_seq": FIRST_SEQ,
        "created_at": utcnow(),
    }
    conn.execute(_INSERT_STRAND, row)
    return StrandRow.of(row)


def read(conn: Connection, project_id: str, strand_id: str) -> JsonObject:
    return view(find(conn, project_id, strand_id))


def listing(
    conn: Connection,
    project_id: str,
    *,
    identity_ref: str | None,
    runtime_ref: str | None,
    cursor: str | None,
    limit: int,
) -> cursors.Page:
    """The project's strands, newest first, optionally one identity's or one runtime's."""
    conditions: list[Any] = [strands.c.project_id == project_id]
    if identity_ref is not None:
        conditions.append(
            strands.c.identity_id == identities.find(conn, project_id, identity_ref).id
        )
    if runtime_ref is not None:
        conditions.append(
            strands.c.runtime_id == runtime_service.find(conn, project_id, runtime_ref).id
        )
    items, next_cursor = cursors.newest_first(
        conn, strands, conditions, cursor, limit, build=StrandRow.of
    )
    return cursors.Page([view(r) for r in items], next_cursor)


def _decoded(text: str, field: str, *, length: int | None = None) -> bytes:
    try:
        return b64_decode(text, length=length, what=field)
    except EncodingError as exc:
        raise ApiError(422, f"invalid_{field}", str(exc), details={"field": field}) from None


def decode_write(nonce_b64: str, ciphertext_b64: str) -> tuple[bytes, bytes]:
    """The nonce (exactly 12 bytes) and the ciphertext (16 bytes to the bound) of a write body,
    from canonical standard base64; 422 otherwise."""
    nonce = _decoded(nonce_b64, "nonce", length=NONCE_BYTES)
    ciphertext = _decoded(ciphertext_b64, "ciphertext")
    if not TAG_BYTES <= len(ciphertext) <= MAX_CIPHERTEXT_BYTES:
        raise ApiError(
            422,
            "invalid_ciphertext",
            f"ciphertext is {len(ciphertext)} bytes; AES-256-GCM output here is {TAG_BYTES} "
            f"(the tag) to {MAX_CIPHERTEXT_BYTES} bytes.",
            details={"field": "ciphertext", "bytes": len(ciphertext)},
        )
    return nonce, ciphertext


def _key_refused(state: str, kid: str, identity_id: str | None) -> ApiError:
    if state == "revoked":
        return ApiError(
            403,
            "signing_key_revoked",
            f"The key {kid!r} of this identity was revoked: it no longer signs thoughts.",
            details={"signing_key_id": kid, "identity_id": identity_id},
            hint="Sign with the root key (`primary`) or another registered key.",
        )
    return ApiError(
        403,
        "signing_key_unknown",
        f"The identity has no key {kid!r}: thoughts are signed by the root key (`primary`) or a "
        "key registered with POST /v1/identities/{id}/keys.",
        details={"signing_key_id": kid, "identity_id": identity_id},
        hint="Register the key (bearer + root proof), or sign with the root key.",
    )


def append_thought(
    conn: Connection,
    strand_id: str,
    *,
    seq: int,
    nonce: bytes,
    ciphertext: bytes,
    signing_key_id: str,
    signature: str,
) -> Written:
    """Store one signed thought at ``seq`` (which must be the strand's next seq), in the
    caller's transaction; return the stored row with ``identity_id`` and ``next_seq``.

    For the routes and for the orchestrator alike: the signature is always checked, whoever
    writes (a hosted runtime signs with its registered key).
    """
    strand = strand_by_id(conn, strand_id)
    if strand is None:
        raise not_found("Strand")
    if len(nonce) != NONCE_BYTES or not TAG_BYTES <= len(ciphertext) <= MAX_CIPHERTEXT_BYTES:
        raise ValueError("nonce or ciphertext out of bounds (decode_write checks them)")
    identity_id = strand.identity_id
    key = identity_keys.verification_key(conn, identity_id, signing_key_id) if identity_id else None
    if key is None:
        state = identity_keys.key_state(conn, identity_id, signing_key_id) if identity_id else ""
        raise _key_refused(state, signing_key_id, identity_id)
    digest = thought_write_digest(strand.id, seq, nonce, ciphertext, signing_key_id)
    if not verify_digest(key, signature, digest):
        raise ApiError(
            422,
            "thought_signature_invalid",
            "The signature does not verify under that key for this exact write (strand, seq, "
            "signing key id, nonce, ciphertext).",
            details={"signing_key_id": signing_key_id, "recipe": "strand-thought-write/v1"},
            hint="Sign thought_write_digest(strand_id, seq, nonce, ciphertext, signing_key_id) "
            "over the very bytes you send.",
        )
    claimed = conn.execute(_CLAIM_SEQ, {"strand": strand.id, "seq": seq})
    if claimed.rowcount != 1:
        current = conn.execute(_NEXT_SEQ, {"strand": strand.id}).scalar_one()
        raise ApiError(
            409,
            "thought_seq_conflict",
            f"seq {seq} is not this strand's next seq ({current}): each position is written "
            "once, by one writer.",
            details={"next_seq": current, "seq": seq},
            hint="Read the strand (next_seq), seal the thought for that position, sign again.",
        )
    now = utcnow()
    row = {
        "id": new_id(),
        "strand_id": strand.id,
        "project_id": strand.project_id,
        # A strand bound to a runtime is that runtime's thinking: its thoughts count for it.
        "runtime_id": strand.runtime_id,
        "seq": seq,
        "ciphertext": ciphertext,
        "nonce": nonce,
        "signature": signature,
        "signing_key_id": signing_key_id,
        "created_at": now,
    }
    conn.execute(_INSERT_THOUGHT, row)
    if strand.runtime_id is not None:
        runtime_service.stamp_thought(conn, strand.runtime_id, now)
    return Written(ThoughtRow.of(row), identity_id, seq + 1)


def written_view(written: Written) -> JsonObject:
    row = written.thought
    return {
        "id": row.id,
        "strand_id": row.strand_id,
        "identity_id": written.identity_id,
        "runtime_id": row.runtime_id,
        "seq": row.seq,
        "signing_key_id": row.signing_key_id,
        "created_at": iso(row.created_at),
        "next_seq": written.next_seq,
    }


def write(
    conn: Connection,
    project_id: str,
    strand_ref: str,
    *,
    seq: int,
    nonce_b64: str,
    ciphertext_b64: str,
    signing_key_id: str,
    signature: str,
) -> JsonObject:
    """POST /v1/strands/{id}/thoughts: the project's strand, the body decoded, then
    :func:`append_thought`."""
    strand = find(conn, project_id, strand_ref)
    nonce, ciphertext = decode_write(nonce_b64, ciphertext_b64)
    row = append_thought(
        conn,
        strand.id,
        seq=seq,
        nonce=nonce,
        ciphertext=ciphertext,
        signing_key_id=signing_key_id,
        signature=signature,
    )
    return written_view(row)


def page(
    conn: Connection, project_id: str, strand_ref: str, *, after_seq: int, limit: int
) -> JsonObject:
    """Thoughts of the strand with seq > ``after_seq``, in seq order."""
    strand = find(conn, project_id, strand_ref)
    rows = conn.execute(
        select(thoughts)
        .where(thoughts.c.strand_id == strand.id, thoughts.c.seq > after_seq)
        .order_by(thoughts.c.seq)
        .limit(limit + 1)
    ).all()
    more = len(rows) > limit
    items = [thought_view(ThoughtRow.of(r._mapping)) for r in rows[:limit]]
    return {
        "strand_id": strand.id,
        "items": items,
        "next_after_seq": items[-1]["seq"] if more else None,
    }


def recent_thoughts(conn: Connection, strand_id: str, limit: int) -> list[ThoughtRow]:
    """The strand's last ``limit`` thoughts as stored rows (bytes, not base64), oldest first:
    what a think cycle reads (and asks its key holder to open) before it thinks."""
    rows = conn.execute(
        select(thoughts)
        .where(thoughts.c.strand_id == strand_id)
        .order_by(thoughts.c.seq.desc())
        .limit(limit)
    ).all()
    return [
        ThoughtRow.of({**r._mapping, "nonce": bytes(r.nonce), "ciphertext": bytes(r.ciphertext)})
        for r in reversed(rows)
    ]
