"""An identity's life as ADDS objects: how an export is composed, and how one is verified.

One recipe, shared by the client (``hearth export`` writes it, ``hearth export verify`` checks
it) and the service (an import checks it before writing anything). Pure: blocks go to a
``BlockSink`` and come from a ``BlockSource`` the caller passes in (a CAR file, in practice).

The shape (``docs/export.md``):

- each data set (``DATA_SETS``) is one ADDS object whose plaintext is JSON Lines, one record a
  line; its manifest's publisher is the identity (its DID and root Ed25519 key), signed by the
  root key, ``object_id`` ``hearth-life/<name>``, and a grant gives its content key to the
  identity's own X25519 box key;
- an index object (``hearth-life/index``) lists them: its plaintext is the index (canonical
  JSON), its manifest's ``metadata.hearth_life`` the same index in the clear (so completeness is
  checked without keys), its provenance parents the data sets' manifests;
- one ``head`` (``head_id`` ``hearth-life``, sequence 0) signed by the root key names the index
  manifest; it is the CAR's root. Documents are blocks too, named by the CID of their bytes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from hearth.adds import (
    AddsError,
    BlockSink,
    OpenError,
    Right,
    SignedDocument,
    b64url_encode,
    build_head,
    canonicalize,
    issue_grant,
    open_object,
    parse,
    publish,
    unwrap_grant,
    validate,
)

__all__ = [
    "DATA_SETS",
    "GRANT_LIFETIME",
    "HEAD_ID",
    "INDEX_NAME",
    "LIFE_FORMAT",
    "LifeBlocks",
    "LifeObject",
    "LifeProblem",
    "LifeReport",
    "LifeWriter",
    "ReaderGrants",
    "add_reader",
    "grant_reader",
    "object_id",
    "verify_life",
]

LIFE_FORMAT = "hearth-life/v1"
HEAD_ID = "hearth-life"
INDEX_NAME = "index"
MEDIA_TYPE = "application/jsonl"
# What an export holds, one object each, in the order they are written.
DATA_SETS = (
    "identity",
    "expression",
    "memories",
    "attestations",
    "chronicle",
    "strands",
    "runtimes",
    "wallets",
    "templates",
    "inbox",
    "key_backup",
)
_BATCH = 64 << 10
# An archive is read years later: its owner's grants last a century (uint53 seconds allow it).
GRANT_LIFETIME = 100 * 365 * 86_400


def object_id(name: str) -> str:
    return f"{HEAD_ID}/{name}"


@runtime_checkable
class SupportsRead(Protocol):
    """A binary file, read in blocks."""

    def read(self, size: int, /) -> bytes: ...


@dataclass(frozen=True)
class LifeObject:
    """One data set of the index: its manifest, the grants to it, and what it holds."""

    name: str
    manifest: str
    grants: tuple[str, ...]
    records: int
    size: int

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "manifest": self.manifest,
            "grants": list(self.grants),
            "records": self.records,
            "size": self.size,
        }


class LifeWriter:
    """Publishes each data set into ``sink`` (a ``CarWriter``, or any ``BlockSink``), then the
    index and the head. ``objects`` is what the index will list, by name."""

    def __init__(
        self,
        sink: BlockSink,
        *,
        key: Ed25519PrivateKey,
        did: str,
        box_public: bytes,
        exported_at: int,
        chunk_size: int = 1 << 20,
        workers: int = 1,
        on_progress: Callable[[int], None] | None = None,
    ) -> None:
        self._sink = sink
        self._key = key
        self.did = did
        self._box_public = box_public
        self.exported_at = exported_at
        self._chunk_size = chunk_size
        self._workers = workers
        self._on_progress = on_progress
        self._done = 0
        self.objects: dict[str, LifeObject] = {}
        # Readers besides the owner, as (id, X25519 public key): each object written from now
        # on (the index included) is granted to them too.
        self.audiences: list[tuple[str, bytes]] = []

    def _put(self, document: SignedDocument) -> None:
        self._sink.put(document.cid, document.canonical)

    def _publish(
        self, name: str, source: Iterable[bytes] | SupportsRead | bytes, **extra: Any
    ) -> LifeObject:
        records = 0
        size_before = self._done

        def counted(lines: Iterable[bytes] | SupportsRead) -> Iterator[bytes]:
            # Records are small; handing publish one piece per record would cost a call per
            # record in its chunker, so they go in batches of about 64 KiB. A file of JSON lines
            # is read in blocks, its records counted by their newlines.
            nonlocal records
            if isinstance(lines, SupportsRead):
                while block := lines.read(_BATCH * 16):
                    records += block.count(b"\n")
                    yield block
                return
            batch = bytearray()
            for line in lines:
                records += 1
                batch += line
                if len(batch) >= _BATCH:
                    yield bytes(batch)
                    batch.clear()
            if batch:
                yield bytes(batch)

        def progress(stored: int) -> None:
            self._done = size_before + stored
            if self._on_progress is not None:
                self._on_progress(self._done)

        published = publish(
            source if isinstance(source, bytes) else counted(source),
            self._sink,
            key=self._key,
            publisher_id=self.did,
            object_id=object_id(name),
            created_at=self.exported_at,
            chunk_size=self._chunk_size,
            media_type=MEDIA_TYPE if name != INDEX_NAME else "application/json",
            on_progress=progress,
            workers=self._workers,
            **extra,
        )
        self._put(published.manifest)
        grants = [
            self.grant(name, published.manifest, published.content_key, audience, public)
            for audience, public in [(self.did, self._box_public), *self.audiences]
        ]
        size = published.manifest.document["plaintext"]["size"]
        return LifeObject(name, published.cid, tuple(g.cid for g in grants), records, size)

    def grant(
        self,
        name: str,
        manifest: SignedDocument | Mapping[str, Any],
        content_key: bytes,
        audience: str,
        public: bytes,
    ) -> SignedDocument:
        """A grant of one object's content key to ``audience``'s X25519 key, signed by the root
        key and written into the sink; the owner's is ``<object_id>/owner``."""
        suffix = "owner" if audience == self.did and public == self._box_public else audience
        grant = issue_grant(
            manifest=manifest,
            content_key=content_key,
            key=self._key,
            issuer_id=self.did,
            grant_id=f"{object_id(name)}/{suffix}",
            audience=audience,
            audience_x25519_public_key=public,
            rights=[Right.READ],
            issued_at=self.exported_at,
            expires_at=self.exported_at + GRANT_LIFETIME,
            purpose="a copy of an exported life",
        )
        self._put(grant)
        return grant

    def add(self, name: str, lines: Iterable[bytes] | SupportsRead) -> LifeObject:
        """Publish one data set: ``lines`` are its records, each one JSON line ending in
        ``\\n``, or a binary file of such lines (streamed: nothing is kept but the chunk
        list)."""
        if name not in DATA_SETS:
            raise ValueError(f"{name!r} is not a data set of a life")
        if name in self.objects:
            raise ValueError(f"{name!r} is already written")
        written = self._publish(name, lines)
        self.objects[name] = written
        return written

    def index(self, identity: Mapping[str, Any]) -> dict[str, Any]:
        """The index: ``identity`` (identity_id, service...) beside the root facts and objects."""
        return {
            "format": LIFE_FORMAT,
            **identity,
            "did": self.did,
            "root_public_key": b64url_encode(self._key.public_key().public_bytes_raw()),
            "box_public_key": b64url_encode(self._box_public),
            "exported_at": self.exported_at,
            "objects": [self.objects[name].to_json() for name in sorted(self.objects)],
        }

    def finish(
        self, identity: Mapping[str, Any], *, sequence: int = 0, parents: Sequence[str] = ()
    ) -> SignedDocument:
        """Publish the index object and sign the head; returns the head (the CAR's root). A
        head that follows an earlier export's names it in ``parents``, one sequence higher."""
        index = self.index(identity)
        listed = self._publish(
            INDEX_NAME,
            canonicalize(index),
            metadata={"hearth_life": index},
            provenance_parents=sorted({entry["manifest"] for entry in index["objects"]}) or None,
        )
        head = build_head(
            key=self._key,
            issuer_id=self.did,
            head_id=HEAD_ID,
            sequence=sequence,
            manifest_cid=listed.manifest,
            parents=list(parents),
            updated_at=self.exported_at,
        )
        self._put(head)
        return head


