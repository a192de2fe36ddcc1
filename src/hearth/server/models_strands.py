"""Request and response bodies of identity keys, strands and thoughts, and the inbox
(docs/strands.md)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from .models import Strict, WholeNumber

# Thought plaintext is at most 64 KiB; AES-GCM adds its 16-byte tag. The base64 text of that
# many bytes is 4 * ceil(n / 3) characters.
MAX_CIPHERTEXT_BYTES = 65_536 + 16
MAX_CIPHERTEXT_B64 = 4 * -(-MAX_CIPHERTEXT_BYTES // 3)
NONCE_B64 = 16  # 12 bytes
KID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$"
MAX_INBOX_BODY = 16_384

KeyPurpose = Literal["runtime", "device"]
InboxStatus = Literal["pending", "taken", "done"]


# --- identity keys ----------------------------------------------------------------------------


class IdentityKeyCreate(Strict):
    kid: str = Field(
        pattern=KID_PATTERN,
        description="the key's label, unique per identity for ever; `primary` is the root key",
    )
    public_key: str = Field(max_length=64, description="standard base64 Ed25519 key (32 bytes)")
    purpose: KeyPurpose
    runtime_id: str | None = Field(
        default=None,
        max_length=64,
        description="for purpose `runtime`: a runtime of this project bound to this identity",
    )


class IdentityKeyView(BaseModel):
    identity_id: str
    kid: str
    public_key: str
    purpose: Literal["root", "runtime", "device"]
    runtime_id: str | None
    created_at: str | None
    revoked_at: str | None
    revoked: bool


class IdentityKeyList(BaseModel):
    identity_id: str
    items: list[IdentityKeyView]


# --- strands and thoughts ---------------------------------------------------------------------


class StrandCreate(Strict):
    identity_id: str = Field(max_length=64, description="identity UUID or DID of this project")
    name: str = Field(min_length=1, max_length=200)
    runtime_id: str | None = Field(
        default=None,
        max_length=64,
        description="a runtime bound to the same identity; its thoughts are that runtime's",
    )


class StrandView(BaseModel):
    id: str
    identity_id: str | None
    runtime_id: str | None
    name: str
    next_seq: int = Field(description="the seq the next thought must carry")
    created_at: str | None


class StrandPage(BaseModel):
    items: list[StrandView]
    next_cursor: str | None


class ThoughtCreate(Strict):
    """Ciphertext and nonce only: a plaintext field is refused (wall 7)."""

    seq: WholeNumber = Field(ge=1, le=2**62, description="must equal the strand's next_seq")
    nonce: str = Field(min_length=NONCE_B64, max_length=NONCE_B64, description="12 bytes")
    ciphertext: str = Field(
        min_length=1,
        max_length=MAX_CIPHERTEXT_B64,
        description=f"AES-256-GCM output, tag included; 16 to {MAX_CIPHERTEXT_BYTES} bytes",
    )
    signing_key_id: str = Field(
        pattern=KID_PATTERN, description="`primary` (the root key) or a registered kid"
    )
    signature: str = Field(
        max_length=88, description="Ed25519 over strand-thought-write/v1, standard base64"
    )


class ThoughtWritten(BaseModel):
    id: str
    strand_id: str
    identity_id: str | None
    runtime_id: str | None
    seq: int
    signing_key_id: str | None
    created_at: str | None
    next_seq: int


class ThoughtView(BaseModel):
    id: str
    strand_id: str
    runtime_id: str | None
    seq: int
    nonce: str
    ciphertext: str
    signing_key_id: str | None
    signature: str | None
    created_at: str | None


class ThoughtPage(BaseModel):
    strand_id: str
    items: list[ThoughtView]
    next_after_seq: int | None = Field(description="after_seq of the next page; null at the end")


# --- the inbox --------------------------------------------------------------------------------


class InboxPost(Strict):
    sender: str = Field(min_length=1, max_length=200)
    body: str = Field(min_length=1, max_length=MAX_INBOX_BODY)


class InboxRemember(Strict):
    """What a self runtime adds when it stores a message as a memory: a label to find it by."""

    key: str | None = Field(default=None, min_length=1, max_length=200)


class InboxMessage(BaseModel):
    id: str
    identity_id: str
    sender: str
    body: str
    status: InboxStatus
    taken_by: str | None
    taken_at: str | None
    done_at: str | None
    created_at: str | None


class InboxPosted(InboxMessage):
    woke_runtimes: list[str] = Field(description="idle runtimes of the identity this woke")


class InboxPage(BaseModel):
    items: list[InboxMessage]
    next_cursor: str | None
