"""Direct I/O for block files: exact bytes and sizes whatever the alignment, the buffered path
where the file system refuses ``O_DIRECT``, and one aligned buffer per thread."""

from __future__ import annotations

import errno
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from hearth.blockstore.direct_io import (
    ALIGN,
    KEEP,
    DirectIO,
    PositionalFile,
    padded,
)

SIZES = [0, 1, ALIGN - 1, ALIGN, ALIGN + 1, 3 * ALIGN + 17, (1 << 20) + 16, KEEP + 1]


def takes_direct(directory: Path) -> bool:
    """Whether ``directory``'s file system accepts an O_DIRECT open, asked directly."""
    flag = getattr(os, "O_DIRECT", 0)
    if not flag:
        return False
    probe = directory / "probe"
    try:
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | flag)
    except OSError:
        return False
    os.close(fd)
    probe.unlink()
    return True


def write(direct: DirectIO, path: Path, data: bytes | memoryview) -> None:
    fd = direct.create(path, data)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def test_padded_rounds_up_to_the_alignment() -> None:
    assert [padded(n) for n in (0, 1, ALIGN, ALIGN + 1)] == [0, ALIGN, ALIGN, 2 * ALIGN]


@pytest.mark.parametrize("size", SIZES)
def test_a_file_holds_exactly_its_bytes(tmp_path: Path, size: int) -> None:
    direct = DirectIO()
    data = os.urandom(size)
    write(direct, tmp_path / "block", data)
    assert (tmp_path / "block").read_bytes() == data
    assert direct.enabled == takes_direct(tmp_path)  # still direct where it was possible


@pytest.mark.parametrize("size", [1, ALIGN, ALIGN + 17, 1 << 20])
def test_a_lent_buffer_is_written_as_it_is(tmp_path: Path, size: int) -> None:
    if not takes_direct(tmp_path):
        pytest.skip(f"{tmp_path} refuses O_DIRECT: nothing is lent there")
    direct = DirectIO()
    data = os.urandom(size)
    lent = direct.lend(size)
    assert lent is not None
    assert len(lent) == size
    lent[:] = data
    write(direct, tmp_path / "block", lent)
    assert (tmp_path / "block").read_bytes() == data
    # The buffer is the thread's: the next block written (not lent) reuses it.
    write(direct, tmp_path / "copy", bytes(lent))
    assert (tmp_path / "copy").read_bytes() == data


def test_nothing_is_lent_without_direct_io_or_beyond_the_kept_buffer(tmp_path: Path) -> None:
    assert DirectIO(enabled=False).lend(100) is None
    assert DirectIO().lend(KEEP + 1) is None


def test_a_buffer_grown_while_a_view_of_it_lives_stays_usable(tmp_path: Path) -> None:
    if not takes_direct(tmp_path):
        pytest.skip(f"{tmp_path} refuses O_DIRECT: nothing is lent there")
    direct = DirectIO()
    small = direct.lend(ALIGN)
    assert small is not None
    small[:] = b"s" * ALIGN
    data = os.urandom(3 * ALIGN + 5)  # needs a larger buffer while ``small`` is alive
    write(direct, tmp_path / "block", data)
    assert (tmp_path / "block").read_bytes() == data
    assert bytes(small) == b"s" * ALIGN


def test_an_existing_name_is_refused_and_left_alone(tmp_path: Path) -> None:
    (tmp_path / "block").write_bytes(b"first")
    with pytest.raises(FileExistsError):
        DirectIO().create(tmp_path / "block", b"second")
    assert (tmp_path / "block").read_bytes() == b"first"


def test_disabled_means_buffered(tmp_path: Path) -> None:
    direct = DirectIO(enabled=False)
    write(direct, tmp_path / "block", b"plain")
    assert (tmp_path / "block").read_bytes() == b"plain"
    assert direct.enabled is False


REFUSALS = ["open", "write"]


@pytest.mark.parametrize("where", REFUSALS)
def test_a_file_system_refusing_o_direct_gets_buffered_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    """tmpfs before Linux 6.6 and some network file systems answer EINVAL, at the open or at
    the first write; either way the bytes arrive, and later writes go buffered at once."""
    if not getattr(os, "O_DIRECT", 0):
        pytest.skip("no O_DIRECT on this system")
    real_open, real_write = os.open, os.write
    direct_fds: set[int] = set()
    calls: list[str] = []

    def opening(path: object, flags: int, *args: int) -> int:
        if flags & os.O_DIRECT:
            calls.append("direct open")
            if where == "open":
                raise OSError(errno.EINVAL, "Invalid argument")
        fd = real_open(path, flags, *args)  # type: ignore[arg-type]
        if flags & os.O_DIRECT:
            direct_fds.add(fd)
        else:
            direct_fds.discard(fd)  # a number reused after the direct one was closed
        return fd

    def writing(fd: int, data: bytes) -> int:
        if fd in direct_fds:
            raise OSError(errno.EINVAL, "Invalid argument")
        return real_write(fd, data)

    monkeypatch.setattr(os, "open", opening)
    monkeypatch.setattr(os, "write", writing)
    direct = DirectIO()
    for n, size in enumerate(SIZES):
        data = os.urandom(size)
        write(direct, tmp_path / f"block{n}", data)
        assert (tmp_path / f"block{n}").read_bytes() == data
    assert direct.enabled is False
    assert calls == ["direct open"]  # learned once
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        f"block{n}" for n in range(len(SIZES))
    )


