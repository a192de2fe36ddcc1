"""One think cycle of a hosted runtime (docs/orchestrator.md, "The think cycle").

1. ``begin`` (one transaction, under the lease): take the identity's next inbox message, find
   or make the runtime's strand, read its recent thoughts (ciphertext) and the wake (markdown),
   append ``think_cycle_start``. Committed, so the message is ``taken`` by this runtime.
2. Outside any transaction: read the provider key from the vault, open the thoughts through the
   custody adapter, build the prompt, call the provider, seal the reply for the strand's next
   seq and sign the write.
3. ``finish`` (one transaction, under the lease): store the thought (``strands.append_thought``
   checks the signature against the identity's keys), complete the message, append
   ``think_cycle_end``.

A failure anywhere after 1 is ``fail``: the message goes back to ``pending`` and
``think_cycle_error`` says why. A worker that lost its lease in between writes nothing: the
worker that took the runtime over releases the message when it claims the runtime.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Connection, bindparam, select

from hearth.proofs import think_cycle
from hearth.proofs.think_cycle import STRAND_NAME, THOUGHT_FORMAT, Prompt

from ..db.engine import utcnow
from ..db.rows import InboxMessageRow, RuntimeRow, StrandRow, ThoughtRow
from ..db.tables import strands
from ..errors import ApiError
from ..services import inbox, vault, wake, wake_render, wake_stamps
from ..services import runtimes as runtime_service
from ..services import strands as strand_service
from ..services.runtimes import leases


@dataclass(frozen=True)
class Lease:
    """Who writes, and for how long each write extends the lease."""

    owner: str
    lease_ms: int


@dataclass
class Begun:
    """What step 1 read, for steps 2 and 3."""

    runtime: RuntimeRow
    message: InboxMessageRow
    strand_id: str
    seq: int
    recent: list[ThoughtRow]
    wake_markdown: str


class CycleFailed(Exception):
    """A cycle that could not complete; ``stage`` and ``reason`` go into ``think_cycle_error``
    (never a secret: reasons are written here, not copied from key material or values)."""

    def __init__(self, stage: str, reason: str) -> None:
        super().__init__(f"{stage}: {reason}")
        self.stage = stage
        self.reason = reason


_RUNTIME_STRAND = (
    select(strands)
    .where(strands.c.runtime_id == bindparam("runtime"))
    .order_by(strands.c.created_at, strands.c.id)
    .limit(1)
)


def runtime_strand(conn: Connection, runtime: RuntimeRow, identity_id: str) -> StrandRow:
    """The runtime's strand (its oldest bound one), made on the first cycle for ``identity_id``,
    the identity the runtime is bound to (a cycle runs only for a bound runtime)."""
    row = conn.execute(_RUNTIME_STRAND, {"runtime": runtime.id}).first()
    if row is not None:
        return StrandRow.of(row._mapping)
    return strand_service.create_row(
        conn,
        runtime.project_id,
        identity_ref=identity_id,
        name=STRAND_NAME,
        runtime_ref=runtime.id,
    )


def _now_ms() -> int:
    return int(utcnow().timestamp() * 1000)


def begin(
    conn: Connection, runtime_id: str, lease: Lease, now_ms: int, recent_limit: int
) -> Begun | None:
    """Step 1; None when the identity has no pending message."""
    leases.hold(conn, runtime_id, lease.owner, now_ms=now_ms, lease_ms=lease.lease_ms)
    runtime = runtime_service.row_by_id(conn, runtime_id)
    if runtime.status != "running" or runtime.identity_id is None:
        return None
    message = inbox.take_next(conn, runtime.identity_id, runtime_id)
    if message is None:
        return None
    # The message is no longer pending: no wake cached before this, in any process, is served.
    wake_stamps.bump(conn, runtime.project_id)
    strand = runtime_strand(conn, runtime, runtime.identity_id)
    recent = strand_service.recent_thoughts(conn, strand.id, recent_limit) if recent_limit else []
    document = wake.build(conn, runtime.project_id, runtime.identity_id)
    runtime_service.append_event(
        conn,
        runtime_id,
        "think_cycle_start",
        {"message_id": message.id, "strand_id": strand.id, "seq": strand.next_seq},
    )
    return Begun(
        runtime=runtime,
        message=message,
        strand_id=strand.id,
        seq=int(strand.next_seq),
        recent=recent,
        wake_markdown=wake_render.to_markdown(document),
    )


def provider_key(conn: Connection, runtime: RuntimeRow, master_key: str | None) -> str:
    """The provider's api key from the vault secret the runtime's ``llm.vault_key`` names."""
    name = (runtime.llm or {}).get("vault_key")
    if not name:
        raise CycleFailed("vault", "the runtime's llm has no vault_key")
    try:
        return vault.read_secret(conn, runtime.project_id, name, master_key=master_key)
    except vault.VaultUnavailable:
        raise CycleFailed("vault", f"the vault secret {name!r} does not open") from None
    except ApiError:
        raise CycleFailed("vault", f"the vault secret {name!r} is missing") from None


def thought_plaintext(message: InboxMessageRow, reply: str, runtime: RuntimeRow) -> bytes:
    """What a cycle stores (sealed), in the format the user's own loop writes too."""
    llm = runtime.llm or {}
    return think_cycle.thought_plaintext(
        in_reply_to=message.id,
        sender=message.sender,
        message=message.body,
        reply=reply,
        provider=llm.get("provider"),
        model=llm.get("model"),
    )


