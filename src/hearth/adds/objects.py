"""ADDS objects: publish (encrypt, store, sign), grant (wrap the key to a reader), open (check,
unwrap, fetch, decrypt).

Pure: blocks go to and come from objects the caller passes in (``BlockSink.put``, or a
``BatchingBlockSink``'s batch of ``HashedBlock``s; ``BlockSource.get``); plaintext comes from a
file-like object or an iterable of bytes and leaves as an iterator of chunks. Memory is bounded
by the chunk size and the number of workers, never by the object size. Each block is hashed once
on each side: ``publish`` names it and a batch trusts that name; ``open_object`` leaves the check
to a source that declares it verifies. Wire formats are ``hearth.adds.aead``'s; documents are
``hearth.adds.builders``'.

Every refusal to open is an ``OpenError`` with a stable ``open.*`` code (listed in docs/adds.md,
"Objects: publish, grant, open"); anything that can be checked without fetching a block is
checked before ``open_object`` returns.
"""

from __future__ import annotations

import itertools
import os
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from .aead import (
    AAD_CONTEXT_LENGTH,
    KEY_LENGTH,
    NONCE_LENGTH,
    content_key_id,
    decrypt_chunk,
    decrypt_chunk_into,
    encrypt_chunk,
    encrypt_chunk_into,
    key_wrap_from_json,
    unwrap_content_key,
    wrap_content_key,
)
from .b64 import b64url_decode
from .builders import Chunk, Encryption, SignedDocument, build_grant, build_manifest
from .canonical import CanonicalizationError, canonicalize
from .cid import cid_for_bytes
from .kinds import MAX_CHUNK_SIZE, MAX_CHUNKS, TAG_LENGTH, Right
from .problems import AddsError, Problem
from .validate import ValidationResult, validate

__all__ = [
    "MAX_DELEGATION_DEPTH",
    "READ_AHEAD_BYTES",
    "BatchingBlockSink",
    "BlockBatch",
    "BlockSink",
    "BlockSource",
    "BufferingBlockBatch",
    "Document",
    "HashedBlock",
    "LendingBlockSource",
    "OpenError",
    "OpenedObject",
    "PlaintextTarget",
    "Published",
    "check_delegation",
    "issue_grant",
    "open_object",
    "open_threads",
    "publish",
    "unwrap_grant",
]

MAX_DELEGATION_DEPTH = 16  # parent links followed from a grant before refusing the chain

Document = SignedDocument | Mapping[str, Any] | bytes | bytearray | memoryview
"""A control document as a SignedDocument, a parsed JSON object, or its raw bytes."""


# --- block stores ---------------------------------------------------------------------------


class BlockSink(Protocol):
    """Where ``publish`` stores blocks.

    ``put(cid, data)`` stores ``data`` (immutable bytes: safe to keep without copying) under
    ``cid``, which is always ``cid_for_bytes(data)``. ``publish`` calls it from the calling
    thread, once per chunk, in chunk order. Storing a block that is already there must succeed.
    An exception from ``put`` stops ``publish`` and propagates unchanged.

    A sink that also has ``batch`` (``BatchingBlockSink``) is given the blocks through a batch
    instead, as ``HashedBlock``s, from worker threads and in no promised order.
    """

    def put(self, cid: str, data: bytes) -> None: ...


_MINT = object()


class HashedBlock:
    """A block and its CID, computed from these very bytes by ``HashedBlock.of``.

    ``of`` and ``in_buffer`` are the only ways to make one (the constructor refuses any other
    caller) and neither attribute can be changed afterwards, so a store may keep ``data`` under
    ``cid`` without hashing it again: bytes that arrive with a CID from elsewhere (a request, a
    file name) must go through a store's verifying ``put`` instead.
    """

    __slots__ = ("cid", "data")
    cid: str
    data: bytes | memoryview

    def __init__(self, cid: str, data: bytes | memoryview, *, _mint: object = None) -> None:
        if _mint is not _MINT:
            raise TypeError("a HashedBlock is made by HashedBlock.of(data), which hashes the bytes")
        object.__setattr__(self, "cid", cid)
        object.__setattr__(self, "data", data)

    @classmethod
    def of(cls, data: bytes) -> HashedBlock:
        """Hash ``data`` (immutable ``bytes`` only, so the name stays true) and name it."""
        if type(data) is not bytes:
            raise TypeError(f"a HashedBlock holds bytes, not {type(data).__name__}")
        return cls(cid_for_bytes(data), data, _mint=_MINT)

    @classmethod
    def in_buffer(cls, buffer: memoryview) -> HashedBlock:
        """Hash the block sealed into ``buffer``, one a batch lent this thread
        (``BufferingBlockBatch.block_buffer``), and name it. The name stays true because
        nothing writes to that buffer again before the batch's ``add`` of this block, in the
        same thread, has written it out; ``publish`` holds to that."""
        if not isinstance(buffer, memoryview):
            raise TypeError(f"in_buffer takes a memoryview, not {type(buffer).__name__}")
        return cls(cid_for_bytes(buffer), buffer, _mint=_MINT)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("a HashedBlock cannot be changed")

    def __delattr__(self, name: str) -> None:
        raise AttributeError("a HashedBlock cannot be changed")

    def __repr__(self) -> str:
        return f"HashedBlock({self.cid!r}, {len(self.data)} bytes)"


