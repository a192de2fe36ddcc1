"""ADDS publish and open throughput against the one-core crypto limit, measured in one run.

Run ``.venv/bin/python bench/adds_throughput.py`` (or ``make bench``). ``--size`` sets the object
size (default 1GiB; ``8MiB`` for a quick run), ``--chunk-size`` the chunk size (default 1MiB),
``--repeat`` how many times each measurement runs (default 3; the median counts), ``--dir``
where the temporary files go (default: the system temp directory; it needs about
``7 x repeat + 6`` times ``--size`` free, since every store is kept until the run ends),
``--json`` prints a machine-readable summary instead of the report. It is a measurement, not a
test: it exits 0 whether or not the goals are met, non-zero only when the run itself breaks.

What it measures (docs/performance.md explains the figures):
1. The limit: AES-256-GCM encryption plus SHA-256 of the ciphertext, over 1 MiB buffers already
   in memory, single-threaded (``cryptography``'s AESGCM and ``hashlib``), for as many bytes as
   the object has. This is what one core must do per byte to publish; measured at the start and
   at the end of the run, the faster of the two is the limit.
2. The disk's own ceiling, for context: the object's size written to one file with direct I/O
   and fsynced, and then that file read while another is written, both direct (an open that
   writes its plaintext to the same disk does both).
3. ``hearth.adds.publish`` of a file of random bytes into a ``FileBlockStore`` on the local disk,
   with fsync on (the real store) with workers=1, 2, 4 and 8, and off with workers=2; and
   ``open_object`` from the fsync-on store with workers=1 and 2, its verified plaintext taken
   by the caller and dropped (the library's own pace: what a caller does with the plaintext
   is the caller's), and with workers=2 into a file as the CLI writes it (``OpenedObject.into``
   a ``PositionalFile``: each worker writes its chunks at their offsets; fsynced, renamed).
   Each runs in a child process of its own, ``--repeat`` times, in interleaved rounds; the
   time is taken inside the child around the call alone, and the child's peak RSS comes from
   ``os.wait4`` (``ru_maxrss``), beside that of an idle child that imports the same modules
   and does nothing.
4. The same through the command line, ``hearth adds publish`` and ``hearth adds open -o``
   (fsync on, the default workers), ``--repeat`` times, timed from outside: start-up
   included, with the bytecode cached (a warm-up publish and open of a small file first; see
   ``cli_runs``). Each beside age (``age -r RECIPIENT -o OUT IN``, ``age -d -i KEY -o OUT IN``)
   on the same file, in pairs: hearth and age back to back, the first of the two alternating
   between rounds. age comes from Debian's package, fetched into ``--age-cache`` (default
   ``~/.cache/hearth-bench/age``) with ``apt-get download`` and unpacked with ``dpkg-deb -x``,
   no system install; when it cannot be had the report says why and goes on without it
   (``--no-age`` skips it). age writes its output through the page cache without fsync, as it
   does for its users; hearth fsyncs its blocks and output.

Ratios (of the median of the figures timed inside the child): publish/limit and open/limit
against the goal 0.5; peak RSS (the largest of the repeats) against the goal 100 MB. For the
commands: each one's ratio to the limit over the library's for the same operation, workers
and sink (``CLI_REFERENCE``) against the goal 0.9, twice: with the library timed inside its
process (the call alone), and with it timed as a whole process like the command (interpreter
start and imports included, as a program of its own calling the library pays them); hearth
MB/s over age MB/s, the median of the paired rounds, against the goal 2. The input file is
freshly written, so it is read from the page cache, not the disk; ``os.sync()`` runs before
each measurement, so that none pays for writing back another's dirty pages.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import json
import mmap
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

GOAL_RATIO = 0.5
GOAL_RSS_MB = 100.0
GOAL_CLI_SHARE = 0.9  # the CLI's ratio to the limit over the library's, for the same operation
GOAL_AGE_TIMES = 2.0  # hearth's MB/s over age's, same file, whole processes
MiB = 1 << 20
_UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}


def parse_size(text: str) -> int:
    for unit, factor in sorted(_UNITS.items(), key=lambda item: -len(item[0])):
        if text.endswith(unit) and text[: -len(unit)].strip().isdigit():
            value = int(text[: -len(unit)]) * factor
            break
    else:
        if not text.isdigit():
            raise argparse.ArgumentTypeError(f"{text!r}: bytes, or a number with KiB, MiB, GiB")
        value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1 byte")
    return value


def positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError("a whole number, at least 1")
    return int(text)


# --- the child side -------------------------------------------------------------------------


def child(args: argparse.Namespace) -> int:
    """One measured operation; prints {"seconds", "bytes"} as JSON. Its peak RSS is read by the
    parent from ``os.wait4`` (per child: RUSAGE_CHILDREN would give the largest child so far)."""
    from hearth.adds import (  # noqa: PLC0415 - imported here so the idle child imports them too
        issue_grant,
        open_object,
        publish,
    )
    from hearth.adds.keys import generate_key_pair  # noqa: PLC0415
    from hearth.blockstore import FileBlockStore  # noqa: PLC0415
    from hearth.blockstore.direct_io import PositionalFile  # noqa: PLC0415

    seconds, size = 0.0, 0
    work = Path(args.work)
    if args.child == "publish":
        pair = generate_key_pair()
        store = FileBlockStore(args.store, create=True, fsync=args.fsync)
        with open(args.input, "rb", buffering=0) as source:
            started = time.perf_counter()
            published = publish(
                source,
                store,
                key=pair.signing,
                publisher_id="bench",
                object_id="bench",
                created_at=int(time.time()),
                chunk_size=args.chunk_size,
                workers=args.workers,
            )
            seconds = time.perf_counter() - started
        size = published.manifest.document["plaintext"]["size"]
        if args.keep:
            grant = issue_grant(
                manifest=published.manifest,
                content_key=published.content_key,
                key=pair.signing,
                issuer_id="bench",
                grant_id="bench",
                audience="bench",
                audience_x25519_public_key=pair.box_public,
                rights=["read"],
                issued_at=int(time.time()),
                expires_at=int(time.time()) + 86_400,
            )
            from hearth.adds.keys import private_key_pem  # noqa: PLC0415

            (work / "manifest.json").write_bytes(published.manifest.canonical)
            (work / "grant.json").write_bytes(grant.canonical)
            (work / "reader.pem").write_bytes(private_key_pem(pair.box))
    elif args.child == "open":
        from hearth.adds.keys import load_x25519_private_key  # noqa: PLC0415

        store = FileBlockStore(args.store, create=False)
        box = load_x25519_private_key((work / "reader.pem").read_bytes())
        out = work / "opened"
        partial = work / "opened.partial"
        started = time.perf_counter()
        chunks = open_object(
            (work / "manifest.json").read_bytes(),
            (work / "grant.json").read_bytes(),
            box,
            store,
            now=int(time.time()),
            workers=args.workers,
        )
        if args.sink == "file":
            # As hearth adds open -o writes it: the workers put each chunk at its offset,
            # direct where possible; fsynced, then renamed.
            target = PositionalFile(partial, chunks.chunk_sizes)
            try:
                size = chunks.into(target)
                target.finish()
            finally:
                target.close()
            os.replace(partial, out)
        else:
            for chunk in chunks:  # every chunk verified and decrypted, then dropped
                size += len(chunk)
        seconds = time.perf_counter() - started
        if size != os.path.getsize(args.input):
            print(f"open gave {size} bytes, not {os.path.getsize(args.input)}", file=sys.stderr)
            return 1
    print(json.dumps({"seconds": seconds, "bytes": size}))
    return 0


# --- the parent side ------------------------------------------------------------------------


@dataclass
class Run:
    """One execution of one measurement."""

    seconds: float
    peak_rss_mb: float
    cpu_seconds: float
    wall: float = 0.0  # the whole process, start-up and imports included, timed from outside


@dataclass
class Result:
    """One measurement, ``--repeat`` times: the median counts."""

    name: str
    size: int
    timed: str  # "inside" (the call alone) or "outside" (the whole process, start-up included)
    runs: list[Run]

    @property
    def seconds(self) -> float:
        return statistics.median(run.seconds for run in self.runs)

    @property
    def mb_per_s(self) -> float:
        return self.size / self.seconds / 1e6 if self.seconds > 0 else 0.0

    @property
    def spread(self) -> tuple[float, float]:
        """The slowest and the fastest of the repeats, in MB/s."""
        rates = [self.size / run.seconds / 1e6 if run.seconds > 0 else 0.0 for run in self.runs]
        return min(rates), max(rates)

    @property
    def whole_mb_per_s(self) -> float:
        """MB/s of the whole process (the median wall time), start-up included."""
        wall = statistics.median(run.wall or run.seconds for run in self.runs)
        return self.size / wall / 1e6 if wall > 0 else 0.0

    @property
    def peak_rss_mb(self) -> float:
        return max(run.peak_rss_mb for run in self.runs)

    @property
    def cpu_seconds(self) -> float:
        return statistics.median(run.cpu_seconds for run in self.runs)


def run_child(
    command: list[str],
    name: str,
    size: int,
    *,
    timed: str = "inside",
    env: dict[str, str] | None = None,
) -> Run:
    """Run ``command``; its time (its own report, or the wall time) and its rusage."""
    os.sync()  # no dirty pages left by an earlier run to write back during this one
    started = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    stdout, stderr = process.stdout.read(), process.stderr.read()  # type: ignore[union-attr]
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    process.stdout.close()  # type: ignore[union-attr]
    process.stderr.close()  # type: ignore[union-attr]
    if process.returncode != 0:
        raise RuntimeError(
            f"{name} failed (exit {process.returncode}): {stderr.decode(errors='replace')[-2000:]}"
        )
    seconds, measured = wall, size
    if timed == "inside":
        report = json.loads(stdout)
        seconds, measured = report["seconds"], report["bytes"]
    if measured != size:
        raise RuntimeError(f"{name} processed {measured} bytes, not {size}")
    return Run(
        seconds=seconds,
        peak_rss_mb=usage.ru_maxrss * 1024 / 1e6,  # kilobytes on Linux
        cpu_seconds=usage.ru_utime + usage.ru_stime,
        wall=wall,
    )


def measure_limit(size: int) -> float:
    """Seconds for AES-256-GCM encrypt + SHA-256 of the ciphertext over ``size`` bytes, in 1 MiB
    buffers, on this thread."""
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM  # noqa: PLC0415

    aead = AESGCM(os.urandom(32))
    buffer = os.urandom(MiB)
    aad = os.urandom(50)  # the length of an ADDS chunk's AAD
    full, rest = divmod(size, MiB)
    started = time.perf_counter()
    for _ in range(full):
        hashlib.sha256(aead.encrypt(os.urandom(12), buffer, aad)).digest()
    if rest:
        hashlib.sha256(aead.encrypt(os.urandom(12), buffer[:rest], aad)).digest()
    return time.perf_counter() - started


def _open_direct(path: Path, flags: int) -> int:
    """``path`` opened with O_DIRECT where the file system takes it, else buffered."""
    direct = getattr(os, "O_DIRECT", 0)
    if direct:
        try:
            return os.open(path, flags | direct, 0o600)
        except OSError:
            pass
    return os.open(path, flags, 0o600)


def _write_file(path: Path, size: int) -> None:
    fd = _open_direct(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    buffer = mmap.mmap(-1, MiB)  # page-aligned, as direct I/O needs
    buffer.write(os.urandom(MiB))
    try:
        for _ in range(-(-size // MiB)):  # whole MiB: a direct write needs aligned lengths
            if os.write(fd, buffer) != MiB:  # a file write is whole unless the disk is full
                raise OSError(f"a short write to {path}")
        os.fsync(fd)
    finally:
        os.close(fd)
        buffer.close()


def _read_file(path: Path) -> None:
    fd = _open_direct(path, os.O_RDONLY)
    buffer = mmap.mmap(-1, MiB)
    try:
        while os.readv(fd, [buffer]):
            pass
    finally:
        os.close(fd)
        buffer.close()


def measure_disk(size: int, directory: Path) -> dict[str, float]:
    """Seconds the disk alone takes, with direct I/O in 1 MiB pieces and no crypto: to write
    ``size`` bytes to one file and fsync it; and to read that file back while writing another
    as large (both at once: an open into a file on the same disk does both)."""
    directory.mkdir()
    first, second = directory / "first", directory / "second"
    os.sync()
    started = time.perf_counter()
    _write_file(first, size)
    write = time.perf_counter() - started
    os.sync()
    reader = threading.Thread(target=_read_file, args=(first,))
    started = time.perf_counter()
    reader.start()
    _write_file(second, size)
    reader.join()
    both = time.perf_counter() - started
    return {"write": write, "read and write at once": both}


def write_input(path: Path, size: int) -> None:
    with open(path, "wb") as file:
        remaining = size
        while remaining:
            piece = os.urandom(min(remaining, 4 * MiB))
            file.write(piece)
            remaining -= len(piece)


# The ceiling each measurement is held against besides the limit: the disk figure that bounds it.
CEILINGS = {"publish fsync on": "write", "open to file": "read and write at once"}


@dataclass
class Report:
    size: int
    chunk_size: int
    repeat: int
    directory: str
    limit_start: float
    limit_end: float
    disk_seconds: dict[str, float]
    idle_rss_mb: float
    results: list[Result]
    machine: dict[str, Any]
    commands: Commands | None = None

    @property
    def limit_mb_per_s(self) -> float:
        return self.size / min(self.limit_start, self.limit_end) / 1e6

    def ratio(self, result: Result) -> float:
        return result.mb_per_s / self.limit_mb_per_s

    def disk_mb_per_s(self, name: str) -> float:
        return self.size / self.disk_seconds[name] / 1e6

    def verdicts(self) -> list[str]:
        lines = []
        for result in self.results:
            if result.timed != "inside":
                continue
            ratio = self.ratio(result)
            verdict = "met" if ratio >= GOAL_RATIO else "missed"
            label = result.name.split(" ", 1)
            lines.append(
                f"{label[0]}/limit ({label[1]}) = {ratio:.3f} (goal {GOAL_RATIO}): goal {verdict}"
            )
        for result in self.results:
            if result.name in AGE_PAIRS.values():
                continue  # age's memory is printed beside hearth's, not held to hearth's goal
            verdict = "met" if result.peak_rss_mb <= GOAL_RSS_MB else "missed"
            lines.append(
                f"peak RSS {result.name} = {result.peak_rss_mb:.1f} MB (goal {GOAL_RSS_MB:.0f} "
                f"MB): goal {verdict}"
            )
        return [*lines, *self.command_verdicts()]

    def versus_library(self) -> dict[str, dict[str, float]]:
        """Each command's ratio to the limit over the library's, for the same operation: the
        library timed inside its process (the call alone: ``share``), and as a whole process
        like the command, interpreter start and imports included (``share_whole``: what a
        program of its own that calls the library pays)."""
        by_name = {result.name: result for result in self.results}
        shares = {}
        for cli, library in CLI_REFERENCE.items():
            if cli in by_name and library in by_name:
                mine, theirs = self.ratio(by_name[cli]), self.ratio(by_name[library])
                whole = by_name[library].whole_mb_per_s / self.limit_mb_per_s
                shares[cli] = {
                    "cli": mine,
                    "library": theirs,
                    "share": mine / theirs,
                    "library_whole": whole,
                    "share_whole": mine / whole if whole > 0 else 0.0,
                }
        return shares

    def versus_age(self) -> dict[str, dict[str, float]]:
        """hearth MB/s over age MB/s, per paired round: the median, the lowest and highest."""
        pairs = self.commands.pairs if self.commands else {}
        return {
            cli: {"median": statistics.median(x), "lowest": min(x), "highest": max(x)}
            for cli, x in pairs.items()
            if x
        }

    def command_verdicts(self) -> list[str]:
        lines = []
        for cli, share in self.versus_library().items():
            verdict = "met" if share["share"] >= GOAL_CLI_SHARE else "missed"
            lines.append(
                f"{cli} ratio / library ratio ({CLI_REFERENCE[cli]}) = {share['share']:.3f} "
                f"(cli {share['cli']:.3f} of the limit, library {share['library']:.3f} timed "
                f"inside; goal {GOAL_CLI_SHARE}): goal {verdict}"
            )
            verdict = "met" if share["share_whole"] >= GOAL_CLI_SHARE else "missed"
            lines.append(
                f"{cli} ratio / library ratio as whole processes = {share['share_whole']:.3f} "
                f"(library {share['library_whole']:.3f} with its start-up; goal "
                f"{GOAL_CLI_SHARE}): goal {verdict}"
            )
        if self.commands is not None and self.commands.age_skipped is not None:
            lines.append(f"age: skipped ({self.commands.age_skipped})")
        for cli, times in self.versus_age().items():
            verdict = "met" if times["median"] >= GOAL_AGE_TIMES else "missed"
            lines.append(
                f"{cli}/{AGE_PAIRS[cli]} = {times['median']:.2f}x (paired rounds "
                f"{times['lowest']:.2f}x to {times['highest']:.2f}x; goal "
                f"{GOAL_AGE_TIMES:.0f}x): goal {verdict}"
            )
        return lines

    def against_disk(self) -> list[str]:
        """Each measurement bounded by the disk beside that bound: how much of the disk's own
        pace is left once the crypto and the store's files are added."""
        lines = []
        for result in self.results:
            for prefix, disk in CEILINGS.items():
                if result.timed == "inside" and result.name.startswith(prefix + ","):
                    lines.append(
                        f"{result.name} / disk {disk} = "
                        f"{result.mb_per_s / self.disk_mb_per_s(disk):.3f}"
                    )
        return lines

    def text(self) -> str:
        m = self.machine
        lines = [
            "ADDS publish and open throughput (bench/adds_throughput.py)",
            f"machine: {m['cpus']} CPUs, {m['platform']}, Python {m['python']}, "
            f"cryptography {m['cryptography']}; load average {m['load_start']} at start, "
            f"{m['load_end']} at end",
            f"object: {self.size} bytes ({self.size / MiB:.1f} MiB) of random data, chunk size "
            f"{self.chunk_size} bytes; FileBlockStore under {self.directory}",
            f"limit (one core: AES-256-GCM encrypt + SHA-256, 1 MiB buffers): "
            f"{self.limit_mb_per_s:.1f} MB/s (start {self.size / self.limit_start / 1e6:.1f}, "
            f"end {self.size / self.limit_end / 1e6:.1f})",
            "disk alone (direct I/O, one file, no crypto): "
            + ", ".join(
                f"{name} {self.disk_mb_per_s(name):.1f} MB/s "
                f"({self.disk_mb_per_s(name) / self.limit_mb_per_s:.3f} of the limit)"
                for name in self.disk_seconds
            ),
            "",
            f"  {'run':<34}{'MB/s':>9}{'ratio':>8}{'slowest':>9}{'fastest':>9}{'CPU s':>8}"
            f"{'peak RSS MB':>13}",
        ]
        for result in self.results:
            low, high = result.spread
            lines.append(
                f"  {result.name:<34}{result.mb_per_s:>9.1f}{self.ratio(result):>8.3f}"
                f"{low:>9.1f}{high:>9.1f}{result.cpu_seconds:>8.2f}{result.peak_rss_mb:>13.1f}"
            )
        lines.append(f"  {'idle child (same imports)':<34}{'':>43}{self.idle_rss_mb:>13.1f}")
        lines += [
            "",
            f"MB/s is 10^6 bytes per second, the median of {self.repeat} runs (slowest and fastest",
            "beside it); ratio is MB/s over the limit. The cli and age rows are whole processes",
            "timed from outside, start-up included, in pairs (hearth and age back to back, the",
            "first alternating); the others around the call alone. open stream hands each",
            "verified chunk to the caller, which drops it; open to file writes it to a file on",
            "the same disk as the blocks, as hearth adds open -o does. With workers=n, n threads",
            "seal (publish) or fetch, verify and decrypt (open) while the calling thread reads",
            "the input or takes the plaintext.",
            "",
            *self.against_disk(),
            "",
            *self.verdicts(),
        ]
        return "\n".join(lines)

    def as_json(self) -> dict[str, Any]:
        return {
            "size": self.size,
            "chunk_size": self.chunk_size,
            "repeat": self.repeat,
            "limit_mb_per_s": self.limit_mb_per_s,
            "disk_mb_per_s": {name: self.disk_mb_per_s(name) for name in self.disk_seconds},
            "idle_rss_mb": self.idle_rss_mb,
            "machine": self.machine,
            "runs": [
                {
                    "name": result.name,
                    "timed": result.timed,
                    "mb_per_s": result.mb_per_s,
                    "ratio": self.ratio(result),
                    "slowest_mb_per_s": result.spread[0],
                    "fastest_mb_per_s": result.spread[1],
                    "seconds": [run.seconds for run in result.runs],
                    "whole_process_seconds": [run.wall for run in result.runs],
                    "cpu_seconds": result.cpu_seconds,
                    "peak_rss_mb": result.peak_rss_mb,
                }
                for result in self.results
            ],
            "versus_library": self.versus_library(),
            "versus_age": self.versus_age(),
            "age": {
                "version": self.commands.age_version if self.commands else None,
                "skipped": self.commands.age_skipped if self.commands else "--no-cli",
            },
            "verdicts": self.verdicts(),
        }