def test_threads_writing_at_once_each_use_their_own_buffer(tmp_path: Path) -> None:
    direct = DirectIO()
    blobs = [os.urandom(ALIGN * (n % 5) + n) for n in range(64)]

    def one(n: int) -> None:
        write(direct, tmp_path / f"block{n}", blobs[n])

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(one, range(len(blobs))))
    assert [(tmp_path / f"block{n}").read_bytes() for n in range(len(blobs))] == blobs


@pytest.mark.parametrize("size", SIZES)
def test_read_gives_the_whole_file(tmp_path: Path, size: int) -> None:
    data = os.urandom(size)
    (tmp_path / "block").write_bytes(data)
    reader = DirectIO()
    assert reader.read(tmp_path / "block") == data
    assert reader.enabled == takes_direct(tmp_path)


def test_read_refuses_a_missing_file_and_a_directory_without_giving_up_direct(
    tmp_path: Path,
) -> None:
    reader = DirectIO()
    with pytest.raises(FileNotFoundError):
        reader.read(tmp_path / "absent")
    (tmp_path / "folder").mkdir()
    with pytest.raises(IsADirectoryError):
        reader.read(tmp_path / "folder")
    assert reader.enabled == takes_direct(tmp_path)


# --- PositionalFile: pieces written at their offsets, from several threads ------------------


def _layout(sizes: list[int]) -> list[tuple[int, int]]:
    offsets, at = [], 0
    for size in sizes:
        offsets.append((at, size))
        at += size
    return offsets


@pytest.mark.parametrize(
    "sizes",
    [
        [],
        [0],
        [1],
        [ALIGN, ALIGN, 5],  # aligned: direct, the last piece padded then cut off
        [1 << 20] * 5 + [ALIGN + 3],
        [KEEP + ALIGN, 7],  # larger than a thread keeps its buffer: copied into a fresh one
        [1000, 1000, 17],  # unaligned offsets: buffered
    ],
)
@pytest.mark.parametrize("lend", [True, False])
def test_a_positional_file_holds_its_pieces_whatever_the_order(
    tmp_path: Path, sizes: list[int], lend: bool
) -> None:
    data = os.urandom(sum(sizes))
    target = PositionalFile(tmp_path / "out", sizes, mode=0o600)
    layout = _layout(sizes)

    def put(place: tuple[int, int]) -> None:
        offset, size = place
        piece = data[offset : offset + size]
        buffer = target.chunk_buffer(size) if lend else None
        if buffer is None:
            target.write_at(offset, piece)
        else:
            assert len(buffer) == size
            buffer[:] = piece
            target.write_at(offset, buffer)

    with ThreadPoolExecutor(3) as pool:
        list(pool.map(put, reversed(layout)))  # last first: the file grows out of order
    target.finish()
    assert target.size == len(data)
    assert (tmp_path / "out").read_bytes() == data
    assert (tmp_path / "out").stat().st_mode & 0o777 == 0o600


def test_a_positional_file_lends_aligned_buffers_only_when_it_writes_directly(
    tmp_path: Path,
) -> None:
    aligned = PositionalFile(tmp_path / "a", [ALIGN * 2, 10])
    unaligned = PositionalFile(tmp_path / "b", [ALIGN + 1, 10])
    try:
        buffer = aligned.chunk_buffer(ALIGN * 2)
        if takes_direct(tmp_path):
            assert buffer is not None
            assert len(buffer) == ALIGN * 2
            assert aligned.chunk_buffer(KEEP + 1) is None  # too large to keep: not lent
        else:
            assert buffer is None
        assert unaligned.chunk_buffer(ALIGN + 1) is None  # buffered writes need no buffer
    finally:
        aligned.close()
        unaligned.close()


def test_a_positional_file_is_buffered_where_o_direct_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_open = os.open

    def opening(path: object, flags: int, *args: int) -> int:
        if flags & getattr(os, "O_DIRECT", 0):
            raise OSError(errno.EINVAL, "Invalid argument")
        return real_open(path, flags, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", opening)
    sizes = [ALIGN, ALIGN, 5]
    data = os.urandom(sum(sizes))
    target = PositionalFile(tmp_path / "out", sizes)
    assert target.chunk_buffer(ALIGN) is None
    for offset, size in reversed(_layout(sizes)):
        target.write_at(offset, data[offset : offset + size])
    target.finish()
    assert (tmp_path / "out").read_bytes() == data


def test_a_positional_file_replaces_an_older_one(tmp_path: Path) -> None:
    (tmp_path / "out").write_bytes(b"x" * 100_000)
    target = PositionalFile(tmp_path / "out", [5])
    target.write_at(0, b"short")
    target.finish()
    assert (tmp_path / "out").read_bytes() == b"short"