class BlockBatch(Protocol):
    """Blocks written now and made durable and visible together.

    ``add`` may be called from several threads at once; it may write the block at once but must
    not make it visible under its CID before its bytes are durable. ``commit`` returns once every
    block added is durable and visible. ``abort`` drops what is not yet committed; it is called
    after a failure (also one of ``commit``) and must not raise for that reason.
    """

    def add(self, block: HashedBlock) -> None: ...

    def commit(self) -> None: ...

    def abort(self) -> None: ...


@runtime_checkable
class BufferingBlockBatch(BlockBatch, Protocol):
    """A batch that lends the sealing thread a buffer to seal a block straight into, saving a
    copy of every byte: a store writing past the page cache needs its blocks in an aligned
    buffer anyway.

    ``block_buffer(size)`` returns a writable view of exactly ``size`` bytes owned by the
    calling thread, or None when the batch has none to lend (the block is then passed as
    ``bytes``). The view stays the thread's until the ``add`` of the block sealed into it has
    returned; the next ``block_buffer`` call in that thread may hand out the same memory.
    """

    def block_buffer(self, size: int) -> memoryview | None: ...


@runtime_checkable
class BatchingBlockSink(Protocol):
    """A sink that can take a whole object's blocks as one batch (see ``BlockBatch``)."""

    def put(self, cid: str, data: bytes) -> None: ...

    def batch(self) -> BlockBatch: ...


class BlockSource(Protocol):
    """Where ``open_object`` fetches blocks.

    ``get(cid)`` returns the bytes stored under ``cid``, or raises ``KeyError`` (any
    ``LookupError``, such as a store's own ``BlockNotFound(KeyError)``) when it holds no such
    block: that is reported as ``open.block_missing``. Any other exception (a network error, say,
    or a store's own refusal of a damaged block) is not a verdict on the object and propagates
    unchanged. With ``workers`` > 1, ``get`` is called from that many threads at once.

    The source need not verify what it returns: the opener checks the size and the CID of every
    block before decrypting it, unless the source has a class attribute ``verifies_blocks`` set
    to ``True``, promising that ``get`` never returns bytes that do not hash to ``cid`` (the
    stores of ``hearth.blockstore`` do); then the hash is not computed twice.

    A source far away (an object store) may ask for more reads in flight than ``workers``
    with a class attribute ``reads_in_flight`` (an int): the opener then works on that many
    chunks at once, as long as they fit in ``READ_AHEAD_BYTES``, so that the store's latency
    is hidden behind the other reads and each thread's hashing and decryption.
    """

    def get(self, cid: str) -> bytes: ...


@runtime_checkable
class LendingBlockSource(Protocol):
    """A ``BlockSource`` that can also hand out a block without a copy of its own:
    ``get_lent(cid)`` answers as ``get`` does (same errors, same checks) but may return a view
    of a buffer of the calling thread's, valid until that thread's next ``get`` or
    ``get_lent``. The opener uses it when it decrypts each block at once in the thread that
    fetched it (the local stores read blocks into such a buffer anyway)."""

    def get(self, cid: str) -> bytes: ...

    def get_lent(self, cid: str) -> bytes | memoryview: ...


def _source_verifies(source: BlockSource) -> bool:
    return getattr(type(source), "verifies_blocks", False) is True


# The most chunk bytes the opener reads ahead for a source that asks for reads in flight
# (``BlockSource``): 8 reads of 1 MiB chunks, but no more than the workers' own of 16 MiB ones.
READ_AHEAD_BYTES = 8 * 1024 * 1024


