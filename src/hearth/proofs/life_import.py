"""Importing a life into a service: the import key proof, the provider's X25519 key, and the
records of a verified archive (issue 20, docs/export.md "Import"). Pure: no I/O.

- ``import_digest``: identity-import/v1, what the root key signs to prove, fresh, that the
  caller holds it: the head's CID, the receiving service's provider X25519 key (so a proof made
  for one service is no proof for another) and the time of signing.
- ``provider_box_key``: the service's X25519 key, derived from its Ed25519 provider seed with
  HKDF-SHA256 under its own label, so it needs no storage of its own and every worker on the
  database holds the same one.
- ``life_records``: every record of every data set of an archive ``verify_life`` accepted
  (``open_data=False``), each data set opened once, through the grant made to ``box_key``, as
  its records are read; a chunk that does not open, or a data set holding another number of
  records than the index says, raises ``LifeOpenError`` (the caller's writes roll back).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import orjson
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from hearth.adds import AddsError, OpenError, b64url_encode, open_object

from .kdf import hkdf
from .life import DATA_SETS, LifeBlocks, LifeReport, parse_document
from .recipes import recipe_digest

IMPORT_CONTEXT = "identity-import/v1"
PROVIDER_BOX_INFO = b"hearth/provider-x25519/v1"
IMPORT_HEADERS = ("X-Hearth-Import-Timestamp", "X-Hearth-Import-Signature")

__all__ = [
    "IMPORT_CONTEXT",
    "IMPORT_HEADERS",
    "PROVIDER_BOX_INFO",
    "LifeOpenError",
    "LifeRecord",
    "import_digest",
    "life_records",
    "provider_box_key",
    "provider_box_public",
]

LifeRecord = tuple[str, str, dict[str, Any]]  # (data set, kind, record)


class LifeOpenError(Exception):
    """A data set of a verified archive fails as it is read: ``code`` is the verification's
    (``life.open``, ``life.records``; docs/export.md, "Verification")."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def import_digest(head_cid: str, provider_box_public: str, timestamp: str) -> bytes:
    """identity-import/v1 over the head's CID, the receiving service's X25519 key (base64url)
    and the RFC 3339 time of signing."""
    return recipe_digest(IMPORT_CONTEXT, (head_cid, provider_box_public, timestamp))


def provider_box_key(provider_key: Ed25519PrivateKey) -> X25519PrivateKey:
    """The service's X25519 key: HKDF-SHA256 of its Ed25519 seed, label ``PROVIDER_BOX_INFO``
    (independent of the signing key: knowing one public key tells nothing of the other)."""
    return X25519PrivateKey.from_private_bytes(
        hkdf(provider_key.private_bytes_raw(), PROVIDER_BOX_INFO)
    )


def provider_box_public(provider_key: Ed25519PrivateKey) -> str:
    return b64url_encode(provider_box_key(provider_key).public_key().public_bytes_raw())


def life_records(
    blocks: LifeBlocks,
    report: LifeReport,
    box_key: X25519PrivateKey,
    *,
    now: int,
    order: Sequence[str] = DATA_SETS,
) -> Iterator[LifeRecord]:
    """Each record of each data set, the data sets in ``order`` (by default ``DATA_SETS``';
    within one, as written: a strand before its thoughts), one chunk in memory at a time.
    Call only on an archive ``verify_life`` accepted with the same ``box_key``: every document,
    signature, block and grant was checked then, and the data sets are opened here, once. What
    only opening shows raises ``LifeOpenError``, at the chunk that fails or at the end of a
    data set whose count of records is not the index's: records before it were yielded, so the
    caller undoes what it did with them (an import's transaction rolls back)."""
    mine = b64url_encode(box_key.public_key().public_bytes_raw())
    for entry in sorted(report.objects, key=lambda e: order.index(e.name)):
        manifest = parse_document(blocks.get(entry.manifest))
        grant = next(
            document
            for document in (parse_document(blocks.get(cid)) for cid in entry.grants)
            if document["audience_x25519_public_key"] == mine
        )
        pending = b""
        count = 0  # as ``verify_life`` counts: the newlines
        try:
            for chunk in open_object(manifest, grant, box_key, blocks, now=now):
                count += chunk.count(b"\n")
                lines = (pending + chunk).split(b"\n")
                pending = lines.pop()
                for line in lines:
                    if line:
                        yield _record(entry.name, line)
        except OpenError as exc:
            raise LifeOpenError("life.open", f"{entry.name} does not open: {exc.code}") from None
        except AddsError as exc:
            raise LifeOpenError("life.open", f"{entry.name} does not open: {exc}") from None
        if pending:
            yield _record(entry.name, pending)
        if count != entry.records:
            said = f"{entry.name} holds {count} records, the index says {entry.records}"
            raise LifeOpenError("life.records", said)


def _record(name: str, line: bytes) -> LifeRecord:
    # orjson: strict UTF-8 JSON (RFC 8259), a third of json.loads' time over an import's
    # hundreds of thousands of lines (docs/performance.md); its error is a ValueError.
    value = orjson.loads(line)
    if not isinstance(value, dict) or not isinstance(value.get("record"), dict):
        raise ValueError(f"a line of {name} is not a record")
    return name, str(value.get("kind")), value["record"]
