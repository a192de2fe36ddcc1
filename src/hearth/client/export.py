"""Export an identity's life: every data set fetched through the SDK's listings, written as
ADDS objects into one CAR v1 file (``hearth.proofs.life`` composes it, ``hearth.adds.car``
frames it). The export is made where the root key is: on the owner's machine.

Memory stays bounded: each listing is read page by page and each record goes straight into
the object being published, which seals it chunk by chunk into the file; what is kept is the
chunk lists and the set of CIDs already written (36 bytes a block).
"""

from __future__ import annotations

import base64
import dataclasses
import io
import json
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, BinaryIO

from hearth.adds.car import CarIndex, CarSplice, CarWriter
from hearth.proofs.life import (
    DATA_SETS,
    LifeReport,
    LifeWriter,
    add_reader,
    grant_reader,
    verify_life,
)

from .errors import HearthError

if TYPE_CHECKING:
    from hearth.proofs.key_types import X25519PrivateKey

    from .migration import Imported
    from .mnemonic_keys import IdentityKeys
    from .sdk import HearthClient

# Threads sealing chunks, as ``hearth adds publish`` has by default: AES-GCM and SHA-256 release
# the GIL, and the CAR writer takes each block from the thread that sealed it (docs/performance.md).
EXPORT_WORKERS = 4

__all__ = [
    "EXPORT_WORKERS",
    "Exported",
    "add_export_reader",
    "export_life",
    "import_export",
    "verify_export",
]


@dataclass(frozen=True)
class Exported:
    """What an export wrote: the head's CID (the CAR's root), blocks and bytes, and per data set
    its record count and plaintext size."""

    root: str
    did: str
    identity_id: str
    blocks: int
    bytes: int
    records: dict[str, int]
    sizes: dict[str, int]

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def _default(value: object) -> object:
    if isinstance(value, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(value)).decode("ascii")
    return str(value)


def _line(kind: str, record: object) -> bytes:
    """One record as a JSON line: its SDK dataclass's fields, under ``kind``."""
    fields = dataclasses.asdict(record) if dataclasses.is_dataclass(record) else record  # type: ignore[arg-type]
    text = json.dumps({"kind": kind, "record": fields}, default=_default, sort_keys=True)
    return text.encode("utf-8") + b"\n"


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode("ascii")


