"""The object layer's cast and props: people with fixed keys, an in-memory block store, and
publish, grant and read as the object-layer tests call them."""

from __future__ import annotations

import hashlib
import random
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from hearth.adds import (
    OpenError,
    Published,
    Right,
    SignedDocument,
    cid_for_bytes,
    issue_grant,
    open_object,
    publish,
)

NOW = 1_795_000_000
DAY = 86_400
CHUNK = 1024
ALICE, BOB, CAROL, DAVE = (
    "did:example:alice",
    "did:example:bob",
    "did:example:carol",
    "did:example:dave",
)


def signing_key(name: str) -> Ed25519PrivateKey:
    return Ed25519PrivateKey.from_private_bytes(hashlib.sha256(f"ed/{name}".encode()).digest())


def box_key(name: str) -> X25519PrivateKey:
    return X25519PrivateKey.from_private_bytes(hashlib.sha256(f"x/{name}".encode()).digest())


SIGNING = {name: signing_key(name) for name in (ALICE, BOB, CAROL, DAVE)}


BOXES = {name: box_key(name) for name in (ALICE, BOB, CAROL, DAVE)}


def box_public(name: str) -> bytes:
    return BOXES[name].public_key().public_bytes_raw()


class MemoryStore:
    """A dict of blocks: the BlockSink and BlockSource contracts, and a log of fetches."""

    def __init__(self) -> None:
        self.blocks: dict[str, bytes] = {}
        self.fetched: list[str] = []

    def put(self, cid: str, data: bytes) -> None:
        assert cid == cid_for_bytes(data)
        self.blocks[cid] = data

    def get(self, cid: str) -> bytes:
        self.fetched.append(cid)
        return self.blocks[cid]


def pseudo_random(size: int, seed: int = 0) -> bytes:
    return random.Random(seed).randbytes(size)


def do_publish(
    source: Any, store: MemoryStore | None = None, *, chunk_size: int = CHUNK, **options: Any
) -> tuple[Published, MemoryStore]:
    store = MemoryStore() if store is None else store
    published = publish(
        source,
        store,
        key=SIGNING[ALICE],
        publisher_id=ALICE,
        object_id="object-1",
        created_at=NOW,
        chunk_size=chunk_size,
        **options,
    )
    return published, store


def grant_for(
    published: Published | SignedDocument,
    content_key: bytes | None = None,
    *,
    issuer: str = ALICE,
    audience: str = BOB,
    rights: Sequence[Right | str] = (Right.READ,),
    issued_at: int = NOW - 10,
    expires_at: int = NOW + DAY,
    **options: Any,
) -> SignedDocument:
    manifest = published.manifest if isinstance(published, Published) else published
    key = published.content_key if isinstance(published, Published) else content_key
    assert key is not None
    return issue_grant(
        manifest=manifest,
        content_key=key,
        key=SIGNING[issuer],
        issuer_id=issuer,
        grant_id=f"grant-{issuer}-{audience}",
        audience=audience,
        audience_x25519_public_key=box_public(audience),
        rights=rights,
        issued_at=issued_at,
        expires_at=expires_at,
        **options,
    )


def read_all(
    published: Published | SignedDocument,
    grant: Any,
    store: MemoryStore,
    reader: str = BOB,
    **options: Any,
) -> bytes:
    manifest = published.manifest if isinstance(published, Published) else published
    now = options.pop("now", NOW)
    return b"".join(open_object(manifest, grant, BOXES[reader], store, now=now, **options))


def _drain(call: Any, *args: Any, **kwargs: Any) -> None:
    result = call(*args, **kwargs)
    if isinstance(result, Iterator):
        for _ in result:
            pass


def refusal(call: Any, *args: Any, **kwargs: Any) -> OpenError:
    """The OpenError raised by ``call`` (or by iterating what it returns)."""
    with pytest.raises(OpenError) as excinfo:
        _drain(call, *args, **kwargs)
    return excinfo.value