# ---- verification -------------------------------------------------------------------------------


class LifeBlocks(Protocol):
    """What a verifier reads: the archive's roots and its good blocks (``CarIndex``)."""

    roots: list[str]

    def __contains__(self, cid: object) -> bool: ...

    def __iter__(self) -> Iterator[str]: ...

    def get(self, cid: str) -> bytes: ...


@dataclass(frozen=True)
class LifeProblem:
    code: str
    message: str
    cid: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, "cid": self.cid}


@dataclass
class LifeReport:
    """What was checked and what failed; ``ok`` only when nothing did."""

    root: str | None = None
    did: str | None = None
    identity_id: str | None = None
    root_public_key: str | None = None
    service: str | None = None
    blocks: int = 0
    documents: int = 0
    signatures: int = 0
    chunks: int = 0
    objects: list[LifeObject] = field(default_factory=list)
    opened: int | None = None
    opened_bytes: int = 0
    problems: list[LifeProblem] = field(default_factory=list)
    index: dict[str, Any] | None = None

    @property
    def ok(self) -> bool:
        return not self.problems

    def refuse(self, code: str, message: str, cid: str | None = None) -> None:
        self.problems.append(LifeProblem(code, message, cid))

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "root": self.root,
            "did": self.did,
            "identity_id": self.identity_id,
            "root_public_key": self.root_public_key,
            "service": self.service,
            "checked": {
                "blocks": self.blocks,
                "documents": self.documents,
                "signatures": self.signatures,
                "chunks": self.chunks,
                "objects": len(self.objects),
                "opened": self.opened,
                "opened_bytes": self.opened_bytes,
            },
            "objects": [entry.to_json() for entry in self.objects],
            "problems": [problem.to_json() for problem in self.problems],
        }


