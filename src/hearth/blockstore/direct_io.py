"""Direct I/O for block files: written and read past the page cache, where the file system
allows it.

A block is written once, made durable at once, and read rarely. Through the page cache every
megabyte is first copied into newly allocated cache pages, which the kernel must then write
back and keep accounting for; on this project's machines (virtual, as most servers are) fresh
pages are the expensive part, and a buffered write of new files ran at about 430 MB/s where the
disk takes 1.1 GB/s written directly. ``O_DIRECT`` moves the bytes from an aligned buffer of the
writing thread's own, reused for every block, straight to the device: the copy into that buffer
is the only one. Lengths and file offsets must be multiples of ``ALIGN``: a block is written
padded to the next multiple and the file then truncated to its real size.

Where ``O_DIRECT`` is missing (macOS, Windows) or refused (tmpfs and some network file
systems answer EINVAL), the buffered path is used, and the refusal is remembered per store.
Durability is the caller's business either way: an ``O_DIRECT`` write still needs the
fdatasync that makes the file's size and the device's cache durable.
"""

from __future__ import annotations

import contextlib
import errno
import mmap
import os
import threading
from collections.abc import Sequence

ALIGN = 4096  # covers every logical block size in use (512 and 4096)
_O_DIRECT: int = getattr(os, "O_DIRECT", 0)
_WRITE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)


def padded(size: int) -> int:
    return -(-size // ALIGN) * ALIGN


# A thread keeps its buffer up to this size (the default 1 MiB chunk and a little more): a
# server's many threads each holding one for the largest block allowed (16 MiB) would add up.
KEEP = padded((4 << 20) + 16)


class _Buffers(threading.local):
    """One aligned buffer per thread, kept for the next block unless it is larger than KEEP."""

    buffer: mmap.mmap | None = None
    lent: memoryview | None = None  # the view ``DirectIO.lend`` last gave this thread

    def take(self, size: int) -> memoryview:
        length = max(padded(size), ALIGN)
        if length > KEEP:
            return memoryview(mmap.mmap(-1, length))  # freed with the last view of it
        if self.buffer is None or len(self.buffer) < length:
            if self.buffer is not None:
                # A view of it may still be alive (a lent one): then it goes with that view.
                with contextlib.suppress(BufferError):
                    self.buffer.close()
            self.buffer = mmap.mmap(-1, length)  # anonymous maps are page-aligned
        return memoryview(self.buffer)[:length]


class DirectIO:
    """Whether this store's file system takes ``O_DIRECT``; learned on first use."""

    def __init__(self, *, enabled: bool = True) -> None:
        self.enabled = enabled and _O_DIRECT != 0
        self._buffers = _Buffers()

    def lend(self, size: int) -> memoryview | None:
        """A view of exactly ``size`` bytes of this thread's aligned buffer, to put a block
        straight into; ``create`` given that very view writes it without copying it. None
        when direct I/O is off here or the block is larger than the buffer kept (KEEP). The
        next ``lend``, ``create`` or ``read`` in this thread may reuse the memory."""
        if not self.enabled or padded(size) > KEEP:
            return None
        view = self._buffers.take(size)[:size]
        self._buffers.lent = view
        return view

    def create(self, path: os.PathLike[str] | str, data: bytes | memoryview) -> int:
        """Create ``path`` (which must not exist) holding ``data``; returns its open descriptor
        (not yet fsynced). On failure nothing is left open; a partly written file may remain
        for the caller to remove."""
        if self.enabled:
            fd = self._direct(path, data)
            if fd is not None:
                return fd
        fd = os.open(path, _WRITE_FLAGS)
        try:
            write_all(fd, data)
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _direct(self, path: os.PathLike[str] | str, data: bytes | memoryview) -> int | None:
        try:
            fd = os.open(path, _WRITE_FLAGS | _O_DIRECT)
        except OSError as exc:
            if exc.errno != errno.EINVAL:
                raise
            self.enabled = False  # the file system refuses O_DIRECT: buffered from now on
            return None
        try:
            size = len(data)
            lent = data is self._buffers.lent  # already in place: the copy is what lending saves
            self._buffers.lent = None
            view = self._buffers.take(size)
            if not lent:
                view[:size] = data
            view[size:] = bytes(len(view) - size)  # padding, cut off again below
            try:
                write_all(fd, view)
            except OSError as exc:
                if exc.errno != errno.EINVAL:
                    raise
                refused = True  # opened, but this alignment is not enough here
            else:
                refused = False
                if len(view) != size:
                    os.ftruncate(fd, size)
        except BaseException:
            os.close(fd)
            raise
        if refused:
            os.close(fd)
            os.unlink(path)
            self.enabled = False
            return None
        return fd

    def read(self, path: os.PathLike[str] | str) -> bytes:
        """The whole file at ``path`` (the open's and the read's own errors propagate)."""
        data = self.read_lent(path)
        return data if isinstance(data, bytes) else bytes(data)

    def read_lent(self, path: os.PathLike[str] | str) -> bytes | memoryview:
        """As ``read``, but where the file is read directly the bytes stay in this thread's
        aligned buffer: a view valid until this thread's next ``read_lent``, ``read``,
        ``lend`` or ``create`` on this object, which saves a copy of every byte."""
        if self.enabled:
            try:
                fd = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0) | _O_DIRECT)
            except OSError as exc:
                if exc.errno != errno.EINVAL:
                    raise
                if os.path.isdir(path):
                    raise IsADirectoryError(errno.EISDIR, "Is a directory", str(path)) from None
                self.enabled = False
            else:
                try:
                    read = self._read_into_buffer(fd)
                finally:
                    os.close(fd)
                if read is not None:
                    return read
        with open(path, "rb") as file:
            return file.read()

    def _read_into_buffer(self, fd: int) -> memoryview | None:
        """The file read into this thread's buffer (a view of what was read), or None where
        the direct read is refused."""
        size = os.fstat(fd).st_size
        view = self._buffers.take(size)
        done = 0
        while done < size:
            try:
                got = os.readv(fd, [view[done:]])
            except OSError as exc:
                if exc.errno != errno.EINVAL:
                    raise
                self.enabled = False  # opened, but not readable this way here
                return None
            if got == 0:
                break  # shorter than its size said: what is there is what it holds
            done += got
        return view[:done]