def _load() -> str:
    try:
        return " ".join(f"{value:.2f}" for value in os.getloadavg())
    except OSError:
        return "unknown"


def measure(args: argparse.Namespace, work: Path) -> Report:
    me = [sys.executable, str(Path(__file__).resolve())]
    machine = {
        "cpus": os.cpu_count(),
        "platform": f"{platform.system()} {platform.machine()}",
        "python": platform.python_version(),
        "cryptography": importlib.metadata.version("cryptography"),
        "load_start": _load(),
    }
    source = work / "input.bin"
    write_input(source, args.size)
    os.sync()  # each measurement starts with no dirty pages of an earlier one to write back
    limit_start = measure_limit(args.size)
    disk_seconds = measure_disk(args.size, work / "disk")

    def child_args(kind: str, store: Path, **extra: Any) -> list[str]:
        command = [*me, "--child", kind, "--work", str(work), "--input", str(source)]
        command += ["--store", str(store), "--chunk-size", str(args.chunk_size)]
        for name, value in extra.items():
            command += [f"--{name.replace('_', '-')}", str(value)]
        return command

    idle = run_child(child_args("idle", work / "none"), "idle", 0)
    # Every store stays until the whole run ends. ext4 skips recently deleted inodes when it
    # allocates one, scanning past each (perf: ext4_create -> recently_deleted): a store of a
    # thousand blocks deleted just before a publish made that publish's file creation cost
    # several times what it costs on a file system at rest, which is not the store's cost.
    kept = work / "store-kept"
    publishes = [(1, 1), (1, 2), (1, 4), (1, 8), (0, 2)]
    opens = [("stream", 1), ("stream", 2), ("file", 2)]
    results: dict[str, Result] = {}

    def record(name: str, run: Run) -> None:
        results.setdefault(name, Result(name, args.size, "inside", [])).runs.append(run)

    # Interleaved rounds: a drift in the machine's pace touches every measurement alike.
    for round_ in range(args.repeat):
        for fsync, workers in publishes:
            keep = round_ == 0 and (fsync, workers) == (1, 1)  # the store the opens read
            store = kept if keep else work / f"store-{fsync}-{workers}-{round_}"
            command = child_args("publish", store, fsync=fsync, workers=workers, keep=int(keep))
            name = f"publish fsync {'on' if fsync else 'off'}, workers={workers}"
            record(name, run_child(command, name, args.size))
        for sink, workers in opens:
            name = f"open {'to file' if sink == 'file' else 'stream'}, workers={workers}"
            command = child_args("open", kept, workers=workers, sink=sink)
            record(name, run_child(command, name, args.size))
            (work / "opened").unlink(missing_ok=True)

    hearth = Path(sys.executable).with_name("hearth")
    commands: Commands | None = None
    if not args.no_cli and hearth.is_file():
        commands = cli_runs(hearth, work, source, args)
    limit_end = measure_limit(args.size)
    machine["load_end"] = _load()
    return Report(
        size=args.size,
        chunk_size=args.chunk_size,
        repeat=args.repeat,
        directory=str(work.parent),
        limit_start=limit_start,
        limit_end=limit_end,
        disk_seconds=disk_seconds,
        idle_rss_mb=idle.peak_rss_mb,
        results=[*results.values(), *(commands.results if commands else [])],
        machine=machine,
        commands=commands,
    )