class _Verifier:
    def __init__(self, blocks: LifeBlocks, report: LifeReport) -> None:
        self.blocks = blocks
        self.report = report
        self.referenced: set[str] = set()
        self.root_key: str | None = None

    def document(self, cid: str, kind: str, what: str) -> dict[str, Any] | None:
        """A valid, canonical document of ``kind`` at ``cid`` signed by the root key."""
        self.referenced.add(cid)
        if cid not in self.blocks:
            self.report.refuse("life.block_missing", f"{what}: the archive lacks {cid}", cid)
            return None
        result = validate(self.blocks.get(cid), require_canonical=True)
        self.report.documents += 1
        if not result.valid or not isinstance(result.document, dict):
            codes = ", ".join(sorted({problem.code for problem in result.errors}))
            self.report.refuse("life.document_invalid", f"{what} is not valid ({codes})", cid)
            return None
        if result.kind != kind:
            self.report.refuse("life.kind", f"{what} is a {result.kind}, not a {kind}", cid)
            return None
        document: dict[str, Any] = result.document
        signer = document["signature"]["public_key"]
        if self.root_key is not None and signer != self.root_key:
            self.report.refuse("life.signer", f"{what} is signed by another key", cid)
            return None
        self.report.signatures += 1
        return document

    def chunks(self, manifest: Mapping[str, Any], what: str) -> None:
        for chunk in manifest["chunks"]:
            cid = chunk["cid"]
            self.referenced.add(cid)
            self.report.chunks += 1
            if cid not in self.blocks:
                self.report.refuse("life.block_missing", f"{what}: chunk {chunk['index']}", cid)


def _read_index(value: object) -> dict[str, Any] | None:
    if not isinstance(value, dict) or value.get("format") != LIFE_FORMAT:
        return None
    objects = value.get("objects")
    if not isinstance(objects, list):
        return None
    for entry in objects:
        if not (
            isinstance(entry, dict)
            and isinstance(entry.get("name"), str)
            and isinstance(entry.get("manifest"), str)
            and isinstance(entry.get("grants"), list)
            and all(isinstance(grant, str) for grant in entry["grants"])
            and isinstance(entry.get("records"), int)
            and isinstance(entry.get("size"), int)
        ):
            return None
    return value


