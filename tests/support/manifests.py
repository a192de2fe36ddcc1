"""A small ADDS object published in memory: its manifest and the blocks it was cut into."""

from __future__ import annotations

from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from hearth.adds.objects import publish


class Blocks(dict[str, bytes]):
    """An in-memory block sink for ``publish``."""

    def put(self, cid: str, data: bytes) -> None:
        self[cid] = data


def manifest_bytes(size: int = 100) -> tuple[Any, Blocks]:
    blocks = Blocks()
    published = publish(
        bytes(range(256)) * (size // 256) + b"x" * (size % 256),
        blocks,
        key=Ed25519PrivateKey.generate(),
        publisher_id="did:example:wren",
        object_id="notes",
        created_at=1_795_000_000,
        chunk_size=64,
    )
    return published, blocks