# The library run each command is held against: the same operation, workers and sink. The
# workers are the CLI's defaults (tests/bench checks that they still are).
CLI_PUBLISH_WORKERS = 4
CLI_OPEN_WORKERS = 2
CLI_REFERENCE = {
    "cli publish": f"publish fsync on, workers={CLI_PUBLISH_WORKERS}",
    "cli open": f"open to file, workers={CLI_OPEN_WORKERS}",
}
# Each hearth command beside the age command that does the same to the same file.
AGE_PAIRS = {"cli publish": "age encrypt", "cli open": "age decrypt"}


@dataclass
class Age:
    """age and age-keygen from Debian's package, unpacked in a cache folder (no system install)."""

    age: Path
    keygen: Path
    version: str


def age_cache() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "hearth-bench" / "age"


def find_age(cache: Path) -> Age | str:
    """age from ``cache`` (``apt-get download age`` and ``dpkg-deb -x`` there on first use), or
    the reason it cannot be had."""
    root = cache / "root"
    age, keygen = root / "usr" / "bin" / "age", root / "usr" / "bin" / "age-keygen"
    if not (age.is_file() and keygen.is_file()):
        for tool in ("apt-get", "dpkg-deb"):
            if shutil.which(tool) is None:
                return f"{tool} is not on this machine (age comes from Debian's package)"
        cache.mkdir(parents=True, exist_ok=True)
        for stale in cache.glob("age_*.deb"):
            stale.unlink()
        try:
            fetched = subprocess.run(
                ["apt-get", "download", "age"],
                cwd=cache,
                capture_output=True,
                text=True,
                timeout=300,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return "apt-get download age did not finish in 300 s"
        packages = sorted(cache.glob("age_*.deb"))
        if fetched.returncode != 0 or not packages:
            said = (fetched.stderr or fetched.stdout).strip().splitlines()
            return f"apt-get download age failed: {said[-1] if said else fetched.returncode}"
        unpacked = subprocess.run(
            ["dpkg-deb", "-x", str(packages[-1]), str(root)],
            capture_output=True,
            text=True,
            check=False,
        )
        if unpacked.returncode != 0 or not age.is_file():
            return f"dpkg-deb -x {packages[-1].name} failed: {unpacked.stderr.strip()}"
    try:
        version = subprocess.run(
            [str(age), "--version"], capture_output=True, text=True, check=True, timeout=30
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError) as exc:
        return f"{age} does not run: {exc}"
    return Age(age=age, keygen=keygen, version=version)


@dataclass
class Commands:
    """Whole-process runs: ``hearth adds publish`` / ``open -o`` and, when it can be had, age
    doing the same to the same file, in pairs."""

    results: list[Result]
    pairs: dict[str, list[float]]  # "cli publish" -> hearth MB/s / age MB/s, one per round
    age_version: str | None
    age_skipped: str | None


def warm_up(hearth: Path, work: Path, reader: str, env: dict[str, str]) -> None:
    """One publish and one open of a small file, as the measured ones run them."""
    small, store, grants = work / "warm-up.bin", work / "warm-up-store", work / "warm-up-grants"
    small.write_bytes(os.urandom(5000))
    grants.mkdir()
    publish = [hearth, "adds", "publish", small, "--key", work / "cli.ed25519.pem"]
    publish += ["--publisher-id", "bench", "--grant-to", reader, "--audience", "bench"]
    publish += ["--grant-dir", grants, "-o", work / "warm-up.json", "--blocks", store, "--quiet"]
    subprocess.run([str(a) for a in publish], env=env, check=True, capture_output=True)
    (grant,) = grants.iterdir()
    opening = [hearth, "adds", "open", work / "warm-up.json", "--grant", grant, "--blocks", store]
    opening += ["--key", work / "cli.x25519.pem", "-o", work / "warm-up.out", "--quiet"]
    subprocess.run([str(a) for a in opening], env=env, check=True, capture_output=True)


def cli_runs(hearth: Path, work: Path, source: Path, args: argparse.Namespace) -> Commands:
    """``--repeat`` rounds; in each, ``hearth adds publish`` and ``age -r`` encrypt the same input,
    then ``hearth adds open -o`` and ``age -d -o`` decrypt what they made. The two of a pair run
    back to back, the first of them alternating between rounds, so that a drift in the machine's
    pace touches both alike. Wall time from outside (start-up included), peak RSS from
    ``os.wait4``."""
    age: Age | str = "--no-age" if args.no_age else find_age(args.age_cache)
    keys = subprocess.run(
        [hearth, "adds", "keygen", "--out", work / "cli"], capture_output=True, check=True
    )
    reader = dict(line.split(": ") for line in keys.stdout.decode().splitlines())
    recipient = ""
    if isinstance(age, Age):
        subprocess.run([age.keygen, "-o", work / "age-key.txt"], capture_output=True, check=True)
        key_text = (work / "age-key.txt").read_text()
        recipient = key_text.split("# public key: ", 1)[1].split()[0]
    # An installed Python program runs from its cached bytecode after its first run. Where
    # writing it is turned off (PYTHONDONTWRITEBYTECODE, as in some sandboxes) every hearth
    # command would compile its ~400 modules again, about a second: not what a user waits
    # for. So the commands keep their bytecode under the work directory, and a warm-up
    # publish and open of a small file (not measured) fills it first.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(work / "bytecode")
    warm_up(hearth, work, reader["x25519_public_key"], env)
    results: dict[str, Result] = {}
    pairs: dict[str, list[float]] = {name: [] for name in AGE_PAIRS}

    def timed(name: str, command: list[Any]) -> Run:
        run = run_child([str(a) for a in command], name, args.size, timed="outside", env=env)
        results.setdefault(name, Result(name, args.size, "outside", [])).runs.append(run)
        return run

    def age_argv(arguments: list[Any]) -> list[Any] | None:
        return [age.age, *arguments] if isinstance(age, Age) else None

    def pair(round_: int, name: str, command: list[Any], other: list[Any] | None) -> None:
        order = [(name, command), (AGE_PAIRS[name], other)]
        if round_ % 2:
            order.reverse()
        rates = {}
        for label, argv in order:
            if argv is not None:
                rates[label] = args.size / timed(label, argv).seconds
        if other is not None:
            pairs[name].append(rates[name] / rates[AGE_PAIRS[name]])

    opened, age_opened = work / "cli-opened", work / "age-opened"
    for round_ in range(args.repeat):
        store, grants = work / f"store-cli-{round_}", work / f"grants-{round_}"
        manifest, sealed = work / f"cli-manifest-{round_}.json", work / f"age-{round_}.age"
        grants.mkdir()
        publish = [
            hearth,
            "adds",
            "publish",
            source,
            "--key",
            work / "cli.ed25519.pem",
            "--publisher-id",
            "bench",
            "--blocks",
            store,
            "--chunk-size",
            str(args.chunk_size),
            "--grant-to",
            reader["x25519_public_key"],
            "--audience",
            "bench",
            "--grant-dir",
            grants,
            "-o",
            manifest,
            "--quiet",
        ]
        pair(round_, "cli publish", publish, age_argv(["-r", recipient, "-o", sealed, source]))
        (grant,) = grants.iterdir()
        opening = [
            hearth,
            "adds",
            "open",
            manifest,
            "--grant",
            grant,
            "--key",
            work / "cli.x25519.pem",
            "--blocks",
            store,
            "-o",
            opened,
            "--quiet",
        ]
        decrypt = ["-d", "-i", work / "age-key.txt", "-o", age_opened, sealed]
        pair(round_, "cli open", opening, age_argv(decrypt))
        for output, label in ((opened, "hearth adds open"), (age_opened, "age -d")):
            if output.exists():
                if output.stat().st_size != args.size:
                    raise RuntimeError(f"{label} wrote the wrong number of bytes")
                output.unlink()  # one file each: deleting it does not slow a store's creation
    return Commands(
        results=list(results.values()),
        pairs=pairs if isinstance(age, Age) else {},
        age_version=age.version if isinstance(age, Age) else None,
        age_skipped=None if isinstance(age, Age) else age,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    parser.add_argument("--size", type=parse_size, default=1 << 30, help="default 1GiB")
    parser.add_argument("--chunk-size", type=parse_size, default=MiB, help="default 1MiB")
    parser.add_argument("--dir", type=Path, default=None, help="where temporary files go")
    parser.add_argument("--json", action="store_true", help="a JSON summary instead")
    parser.add_argument(
        "--no-cli", action="store_true", help="skip the command-line runs (and age's)"
    )
    parser.add_argument("--no-age", action="store_true", help="skip age")
    parser.add_argument(
        "--age-cache",
        type=Path,
        default=age_cache(),
        help="where age's Debian package is fetched and unpacked (default: %(default)s)",
    )
    parser.add_argument(
        "--repeat", type=positive, default=3, help="runs of each measurement (default 3)"
    )
    for hidden in ("--child", "--work", "--input", "--store"):
        parser.add_argument(hidden, help=argparse.SUPPRESS)
    parser.add_argument("--fsync", type=int, default=1, help=argparse.SUPPRESS)
    parser.add_argument("--workers", type=int, default=1, help=argparse.SUPPRESS)
    parser.add_argument("--keep", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--sink", default="file", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child == "idle":
        from hearth.adds import publish  # noqa: F401, PLC0415 - the same imports as the others
        from hearth.blockstore import FileBlockStore  # noqa: F401, PLC0415

        print(json.dumps({"seconds": 0.0, "bytes": 0}))
        return 0
    if args.child:
        return child(args)
    if args.dir is not None:
        args.dir.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="adds-throughput-", dir=args.dir))
    try:
        report = measure(args, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(report.as_json(), indent=2) if args.json else report.text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