def verify_life(
    blocks: LifeBlocks,
    *,
    now: int,
    box_key: X25519PrivateKey | None = None,
    root_public_key: str | None = None,
    report: LifeReport | None = None,
    open_data: bool = True,
) -> LifeReport:
    """Check an archive: one root, a head signed by the identity's root key, an index manifest
    signed by it naming every data set, each data set's manifest and grants signed by it and
    every chunk present, no block outside the index; with ``box_key`` (the owner's X25519 key,
    or a provider's with a grant of its own) every object also opens and its records are
    counted. ``root_public_key`` (base64url) pins the key the archive must be signed by.

    ``open_data=False`` (an import, which opens each data set once, as it writes it, with
    ``open_records``): with ``box_key``, each data set's grant for that key is checked as far
    as it goes without a chunk (the key unwraps and is the manifest's), and only the index
    object is opened; the data sets' chunks and record counts are left to the reader.

    Block hashes are checked as the blocks are read (``CarIndex.scan``); its problems belong
    in ``report`` beforehand. Never raises on a bad archive: every problem is in the report."""
    report = report or LifeReport()
    report.blocks = sum(1 for _ in blocks)
    check = _Verifier(blocks, report)
    if len(blocks.roots) != 1:
        report.refuse("life.roots", f"the archive names {len(blocks.roots)} roots, not one")
        return report
    root = report.root = blocks.roots[0]
    head = check.document(root, "head", "the head")
    if head is None:
        return report
    check.root_key = head["issuer"]["ed25519_public_key"]
    report.did = head["issuer"]["id"]
    report.root_public_key = check.root_key
    if root_public_key is not None and check.root_key != root_public_key:
        report.refuse("life.signer", "the head is not signed by the identity's root key", root)
        return report
    if head["head_id"] != HEAD_ID:
        report.refuse("life.head", f"the head's head_id is not {HEAD_ID!r}", root)
    index_manifest = check.document(head["manifest_cid"], "manifest", "the index manifest")
    if index_manifest is None:
        return report
    index = _read_index(index_manifest.get("metadata", {}).get("hearth_life"))
    if index is None:
        report.refuse("life.index", "the index manifest holds no index", head["manifest_cid"])
        return report
    report.index = index
    report.identity_id = index.get("identity_id")
    report.service = index.get("service")
    if (
        index_manifest["publisher"]["id"] != report.did
        or index.get("did") != report.did
        or index.get("root_public_key") != check.root_key
        or index_manifest["object_id"] != object_id(INDEX_NAME)
    ):
        report.refuse(
            "life.index", "the index names another identity or object", head["manifest_cid"]
        )
    check.chunks(index_manifest, "the index")
    manifests = {INDEX_NAME: index_manifest}
    grants: dict[str, list[dict[str, Any]]] = {INDEX_NAME: []}
    listed = [
        LifeObject(e["name"], e["manifest"], tuple(e["grants"]), e["records"], e["size"])
        for e in index["objects"]
    ]
    names = [entry.name for entry in listed]
    for name in DATA_SETS:
        if name not in names:
            report.refuse("life.object_missing", f"the index omits the data set {name!r}")
    for entry in listed:
        if entry.name not in DATA_SETS or names.count(entry.name) > 1:
            report.refuse("life.index", f"the index lists {entry.name!r} wrongly")
            continue
        manifest = check.document(entry.manifest, "manifest", f"{entry.name}'s manifest")
        if manifest is None:
            continue
        if (
            manifest["object_id"] != object_id(entry.name)
            or manifest["publisher"]["id"] != report.did
        ):
            report.refuse(
                "life.index", f"{entry.name}'s manifest is another object", entry.manifest
            )
            continue
        if manifest["plaintext"]["size"] != entry.size:
            report.refuse(
                "life.index", f"{entry.name}'s size is not its manifest's", entry.manifest
            )
        check.chunks(manifest, entry.name)
        manifests[entry.name] = manifest
        grants[entry.name] = []
        report.objects.append(entry)
    parents = sorted(index_manifest.get("provenance", {}).get("parents", []))
    if parents != sorted(entry.manifest for entry in listed):
        report.refuse("life.index", "the index manifest's parents are not the listed manifests")
    # The index's own grants are not listed in it (it cannot name itself): they are every grant
    # of the archive for its manifest, found among the blocks that are left.
    for entry in listed:
        for cid in entry.grants:
            grant = check.document(cid, "grant", f"a grant of {entry.name}")
            if grant is not None and entry.name in manifests:
                if grant["manifest_cid"] != entry.manifest:
                    report.refuse(
                        "life.grant", f"a grant of {entry.name} names another manifest", cid
                    )
                else:
                    grants[entry.name].append(grant)
    index_cid = head["manifest_cid"]
    for cid in blocks:
        if cid in check.referenced:
            continue
        grant = _index_grant(blocks.get(cid), index_cid)
        if grant is not None:
            document = check.document(cid, "grant", "a grant of the index")
            if document is not None:
                grants[INDEX_NAME].append(document)
    unlisted = [cid for cid in blocks if cid not in check.referenced]
    if unlisted:
        report.refuse(
            "life.block_unlisted",
            f"{len(unlisted)} blocks are named by nothing in the index (first: {unlisted[0]})",
            unlisted[0],
        )
    if box_key is not None:
        _open_all(blocks, report, manifests, grants, box_key, now, index, open_data=open_data)
    return report