class _DataSets:
    """One generator of JSON lines per data set, reading through ``client``, each listing in
    the largest pages its route allows (a request costs more than a record)."""

    def __init__(
        self, client: HearthClient, identity_id: str, did: str, keys: IdentityKeys
    ) -> None:
        self.client = client
        self.identity_id = identity_id
        self.did = did
        self.keys = keys

    def identity(self) -> Iterator[bytes]:
        yield _line(
            "identity",
            {
                "identity_id": self.identity_id,
                "did": self.did,
                "service": self.client.base_url.rstrip("/"),
                "root_public_key": _b64(self.keys.signing_public_raw),
                "box_public_key": _b64(self.keys.box_public_raw),
            },
        )
        # The identity as its wake shows it (name, level, form, capabilities...), with its own
        # fields besides (language, sponsor, elevated_at, metadata...): an import recreates
        # it from this.
        wake = self.client.wake(identity_id=self.identity_id)
        agents = wake.get("you", {}).get("agents", []) if isinstance(wake, dict) else []
        fields = self.client.identity_profile(self.identity_id)
        for agent in agents:
            if isinstance(agent, dict) and agent.get("id") == self.identity_id:
                yield _line("profile", {**agent, **fields})
        yield _line("pulse", self.client.pulse(self.identity_id))
        for key in self.client.identity_keys(self.identity_id):
            yield _line("identity_key", key)

    def expression(self) -> Iterator[bytes]:
        yield _line("expression", self.client.expression(self.identity_id))

    def memories(self) -> Iterator[bytes]:
        # The listing gives each chain's current version, with provenance and attestations;
        # a version that supersedes another has a history (every version, oldest first),
        # read with one request more. Most memories have none, so most cost no request of
        # their own.
        for untrusted in (False, True):
            for memory in self.client.iter_memories(
                agent_id=self.identity_id, untrusted=untrusted, limit=200
            ):
                if memory.supersedes is None:
                    yield _line("memory", memory)
                    continue
                for version in self.client.memory_history(memory.id):
                    yield _line("memory", version)

    def attestations(self) -> Iterator[bytes]:
        for attestation in self.client.iter_attestations(identity_id=self.identity_id, limit=1000):
            yield _line("attestation", attestation)

    def chronicle(self) -> Iterator[bytes]:
        for entry in self.client.iter_chronicle(agent_id=self.identity_id, limit=1000):
            yield _line("chronicle", entry)

    def strands(self) -> Iterator[bytes]:
        for strand in self.client.iter_strands(identity_id=self.identity_id, limit=200):
            yield _line("strand", strand)
            # No K_master here: the thoughts are written as the service stores them, sealed.
            for thought in self.client.iter_thoughts(strand.id, limit=100):
                yield _line("thought", thought)

    def runtimes(self) -> Iterator[bytes]:
        for runtime in self.client.iter_runtimes(
            identity_id=self.identity_id, include_deleted=True, limit=200
        ):
            yield _line("runtime", runtime)
            for event in self.client.iter_runtime_events(runtime.id, limit=200):
                yield _line("runtime_event", event)

    def wallets(self) -> Iterator[bytes]:
        for wallet in self.client.wallets():
            if wallet.identity_id != self.identity_id:
                continue
            yield _line("wallet", wallet)
            for entry in self.client.iter_wallet_ledger(wallet.id, limit=1000):
                yield _line("ledger_entry", entry)

    def templates(self) -> Iterator[bytes]:
        for listed in self.client.iter_templates(limit=200):
            if listed.mine and not listed.built_in:
                yield _line("template", self.client.template(listed.id))

    def inbox(self) -> Iterator[bytes]:
        for message in self.client.iter_inbox(self.identity_id, limit=200):
            yield _line("inbox_message", message)

    def key_backup(self) -> Iterator[bytes]:
        try:
            backup = self.client.backup_pull(self.identity_id)
        except HearthError as exc:
            if exc.status == 404:  # no backup kept: an empty data set, not a failure
                return
            raise
        yield _line("key_backup", backup)

    def lines(self, name: str) -> Iterable[bytes]:
        generator: Callable[[], Iterator[bytes]] = getattr(self, name)
        return generator()


def export_life(
    client: HearthClient,
    out: BinaryIO,
    *,
    keys: IdentityKeys,
    identity_id: str,
    did: str,
    exported_at: int | None = None,
    chunk_size: int = 1 << 20,
    workers: int = EXPORT_WORKERS,
    on_progress: Callable[[str, int], None] | None = None,
) -> Exported:
    """Write the identity's life to ``out`` (a seekable binary file) as a CAR v1 whose root is
    the head signed by ``keys.signing`` (the root key). ``on_progress(data set, bytes so far)``
    is called as each chunk is written. ``ValueError`` when ``keys`` are not the identity's
    root key as the service records it (nothing is written then)."""
    now = int(time.time()) if exported_at is None else exported_at
    # An export is signed by the identity's root key; refuse to sign one with another key
    # before anything is written (a home's keys of another identity, an unrooted identity).
    authority = client.authority(identity_id)
    recorded = authority.root_public_key or ""
    try:
        same_key = base64.b64decode(recorded, validate=True) == keys.signing_public_raw
    except ValueError:
        same_key = False
    if not same_key or authority.did != did:
        raise ValueError(
            f"these keys are not the root key of {did}: the service names "
            f"{authority.root_public_key or 'no root key'}"
        )
    car = CarWriter(out)
    current = {"name": DATA_SETS[0]}

    def progress(done: int) -> None:
        if on_progress is not None:
            on_progress(current["name"], done)

    writer = LifeWriter(
        car,
        key=keys.signing,
        did=did,
        box_public=keys.box_public_raw,
        exported_at=now,
        chunk_size=chunk_size,
        workers=workers,
        on_progress=progress,
    )
    sets = _DataSets(client, identity_id, did, keys)
    for name in DATA_SETS:
        current["name"] = name
        writer.add(name, sets.lines(name))
    current["name"] = "index"
    service = client.base_url.rstrip("/")
    head = writer.finish({"identity_id": identity_id, "service": service})
    car.finish([head.cid])
    return Exported(
        root=head.cid,
        did=did,
        identity_id=identity_id,
        blocks=car.blocks,
        bytes=car.bytes,
        records={name: entry.records for name, entry in writer.objects.items()},
        sizes={name: entry.size for name, entry in writer.objects.items()},
    )