class PositionalFile:
    """A new file whose pieces arrive from several threads at once, each written at its own
    offset (``hearth.adds.PlaintextTarget``: an opened object's plaintext, decrypted by the
    workers straight into their buffers), then made durable: direct where possible.

    ``pieces`` are the sizes of the pieces in file order. When every piece but the last is a
    multiple of ``ALIGN`` long, so that every offset is aligned, each thread gets an aligned
    buffer of its own (``chunk_buffer``) and its pieces are written directly, the last one
    padded; ``finish`` cuts the file to its real size and fsyncs it. Otherwise, or where direct
    I/O is refused, pieces are written buffered at their offsets.
    """

    def __init__(
        self, path: os.PathLike[str] | str, pieces: Sequence[int], *, mode: int = 0o600
    ) -> None:
        self.path = path
        self.size = sum(pieces)
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_BINARY", 0)
        aligned = all(piece % ALIGN == 0 for piece in pieces[:-1])
        self._fd = -1
        if _O_DIRECT and aligned and _pwrite is not None:
            try:
                self._fd = os.open(path, flags | _O_DIRECT, mode)
            except OSError as exc:
                if exc.errno != errno.EINVAL:
                    raise
        self._direct = self._fd >= 0
        if not self._direct:
            self._fd = os.open(path, flags, mode)
        self._buffers = _Buffers()
        self._lock = threading.Lock()  # only where there is no pwrite: seek and write together

    def chunk_buffer(self, size: int) -> memoryview | None:
        """This thread's aligned buffer, ``size`` bytes of it, to decrypt a piece into; None
        when pieces are written buffered, or when the piece is larger than a thread keeps its
        buffer (KEEP: ``write_at`` then copies it into one of its own)."""
        if not self._direct or padded(size) > KEEP:
            return None
        view = self._buffers.take(size)[:size]
        self._buffers.lent = view
        return view

    def write_at(self, offset: int, data: bytes | memoryview) -> None:
        """Write ``data`` at ``offset`` (in any thread, in any order)."""
        if not self._direct:
            self._write_at(offset, memoryview(data))
            return
        size = len(data)
        lent = data is self._buffers.lent
        self._buffers.lent = None
        view = self._buffers.take(size)
        if not lent:
            view[:size] = data
        view[size:] = bytes(len(view) - size)  # padding: only a last piece has any, cut off
        self._write_at(offset, view)

    def _write_at(self, offset: int, view: memoryview) -> None:
        if _pwrite is None:
            with self._lock:
                os.lseek(self._fd, offset, os.SEEK_SET)
                write_all(self._fd, view)
            return
        while view:
            written = _pwrite(self._fd, view, offset)
            view, offset = view[written:], offset + written

    def finish(self) -> None:
        """Cut the file to its size, fsync and close it. Raises OSError when any of it fails
        (the file is then closed)."""
        try:
            os.ftruncate(self._fd, self.size)
            os.fsync(self._fd)
        finally:
            self.close()

    def close(self) -> None:
        """Close without finishing (after a failure); the caller removes the file."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


_pwrite = getattr(os, "pwrite", None)  # not on Windows: a seek and a write under a lock there


def write_all(fd: int, data: bytes | memoryview) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


__all__ = ["ALIGN", "KEEP", "DirectIO", "PositionalFile", "padded", "write_all"]