def parse_document(data: bytes) -> dict[str, Any]:
    """A document already validated by ``verify_life``, parsed again to read its members."""
    value = parse(data).value
    if not isinstance(value, dict):
        raise ValueError("not a document")
    return value


def _index_grant(data: bytes, index_cid: str) -> dict[str, Any] | None:
    """A block that is a grant for the index manifest (a cheap look before validating it)."""
    if not data.startswith(b"{") or index_cid.encode() not in data:
        return None
    result = validate(data)
    document = result.document
    if result.valid and result.kind == "grant" and isinstance(document, dict):
        return document if document["manifest_cid"] == index_cid else None
    return None


def _open_all(  # noqa: PLR0917 - one private step of verify_life, called once
    blocks: LifeBlocks,
    report: LifeReport,
    manifests: Mapping[str, Mapping[str, Any]],
    grants: Mapping[str, list[dict[str, Any]]],
    box_key: X25519PrivateKey,
    now: int,
    index: Mapping[str, Any],
    *,
    open_data: bool,
) -> None:
    mine = b64url_encode(box_key.public_key().public_bytes_raw())
    records = {entry.name: entry.records for entry in report.objects}
    report.opened = 0
    for name, manifest in manifests.items():
        usable = [g for g in grants.get(name, []) if g["audience_x25519_public_key"] == mine]
        if not usable:
            report.refuse("life.no_grant", f"no grant of {name} is for this key")
            continue
        lines = 0
        content = bytearray() if name == INDEX_NAME else None
        try:
            opened = open_object(manifest, usable[0], box_key, blocks, now=now)
            if content is None and not open_data:
                continue  # authorised (every check without a chunk); its reader opens it
            for chunk in opened:
                lines += chunk.count(b"\n")
                report.opened_bytes += len(chunk)
                if content is not None:
                    content += chunk
        except OpenError as exc:
            report.refuse("life.open", f"{name} does not open: {exc.code}")
            continue
        except AddsError as exc:
            report.refuse("life.open", f"{name} does not open: {exc}")
            continue
        if content is not None and bytes(content) != canonicalize(dict(index)):
            report.refuse("life.index", "the index object's content is not the signed index")
            continue
        if content is None and lines != records.get(name):
            report.refuse(
                "life.records", f"{name} holds {lines} records, the index says {records.get(name)}"
            )
            continue
        report.opened += 1


# ---- a reader added to an export ----------------------------------------------------------------