def verify_export(
    stream: BinaryIO,
    *,
    box_key: X25519PrivateKey | None = None,
    root_public_key: str | None = None,
    now: int | None = None,
) -> LifeReport:
    """Check an exported life offline (``hearth.proofs.life.verify_life``): every block against
    its CID, every document and signature, the index complete; with ``box_key`` (the owner's
    ``keys.box``, or a reader's X25519 key with grants of its own) every object opens. Raises
    ``hearth.adds.car.CarError`` only when the file is not a CAR at all."""
    index = CarIndex.scan(stream)
    report = LifeReport()
    for problem in index.problems:
        report.refuse(problem.code, f"{problem.message} (at byte {problem.offset})", problem.cid)
    when = int(time.time()) if now is None else now
    return verify_life(
        index, now=when, box_key=box_key, root_public_key=root_public_key, report=report
    )


def add_export_reader(
    source: BinaryIO,
    out: BinaryIO,
    *,
    keys: IdentityKeys,
    audience: str,
    audience_public: bytes,
    now: int | None = None,
) -> str:
    """Copy the export in ``source`` to ``out`` (seekable) with every object also granted to
    ``audience``'s X25519 key (a service's provider key, for an import), under a new head one
    sequence higher signed by ``keys.signing``; returns the new head's CID. ``ValueError`` when
    the export does not verify with ``keys`` or is another identity's."""
    index = CarIndex.scan(source)
    if index.problems:
        first = index.problems[0]
        raise ValueError(f"the export does not verify: {first.code}: {first.message}")
    car = CarWriter(out)
    head = add_reader(
        index,
        car,
        key=keys.signing,
        box_key=keys.box,
        audience=audience,
        audience_public=audience_public,
        now=int(time.time()) if now is None else now,
    )
    car.finish([head.cid])
    return head.cid


def import_export(
    target: HearthClient,
    source: BinaryIO,
    *,
    keys: IdentityKeys,
    display_name: str | None = None,
    now: int | None = None,
) -> Imported:
    """Import the export in ``source`` (a seekable binary file) into ``target``'s project: the
    export granted also to the target's X25519 key (``grant_reader``: a grant per object, a new
    index and head, signed by ``keys.signing``), then the import with a fresh key proof.

    No copy is made: the body is the export's own data blocks, read from ``source`` as they are
    sent, spliced with the few new blocks (``CarSplice``), so memory stays bounded and the
    bytes are read once. The export is checked here (every block's hash, every document and
    signature); the objects are not opened here, since the service opens every one of them
    before it writes anything."""
    box = target.provider_box_key()
    audience_public = base64.urlsafe_b64decode(
        box.x25519_public_key + "=" * (-len(box.x25519_public_key) % 4)
    )
    blocks = CarIndex.scan(source)
    if blocks.problems:
        first = blocks.problems[0]
        raise ValueError(f"the export does not verify: {first.code}: {first.message}")
    added = io.BytesIO()
    car = CarWriter(added)
    made = grant_reader(
        blocks,
        car,
        key=keys.signing,
        box_key=keys.box,
        audience=f"provider:{box.ed25519_public_key}",
        audience_public=audience_public,
        now=int(time.time()) if now is None else now,
        open_objects=False,
    )
    car.finish([made.head.cid])
    return target.import_life(
        CarSplice(added.getvalue(), blocks, made.kept),  # type: ignore[arg-type]
        root_key=keys.signing,
        box_public=box.x25519_public_key,
        display_name=display_name,
    )