def open_threads(source: BlockSource, workers: int, chunk_size: int) -> int:
    """How many chunks ``open_object`` works on at once: ``workers``, or up to the
    ``reads_in_flight`` a source asks for within ``READ_AHEAD_BYTES`` (``BlockSource``)."""
    wish = getattr(type(source), "reads_in_flight", 1)
    if not isinstance(wish, int) or wish <= workers:
        return workers
    return max(workers, min(wish, READ_AHEAD_BYTES // max(chunk_size, 1)))


@runtime_checkable
class PlaintextTarget(Protocol):
    """Where ``OpenedObject.into`` puts an object's plaintext: each chunk at its own offset,
    from worker threads at once and in no promised order (a file written with ``pwrite``).

    ``chunk_buffer(size)`` returns a writable view of exactly ``size`` bytes owned by the
    calling thread to decrypt a chunk straight into, or None (the chunk then comes as
    ``bytes``). ``write_at(offset, data)`` stores ``data`` at ``offset``; when ``data`` is the
    view ``chunk_buffer`` just lent this thread, the target may write it without copying. Only
    authentic plaintext is ever passed to ``write_at``; a lent view may hold unauthenticated
    bytes after a failed decryption, and is then never written.
    """

    def chunk_buffer(self, size: int) -> memoryview | None: ...

    def write_at(self, offset: int, data: bytes | memoryview) -> None: ...


# --- plaintext sources ----------------------------------------------------------------------


@runtime_checkable
class SupportsReadinto(Protocol):
    def readinto(self, buffer: memoryview, /) -> int | None: ...


@runtime_checkable
class SupportsRead(Protocol):
    def read(self, size: int, /) -> bytes | None: ...


Piece = bytes | bytearray | memoryview
PlaintextSource = SupportsReadinto | SupportsRead | Iterable[Piece] | Piece


def _would_block() -> AddsError:
    return AddsError.single(
        "publish.source_would_block", "the source returned None (non-blocking): pass a blocking one"
    )


class _Ring:
    """Chunk buffers reused in turn, allocated on first use: a buffer is handed out again only
    after ``count - 1`` others have been."""

    def __init__(self, chunk_size: int, count: int) -> None:
        self._chunk_size = chunk_size
        self._count = count
        self._buffers: list[memoryview] = []
        self._next = 0

    def take(self) -> memoryview:
        if len(self._buffers) < self._count:
            self._buffers.append(memoryview(bytearray(self._chunk_size)))
            return self._buffers[-1]
        buffer = self._buffers[self._next]
        self._next = (self._next + 1) % self._count
        return buffer


def _readinto_chunks(source: SupportsReadinto, ring: _Ring) -> Iterator[memoryview]:
    first = True
    while True:
        buffer = ring.take()
        filled = 0
        while filled < len(buffer):
            count = source.readinto(buffer[filled:])
            if count is None:
                raise _would_block()
            if count == 0:
                break
            filled += count
        if filled == 0 and not first:
            return
        yield buffer[:filled]
        if filled < len(buffer):
            return
        first = False


def _read_pieces(source: SupportsRead, size: int) -> Iterator[bytes]:
    while True:
        data = source.read(size)
        if data is None:
            raise _would_block()
        if not data:
            return
        yield data


def _pieces_chunks(pieces: Iterable[Piece], ring: _Ring, chunk_size: int) -> Iterator[memoryview]:
    iterator = iter(pieces)
    rest = memoryview(b"")
    immutable = True  # ``rest`` views a bytes object, so chunks may view it instead of copies
    first = True

    def following() -> bool:
        nonlocal rest, immutable
        piece = next(iterator, None)
        if piece is None:
            return False
        rest, immutable = memoryview(piece).cast("B"), isinstance(piece, bytes)
        return True

    while True:
        if not rest:
            following()
        if immutable and len(rest) >= chunk_size:
            chunk, rest = rest[:chunk_size], rest[chunk_size:]
            yield chunk
            first = False
            continue
        buffer = ring.take()
        filled = 0
        while filled < chunk_size:
            if not rest:
                if not following():
                    break
                continue
            count = min(len(rest), chunk_size - filled)
            buffer[filled : filled + count] = rest[:count]
            rest = rest[count:]
            filled += count
        if filled == 0 and not first:
            return
        yield buffer[:filled]
        if filled < chunk_size:
            return
        first = False


def _plaintext_chunks(
    source: PlaintextSource, chunk_size: int, buffers: int
) -> Iterator[memoryview]:
    """Views of successive plaintext chunks: full ones, then one of 1..chunk_size bytes (no
    empty chunk after a full last one), or a single empty chunk for an empty source.

    A view stays valid until ``buffers - 1`` more have been taken: read into a ring of reused
    buffers, or, for pieces that are ``bytes`` (immutable), views of the pieces themselves, so
    that nothing is copied twice.
    """
    ring = _Ring(chunk_size, buffers)
    if isinstance(source, bytes | bytearray | memoryview):
        return _pieces_chunks((source,), ring, chunk_size)
    if isinstance(source, SupportsReadinto):
        return _readinto_chunks(source, ring)
    if isinstance(source, SupportsRead):
        return _pieces_chunks(_read_pieces(source, chunk_size), ring, chunk_size)
    return _pieces_chunks(source, ring, chunk_size)


# --- publish --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Published:
    """A published object: its signed manifest and the content key (kept out of ``repr``)."""

    manifest: SignedDocument
    content_key: bytes = field(repr=False)

    @property
    def cid(self) -> str:
        return self.manifest.cid


@dataclass(frozen=True, slots=True)
class _Sealed:
    chunk: Chunk
    block: bytes


def publish(
    source: PlaintextSource,
    sink: BlockSink,
    *,
    key: Ed25519PrivateKey,
    publisher_id: str,
    object_id: str,
    created_at: int,
    chunk_size: int = 1 << 20,
    media_type: str | None = None,
    schema: str | None = None,
    metadata: Mapping[str, Any] | None = None,
    provenance_parents: Sequence[str] | None = None,
    on_progress: Callable[[int], None] | None = None,
    workers: int = 1,
) -> Published:
    """Encrypt ``source`` chunk by chunk into ``sink`` and sign its manifest.

    ``source`` is a binary file-like object (``readinto`` preferred, else ``read``), bytes, or
    an iterable of bytes-like pieces of any sizes. Each chunk of ``chunk_size`` plaintext bytes
    is sealed under a fresh random content key with its own random nonce, named by the CID of
    the block, and stored. Memory stays within (``workers`` x 2 + 1) x ``chunk_size`` plus the
    chunk list, whatever the object's size.

    A plain ``BlockSink`` gets ``put`` calls from the calling thread, in chunk order. A
    ``BatchingBlockSink`` gets one batch: each block is hashed once, here, and handed over as a
    ``HashedBlock`` by the thread that sealed it, and the batch is committed (every block
    durable) before this returns; on any failure it is aborted.

    ``workers`` > 1 seals (and, for a batching sink, writes) that many chunks at once in
    threads (AES-GCM and SHA-256 release the GIL) while the calling thread reads the next
    chunk; the output is the same shape either way. ``on_progress`` receives the plaintext
    bytes stored so far (for a batch: written, made durable at the end).
    """
    if not 1 <= chunk_size <= MAX_CHUNK_SIZE:
        raise AddsError.single("publish.chunk_size", f"chunk_size is 1 to {MAX_CHUNK_SIZE}")
    if workers < 1:
        raise AddsError.single("publish.workers", "workers is at least 1")
    content_key = os.urandom(KEY_LENGTH)
    aad_context = os.urandom(AAD_CONTEXT_LENGTH)
    chunks: list[Chunk] = []
    done = 0
    batch = sink.batch() if isinstance(sink, BatchingBlockSink) else None

    lender = batch if isinstance(batch, BufferingBlockBatch) else None

    def seal(index: int, nonce: bytes, plaintext: memoryview) -> _Sealed:
        if batch is None:
            block = encrypt_chunk(content_key, nonce, aad_context, index, plaintext)
            return _Sealed(Chunk(index, cid_for_bytes(block), nonce, len(plaintext)), block)
        target = None if lender is None else lender.block_buffer(len(plaintext) + TAG_LENGTH)
        if target is None:
            hashed = HashedBlock.of(
                encrypt_chunk(content_key, nonce, aad_context, index, plaintext)
            )
        else:  # sealed straight into the store's write buffer: one copy of every byte fewer
            encrypt_chunk_into(content_key, nonce, aad_context, index, plaintext, out=target)
            hashed = HashedBlock.in_buffer(target)
        # Written by the thread that sealed it, before that thread seals another: the writes
        # overlap like the sealing does, and a lent buffer is written out before its reuse.
        batch.add(hashed)
        return _Sealed(Chunk(index, hashed.cid, nonce, len(plaintext)), b"")

    def store(sealed: _Sealed) -> None:
        nonlocal done
        if batch is None:
            sink.put(sealed.chunk.cid, sealed.block)
        chunks.append(sealed.chunk)
        done += sealed.chunk.plaintext_size
        if on_progress is not None:
            on_progress(done)

    def numbered(views: Iterator[memoryview]) -> Iterator[tuple[int, memoryview]]:
        for index, view in enumerate(views):
            if index >= MAX_CHUNKS:
                raise AddsError.single(
                    "publish.too_many_chunks",
                    f"an object has at most {MAX_CHUNKS} chunks: use a larger chunk_size",
                )
            yield index, view

    def run() -> None:
        if workers == 1:
            for index, view in numbered(_plaintext_chunks(source, chunk_size, 1)):
                store(seal(index, os.urandom(NONCE_LENGTH), view))
            return
        # workers + 1 buffers: the one being filled is never one a pending seal still reads.
        views = _plaintext_chunks(source, chunk_size, workers + 1)
        with ThreadPoolExecutor(workers, thread_name_prefix="adds-publish") as pool:
            pending: deque[Future[_Sealed]] = deque()
            try:
                for index, view in numbered(views):
                    if len(pending) == workers:
                        store(pending.popleft().result())
                    pending.append(pool.submit(seal, index, os.urandom(NONCE_LENGTH), view))
                while pending:
                    store(pending.popleft().result())
            finally:
                for future in pending:  # after a failure: seal nothing more
                    future.cancel()

    if batch is None:
        run()
    else:
        try:
            run()
            batch.commit()
        except BaseException:
            batch.abort()
            raise

    manifest = build_manifest(
        key=key,
        publisher_id=publisher_id,
        object_id=object_id,
        created_at=created_at,
        plaintext_size=done,
        encryption=Encryption(content_key_id(content_key), chunk_size, aad_context),
        chunks=chunks,
        media_type=media_type,
        schema=schema,
        metadata=metadata,
        provenance_parents=provenance_parents,
    )
    return Published(manifest, content_key)


# --- documents ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Loaded:
    document: dict[str, Any] | None
    cid: str | None
    problems: tuple[Problem, ...]


def _load(document: Document, kind: str) -> _Loaded:
    """Validate a document given in any of its forms (signature included) as ``kind``."""
    try:
        if isinstance(document, SignedDocument):
            result = validate(document.canonical)
        elif isinstance(document, bytes | bytearray | memoryview):
            result = validate(bytes(document))
        elif isinstance(document, Mapping):
            # Through the strict parser, so a mapping meets exactly the rules bytes meet.
            result = validate(canonicalize(dict(document)))
        else:
            problem = Problem("", "spec.type", "a document is bytes, a JSON object or signed")
            result = ValidationResult(None, None, (problem,))
        cid = result.cid
    except (CanonicalizationError, TypeError, ValueError) as exc:
        return _Loaded(None, None, (Problem("", "spec.type", f"not a JSON document: {exc}"),))
    problems = result.errors
    if result.kind is not None and result.kind != kind:
        problems = (Problem("/kind", "spec.kind", f"a {result.kind}, not a {kind}"), *problems)
    parsed = result.document if isinstance(result.document, dict) else None
    return _Loaded(parsed, cid, problems)


class OpenError(AddsError):
    """A refusal to open an object: ``code`` (stable, ``open.*``), a plain message, and the
    underlying problems (validation or delegation) in ``details``."""

    def __init__(
        self, code: str, message: str, pointer: str = "", *, details: Iterable[Problem] = ()
    ) -> None:
        self.code = code
        self.message = message
        self.details = tuple(details)
        super().__init__([Problem(pointer, code, message), *self.details])

    @classmethod
    def single(cls, code: str, message: str, pointer: str = "") -> OpenError:
        return cls(code, message, pointer)


def _valid(document: Document, kind: str, code: str) -> tuple[dict[str, Any], str]:
    loaded = _load(document, kind)
    if loaded.problems or loaded.document is None or loaded.cid is None:
        summary = "; ".join(f"{p.code} at '{p.pointer}'" for p in loaded.problems)
        raise OpenError(code, f"the {kind} is not valid: {summary}", details=loaded.problems)
    return loaded.document, loaded.cid


def _window(grant: Mapping[str, Any], now: int) -> tuple[str, str, str] | None:
    """Why a (valid) grant is not usable at ``now``, as (code, message, pointer): it is usable
    when max(issued_at, not_before) <= now < expires_at."""
    not_before = grant.get("not_before", 0)
    starts = max(grant["issued_at"], not_before)
    if now < starts:
        pointer = "/not_before" if not_before > grant["issued_at"] else "/issued_at"
        return "open.not_yet_valid", f"the grant is usable from {starts}; now is {now}", pointer
    if now >= grant["expires_at"]:
        message = f"the grant expired at {grant['expires_at']}; now is {now}"
        return "open.expired", message, "/expires_at"
    return None


# --- delegation -----------------------------------------------------------------------------


def _link_problems(
    child: Mapping[str, Any], parent: Mapping[str, Any], parent_cid: str
) -> list[Problem]:
    """The DESIGN.md section 3 rules between a valid child grant and a valid parent grant."""
    problems = []
    if child.get("parent_grant") != parent_cid:
        problems.append(
            Problem(
                "/parent_grant",
                "profile.delegation.parent_cid",
                f"parent_grant names {child.get('parent_grant')}, not the parent {parent_cid}",
            )
        )
    if "delegate" not in parent["rights"]:
        problems.append(
            Problem(
                "/parent_grant",
                "profile.delegation.no_delegate",
                "the parent grant does not list 'delegate'",
            )
        )
    if child["manifest_cid"] != parent["manifest_cid"]:
        problems.append(
            Problem(
                "/manifest_cid",
                "profile.delegation.manifest",
                "the parent grant is for another manifest",
            )
        )
    if child["issuer"]["id"] != parent["audience"]:
        problems.append(
            Problem(
                "/issuer/id",
                "profile.delegation.audience",
                f"the issuer is not the parent grant's audience {parent['audience']!r}",
            )
        )
    extra = sorted(set(child["rights"]) - set(parent["rights"]))
    if extra:
        problems.append(
            Problem(
                "/rights",
                "profile.delegation.rights",
                f"rights the parent grant does not hold: {', '.join(extra)}",
            )
        )
    if child["expires_at"] > parent["expires_at"]:
        problems.append(
            Problem(
                "/expires_at",
                "profile.delegation.expires",
                f"expires after the parent grant ({parent['expires_at']})",
            )
        )
    return problems


def check_delegation(child: Document, parent: Document) -> list[Problem]:
    """Every problem with ``parent`` as the parent of ``child`` (empty when the link holds).

    Both must be valid grants; ``child.parent_grant`` must be the parent's CID; the parent
    lists ``delegate``, names the same manifest, its audience is the child's issuer id, the
    child's rights are a subset of the parent's and it expires no later. The clock plays no part
    (``unwrap_grant`` also requires every grant of a chain to be usable at ``now``). Pointers
    are into the child.
    """
    loaded_child, loaded_parent = _load(child, "grant"), _load(parent, "grant")
    child_doc = None if loaded_child.problems else loaded_child.document
    parent_doc = None if loaded_parent.problems else loaded_parent.document
    problems = []
    if child_doc is None:
        problems.append(
            Problem("", "profile.delegation.child_invalid", "the child is not a valid grant")
        )
    elif "parent_grant" not in child_doc:
        problems.append(
            Problem("/parent_grant", "profile.delegation.no_parent", "the grant has no parent")
        )
    if parent_doc is None or loaded_parent.cid is None:
        problems.append(
            Problem("/parent_grant", "profile.delegation.parent_invalid", "the parent is not valid")
        )
    if problems or child_doc is None or parent_doc is None or loaded_parent.cid is None:
        return problems
    return _link_problems(child_doc, parent_doc, loaded_parent.cid)


def _check_chain(grant: dict[str, Any], parents: Sequence[Document], now: int) -> None:
    """Follow ``parent_grant`` links through ``parents`` (by CID) up to a root grant."""
    if "parent_grant" not in grant:
        return
    by_cid: dict[str, _Loaded] = {}
    for candidate in parents:
        loaded = _load(candidate, "grant")
        if loaded.cid is not None:
            by_cid[loaded.cid] = loaded
    child = grant
    depth = 0
    while "parent_grant" in child:
        depth += 1
        if depth > MAX_DELEGATION_DEPTH:
            raise OpenError(
                "open.delegation_too_deep",
                f"the delegation chain is longer than {MAX_DELEGATION_DEPTH} grants",
                "/parent_grant",
            )
        parent_cid = child["parent_grant"]
        found = by_cid.get(parent_cid)
        if found is None:
            raise OpenError(
                "open.parent_missing",
                f"parent grant {parent_cid} (depth {depth}) is not among the parents given",
                "/parent_grant",
            )
        if found.problems or found.document is None:
            raise OpenError(
                "open.delegation_invalid",
                f"parent grant {parent_cid} (depth {depth}) is not valid",
                "/parent_grant",
                details=found.problems,
            )
        problems = _link_problems(child, found.document, parent_cid)
        if problems:
            raise OpenError(
                "open.delegation_invalid",
                f"delegation from {parent_cid} (depth {depth}) breaks: "
                + "; ".join(p.message for p in problems),
                "/parent_grant",
                details=problems,
            )
        window = _window(found.document, now)
        if window is not None:
            raise OpenError(
                "open.parent_not_usable",
                f"parent grant {parent_cid} (depth {depth}) is not usable now: {window[1]}",
                "/parent_grant",
            )
        child = found.document


# --- grant and open -------------------------------------------------------------------------


def issue_grant(
    *,
    manifest: SignedDocument | Mapping[str, Any] | bytes,
    content_key: bytes,
    key: Ed25519PrivateKey,
    issuer_id: str,
    grant_id: str,
    audience: str,
    audience_x25519_public_key: bytes,
    rights: Sequence[Right | str],
    issued_at: int,
    expires_at: int,
    not_before: int | None = None,
    parent_grant: str | None = None,
    task_id: str | None = None,
    purpose: str | None = None,
) -> SignedDocument:
    """A signed grant giving ``audience`` the content key of ``manifest``, wrapped to its X25519
    key and bound to the manifest's CID. Refuses (AddsError) an invalid manifest
    (``issue.manifest_invalid``) and a content key that is not the manifest's
    (``issue.key_id_mismatch``), so a grant that cannot open its object is never made."""
    loaded = _load(manifest, "manifest")
    if loaded.problems or loaded.document is None or loaded.cid is None:
        raise AddsError(
            [Problem("", "issue.manifest_invalid", "the manifest is not valid"), *loaded.problems]
        )
    if content_key_id(content_key) != loaded.document["encryption"]["key_id"]:
        raise AddsError.single(
            "issue.key_id_mismatch", "the content key is not the manifest's (key_id differs)"
        )
    return build_grant(
        key=key,
        issuer_id=issuer_id,
        grant_id=grant_id,
        manifest_cid=loaded.cid,
        audience=audience,
        audience_x25519_public_key=audience_x25519_public_key,
        rights=[Right(r) for r in rights],
        issued_at=issued_at,
        expires_at=expires_at,
        key_wrap=wrap_content_key(content_key, audience_x25519_public_key, loaded.cid),
        not_before=not_before,
        parent_grant=parent_grant,
        task_id=task_id,
        purpose=purpose,
    )


def _authorise(
    grant: Document,
    manifest: Document,
    audience_private: X25519PrivateKey,
    now: int,
    parents: Sequence[Document],
) -> tuple[dict[str, Any], bytes]:
    """Every check that needs no block; (manifest document, content key)."""
    manifest_doc, manifest_cid = _valid(manifest, "manifest", "open.manifest_invalid")
    grant_doc, _ = _valid(grant, "grant", "open.grant_invalid")
    if grant_doc["manifest_cid"] != manifest_cid:
        raise OpenError(
            "open.manifest_mismatch",
            f"manifest does not match the grant: the grant is for {grant_doc['manifest_cid']},"
            f" the manifest is {manifest_cid}",
            "/manifest_cid",
        )
    window = _window(grant_doc, now)
    if window is not None:
        raise OpenError(*window)
    _check_chain(grant_doc, parents, now)
    audience_public = audience_private.public_key().public_bytes_raw()
    if audience_public != b64url_decode(grant_doc["audience_x25519_public_key"]):
        raise OpenError(
            "open.wrong_key",
            "the private key is not the grant's audience key (audience_x25519_public_key)",
            "/audience_x25519_public_key",
        )
    try:
        content_key = unwrap_content_key(
            key_wrap_from_json(grant_doc["key_wrap"]), audience_private, manifest_cid
        )
    except AddsError as exc:
        raise OpenError(
            "open.unwrap_failed",
            "the key wrap does not open for this key and manifest",
            "/key_wrap",
            details=exc.problems,
        ) from None
    if content_key_id(content_key) != manifest_doc["encryption"]["key_id"]:
        raise OpenError(
            "open.key_id_mismatch",
            "the unwrapped key is not the manifest's content key (encryption.key_id differs)",
            "/key_wrap",
        )
    return manifest_doc, content_key


def unwrap_grant(
    grant: Document,
    manifest: Document,
    audience_private: X25519PrivateKey,
    *,
    now: int,
    parents: Sequence[Document] = (),
) -> bytes:
    """The content key a grant gives ``audience_private`` for ``manifest`` at ``now``.

    Checks, in order: the manifest and the grant are valid and signed (``open.manifest_invalid``,
    ``open.grant_invalid``; a grant without ``read`` is invalid), the grant names this manifest
    (``open.manifest_mismatch``), it is usable at ``now`` (``open.not_yet_valid``,
    ``open.expired``), its delegation chain holds (``parents``: the parent grants, in any order),
    the key is the audience's (``open.wrong_key``), the wrap opens (``open.unwrap_failed``) and
    the key is the manifest's (``open.key_id_mismatch``). Raises OpenError.
    """
    return _authorise(grant, manifest, audience_private, now, parents)[1]


def open_object(
    manifest: Document,
    grant: Document,
    audience_private: X25519PrivateKey,
    source: BlockSource,
    *,
    now: int,
    parents: Sequence[Document] = (),
    workers: int = 1,
) -> OpenedObject:
    """The plaintext of an object, one chunk at a time, in order.

    Everything ``unwrap_grant`` checks is checked before this returns, without fetching a
    block. Then each block is fetched and refused when missing (``open.block_missing``), of the
    wrong size (``open.block_size_mismatch``), not named by its CID (``open.block_cid_mismatch``;
    checked here unless the source verifies, see ``BlockSource``) or not authentic in its place
    (``open.decrypt_failed``: the chunk index and the object's aad_context are authenticated,
    so a block moved to another position or object fails). A refusal mid-way ends the iteration
    with OpenError (or the source's own error); chunks already yielded were authentic, and no
    chunk after the refused one is ever yielded.

    ``workers`` > 1 fetches, checks and decrypts up to that many following chunks in threads
    while the caller handles the current one (memory: about 2 x ``workers`` + 1 chunks);
    chunks are still yielded in order, and a refusal surfaces at its own position. A source
    that asks for more reads in flight (``BlockSource``: an object store) gets up to that many
    threads within ``READ_AHEAD_BYTES`` of chunks; ``OpenedObject.threads`` says how many.

    The result is an ``OpenedObject``: iterate it, or call its ``into(target)`` to have the
    workers write each chunk to a ``PlaintextTarget`` at its offset themselves (an output file:
    the caller's thread then copies nothing). Blocks of a ``LendingBlockSource`` are taken
    without a copy of their own.
    """
    if workers < 1:
        raise ValueError("workers is at least 1")
    manifest_doc, content_key = _authorise(grant, manifest, audience_private, now, parents)
    chunk_size = int(manifest_doc["encryption"]["chunk_size"])
    threads = open_threads(source, workers, chunk_size)
    return OpenedObject(_Chunks(manifest_doc, content_key, source), threads)


class _Chunks:
    """Fetching, checking and decrypting one chunk of an authorised object."""

    def __init__(self, manifest: dict[str, Any], content_key: bytes, source: BlockSource) -> None:
        self.manifest = manifest
        self.listed: list[Mapping[str, Any]] = manifest["chunks"]
        self._key = content_key
        self._source = source
        self._aad_context = b64url_decode(manifest["encryption"]["aad_context"])
        self._verify = not _source_verifies(source)
        # A block is decrypted in the thread that fetched it, before that thread fetches
        # another: a lent view is used up in time.
        self._get: Callable[[str], bytes | memoryview] = (
            source.get_lent if isinstance(source, LendingBlockSource) else source.get
        )

    def _block(self, position: int) -> bytes | memoryview:
        chunk = self.listed[position]
        pointer = f"/chunks/{position}"
        cid = chunk["cid"]
        try:
            block = self._get(cid)
        except LookupError:
            raise OpenError(
                "open.block_missing", f"block {cid} of chunk {position} is missing", pointer
            ) from None
        if len(block) != chunk["ciphertext_size"]:
            raise OpenError(
                "open.block_size_mismatch",
                f"block {cid} of chunk {position} is {len(block)} bytes, not"
                f" {chunk['ciphertext_size']}",
                pointer,
            )
        if self._verify and cid_for_bytes(block) != cid:
            raise OpenError(
                "open.block_cid_mismatch",
                f"the bytes fetched for chunk {position} are not block {cid}",
                pointer,
            )
        return block

    def _refused(self, position: int) -> OpenError:
        return OpenError(
            "open.decrypt_failed",
            f"chunk {position} does not decrypt: altered, or not this object's chunk {position}",
            f"/chunks/{position}",
        )

    def plaintext(self, position: int) -> bytes:
        block = self._block(position)
        nonce = b64url_decode(self.listed[position]["nonce"])
        try:
            return decrypt_chunk(self._key, nonce, self._aad_context, position, block)
        except AddsError:
            raise self._refused(position) from None

    def into(self, position: int, offset: int, target: PlaintextTarget) -> int:
        """Chunk ``position`` decrypted and written to ``target`` at ``offset``; its size."""
        block = self._block(position)
        nonce = b64url_decode(self.listed[position]["nonce"])
        size = len(block) - TAG_LENGTH
        buffer = target.chunk_buffer(size)
        try:
            if buffer is None:
                plaintext: bytes | memoryview = decrypt_chunk(
                    self._key, nonce, self._aad_context, position, block
                )
            else:  # straight into the target's buffer: no copy of the plaintext of its own
                decrypt_chunk_into(self._key, nonce, self._aad_context, position, block, out=buffer)
                plaintext = buffer
        except AddsError:
            raise self._refused(position) from None
        target.write_at(offset, plaintext)  # authentic: only now does any of it leave
        return size


class OpenedObject:
    """An authorised object, read one of two ways (``open_object`` returns it):

    - iterated: its plaintext chunks in order (see ``open_object``), or
    - ``into(target)``: every chunk written to a ``PlaintextTarget`` at its offset by the
      workers themselves, which spares the caller's thread every copy and write.

    Only one of the two, once. ``size`` is the plaintext's size, from the manifest.
    """

    def __init__(self, chunks: _Chunks, workers: int) -> None:
        self._chunks = chunks
        self._workers = workers
        self._iterator: Iterator[bytes] | None = None
        self._used = False

    @property
    def size(self) -> int:
        return int(self._chunks.manifest["plaintext"]["size"])

    @property
    def threads(self) -> int:
        """How many chunks are fetched, checked and decrypted at once: ``workers``, or more
        for a source that asks for reads in flight (``BlockSource``)."""
        return self._workers

    @property
    def chunk_sizes(self) -> list[int]:
        """The plaintext size of each chunk, in order (from the manifest)."""
        return [int(chunk["ciphertext_size"]) - TAG_LENGTH for chunk in self._chunks.listed]

    def __iter__(self) -> OpenedObject:
        return self

    def __next__(self) -> bytes:
        if self._iterator is None:
            self._take()
            self._iterator = _decrypt_chunks(self._chunks, self._workers)
        return next(self._iterator)

    def close(self) -> None:
        """Stop an iteration early: nothing more is fetched (as a generator's ``close``)."""
        if self._iterator is not None:
            close = getattr(self._iterator, "close", None)
            if close is not None:
                close()

    def _take(self) -> None:
        if self._used:
            raise RuntimeError("an opened object is read once: iterated or written into")
        self._used = True

    def into(
        self, target: PlaintextTarget, *, on_progress: Callable[[int], None] | None = None
    ) -> int:
        """Fetch, check and decrypt every chunk and write it to ``target`` at its offset (the
        sum of the plaintext sizes before it); the number of bytes written, once every chunk
        has been. Each chunk is checked exactly as when iterating and written only once it has
        authenticated. On the first refusal in chunk order the OpenError (or the source's own
        error) is raised and no further chunk is started; chunks after it may already have
        been written, so the caller discards the target on any error. ``workers`` chunks are
        worked on at once, each in its own thread (memory: about 2 x ``workers`` chunks);
        ``on_progress`` receives the bytes written so far, in chunk order.
        """
        self._take()
        chunks = self._chunks
        offsets = list(itertools.accumulate(self.chunk_sizes, initial=0))
        done = 0
        if self._workers == 1:
            for position in range(len(chunks.listed)):
                done += chunks.into(position, offsets[position], target)
                if on_progress is not None:
                    on_progress(done)
            return done
        # Results are taken in chunk order, so the refusal reported is the first one in that
        # order, as when iterating. A queued task holds no memory until it runs, so twice as
        # many as there are workers are queued: a worker never waits for the caller's turn.
        window = 2 * self._workers
        positions = iter(range(len(chunks.listed)))
        with ThreadPoolExecutor(self._workers, thread_name_prefix="adds-open") as pool:
            pending: deque[Future[int]] = deque()
            try:
                for position in itertools.islice(positions, window):
                    pending.append(pool.submit(chunks.into, position, offsets[position], target))
                while pending:
                    done += pending.popleft().result()
                    following = next(positions, None)
                    if following is not None:
                        pending.append(
                            pool.submit(chunks.into, following, offsets[following], target)
                        )
                    if on_progress is not None:
                        on_progress(done)
            finally:
                for future in pending:  # after a refusal: start nothing more
                    future.cancel()
        return done


def _decrypt_chunks(chunks: _Chunks, workers: int) -> Iterator[bytes]:
    listed = enumerate(chunks.listed)

    def one(position: int, _chunk: Mapping[str, Any]) -> bytes:
        return chunks.plaintext(position)

    if workers == 1:
        for position, chunk in listed:
            yield one(position, chunk)
        return
    # Up to ``workers`` chunks ahead are in flight; results are taken in order, so an error is
    # raised at its own position and nothing after it is yielded.
    with ThreadPoolExecutor(workers, thread_name_prefix="adds-open") as pool:
        pending: deque[Future[bytes]] = deque()
        try:
            for position, chunk in itertools.islice(listed, workers):
                pending.append(pool.submit(one, position, chunk))
            while pending:
                plaintext = pending.popleft().result()
                following = next(listed, None)
                if following is not None:
                    pending.append(pool.submit(one, *following))
                yield plaintext
        finally:
            for future in pending:  # a refusal, or the caller stopped early: fetch no more
                future.cancel()