@dataclass(frozen=True)
class ReaderGrants:
    """What ``grant_reader`` made: the new head, and the blocks of the export a copy keeps (the
    data sets' manifests, grants and chunks; the old head and index are left behind)."""

    head: SignedDocument
    kept: frozenset[str]


def grant_reader(
    blocks: LifeBlocks,
    sink: BlockSink,
    *,
    key: Ed25519PrivateKey,
    box_key: X25519PrivateKey,
    audience: str,
    audience_public: bytes,
    now: int,
    open_objects: bool = True,
) -> ReaderGrants:
    """Grant every object of an export also to ``audience`` (its X25519 key
    ``audience_public``: a service's provider key, for an import), writing into ``sink`` only
    the new blocks: a grant per object, a new index object (granted to both) and a head one
    sequence higher whose parent is the export's head, signed by ``key``. The export's data
    blocks are unchanged (a grant wraps an object's content key, not its data), so a copy is
    ``kept`` plus these (``add_reader``), and an import can send them spliced from the export
    itself, with no copy made (``hearth.client.export.import_export``).

    The owner's keys are needed: ``box_key`` opens each object's owner grant to recover its
    content key, ``key`` (the root key the export is signed by) signs the rest. The export is
    verified first (every document, signature and block); with ``open_objects`` every object
    is also opened with ``box_key``. An importing service opens every object itself, so the
    import skips that here. A ``ValueError`` names the problems when the export does not hold,
    or when ``key`` is not its root key."""
    report = verify_life(blocks, now=now, box_key=box_key if open_objects else None)
    if not report.ok or report.index is None or report.root is None:
        problems = "; ".join(f"{p.code}: {p.message}" for p in report.problems[:5])
        raise ValueError(f"the export does not verify: {problems}")
    root_key = b64url_encode(key.public_key().public_bytes_raw())
    if root_key != report.root_public_key:
        raise ValueError("the key given is not the export's root key")
    index = report.index
    head = parse_document(blocks.get(report.root))
    owner_box = box_key.public_key().public_bytes_raw()
    writer = LifeWriter(sink, key=key, did=str(report.did), box_public=owner_box, exported_at=now)
    mine = b64url_encode(owner_box)
    kept: set[str] = set()
    for entry in report.objects:
        manifest = parse_document(blocks.get(entry.manifest))
        owners = [parse_document(blocks.get(g)) for g in entry.grants]
        owner = next(g for g in owners if g["audience_x25519_public_key"] == mine)
        content_key = unwrap_grant(owner, manifest, box_key, now=now)
        added = writer.grant(entry.name, manifest, content_key, audience, audience_public)
        writer.objects[entry.name] = LifeObject(
            entry.name, entry.manifest, (*entry.grants, added.cid), entry.records, entry.size
        )
        kept.update((entry.manifest, *entry.grants))
        kept.update(chunk["cid"] for chunk in manifest["chunks"])
    writer.audiences.append((audience, audience_public))
    facts: dict[str, Any] = {k: index[k] for k in ("identity_id", "service") if k in index}
    new_head = writer.finish(facts, sequence=head["sequence"] + 1, parents=[report.root])
    return ReaderGrants(new_head, frozenset(kept))


def add_reader(
    blocks: LifeBlocks,
    sink: BlockSink,
    *,
    key: Ed25519PrivateKey,
    box_key: X25519PrivateKey,
    audience: str,
    audience_public: bytes,
    now: int,
) -> SignedDocument:
    """Copy an export into ``sink`` with every object also granted to ``audience`` and return
    the new head (``grant_reader``, every object opened first). The kept blocks are copied
    one at a time, in the order the source gives them; the old head and index are left behind
    (the new head supersedes them, and a block the new index does not name would make the copy
    fail verification)."""
    made = grant_reader(
        blocks,
        sink,
        key=key,
        box_key=box_key,
        audience=audience,
        audience_public=audience_public,
        now=now,
    )
    for cid in blocks:
        if cid in made.kept:
            sink.put(cid, blocks.get(cid))
    return made.head