def build_prompt(wake_markdown: str, history: list[bytes], message: InboxMessageRow) -> Prompt:
    return think_cycle.build_prompt(wake_markdown, history, message.sender, message.body)


def finish(
    conn: Connection,
    begun: Begun,
    lease: Lease,
    *,
    nonce: bytes,
    ciphertext: bytes,
    signing_key_id: str,
    signature: str,
) -> strand_service.Written:
    """Step 3: the thought stored, the message done, ``think_cycle_end``; the stored thought."""
    runtime_id = begun.runtime.id
    leases.hold(conn, runtime_id, lease.owner, now_ms=_now_ms(), lease_ms=lease.lease_ms)
    row = strand_service.append_thought(
        conn,
        begun.strand_id,
        seq=begun.seq,
        nonce=nonce,
        ciphertext=ciphertext,
        signing_key_id=signing_key_id,
        signature=signature,
    )
    inbox.complete(conn, begun.message.id)
    runtime_service.stamp_work(conn, runtime_id)
    runtime_service.append_event(
        conn,
        runtime_id,
        "think_cycle_end",
        {"message_id": begun.message.id, "strand_id": begun.strand_id, "seq": begun.seq},
    )
    return row


def fail(conn: Connection, begun: Begun, lease: Lease, failure: CycleFailed) -> None:
    """The message back to ``pending``, and ``think_cycle_error`` with the stage and reason."""
    runtime_id = begun.runtime.id
    leases.hold(conn, runtime_id, lease.owner, now_ms=_now_ms(), lease_ms=lease.lease_ms)
    inbox.release(conn, begun.message.id)
    wake_stamps.bump(conn, begun.runtime.project_id)  # pending again (the wake counts it)
    runtime_service.stamp_work(conn, runtime_id)
    runtime_service.append_event(
        conn,
        runtime_id,
        "think_cycle_error",
        {
            "message_id": begun.message.id,
            "strand_id": begun.strand_id,
            "stage": failure.stage,
            "reason": failure.reason,
        },
    )


__all__ = [
    "STRAND_NAME",
    "THOUGHT_FORMAT",
    "Begun",
    "CycleFailed",
    "Lease",
    "begin",
    "build_prompt",
    "fail",
    "finish",
    "provider_key",
    "runtime_strand",
    "thought_plaintext",
]
