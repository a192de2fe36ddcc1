"""ADDS publish and open throughput against the one-core crypto limit, measured in one run.

Run ``.venv/bin/python bench/adds_throughput.py`` (or ``make bench``). ``--size`` sets the object
size (default 1GiB; ``8MiB`` for a quick run), ``--chunk-size`` the chunk size (default 1MiB),
``--dir`` where the temporary files go (default: the system temp directory; it needs about ten
times ``--size`` free), ``--json`` prints a machine-readable summary instead of the report. It
is a measurement, not a test: it exits 0 whether or not the goals are met, non-zero only when
the run itself breaks.

What it measures (docs/performance.md explains the figures):
1. The limit: AES-256-GCM encryption plus SHA-256 of the ciphertext, over 1 MiB buffers already
   in memory, single-threaded (``cryptography``'s AESGCM and ``hashlib``), for as many bytes as
   the object has. This is what one core must do per byte to publish; measured at the start and
   at the end of the run, the faster of the two is the limit.
2. ``hearth.adds.publish`` of a file of random bytes into a ``FileBlockStore`` on the local disk,
   with fsync on (the real store) and off, with workers=1 and workers=2; and ``open_object``
   from the fsync-on store into a file (fsynced, then renamed, as the CLI does), with workers=1
   and workers=2. Each runs in a child process of its own; the time is taken inside the child
   around the call alone, and the child's peak RSS comes from ``os.wait4`` (``ru_maxrss``),
   beside that of an idle child that imports the same modules and does nothing.
3. For context, the store's I/O alone: the same bytes written as files of the chunk size the
   way the store writes blocks (temp file, fsync, rename, directory fsync; and without the
   fsyncs), with no crypto or hashing.
4. The same through the command line, ``hearth adds publish`` and ``hearth adds open`` (fsync
   on, the default workers=2), timed from outside: start-up included.

Ratios (of the figures timed inside the child): publish/limit and open/limit against the goal
0.5; peak RSS against the goal 100 MB. The input file is freshly written, so it is read from the
page cache, not the disk; ``os.sync()`` runs before each measurement, so that none pays for
writing back another's dirty pages.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

GOAL_RATIO = 0.5
GOAL_RSS_MB = 100.0
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
    from hearth.blockstore.direct_io import SequentialFile  # noqa: PLC0415

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
        target = SequentialFile(partial)  # as the CLI writes it: direct where possible
        try:
            for chunk in chunks:
                target.write(chunk)
                size += len(chunk)
            target.finish()
        finally:
            target.close()
        os.replace(partial, out)
        seconds = time.perf_counter() - started
        if size != os.path.getsize(args.input):
            print(f"open gave {size} bytes, not {os.path.getsize(args.input)}", file=sys.stderr)
            return 1
    print(json.dumps({"seconds": seconds, "bytes": size}))
    return 0


# --- the parent side ------------------------------------------------------------------------


@dataclass
class Run:
    name: str
    seconds: float
    size: int
    peak_rss_mb: float
    cpu_seconds: float
    timed: str  # "inside" (the call alone) or "outside" (the whole process, start-up included)

    @property
    def mb_per_s(self) -> float:
        return self.size / self.seconds / 1e6 if self.seconds > 0 else 0.0


def run_child(command: list[str], name: str, size: int, *, timed: str = "inside") -> Run:
    """Run ``command``; its time (its own report, or the wall time) and its rusage."""
    os.sync()  # no dirty pages left by an earlier run to write back during this one
    started = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
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
        name=name,
        seconds=seconds,
        size=size,
        peak_rss_mb=usage.ru_maxrss * 1024 / 1e6,  # kilobytes on Linux
        cpu_seconds=usage.ru_utime + usage.ru_stime,
        timed=timed,
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


def measure_io(size: int, chunk_size: int, directory: Path, *, fsync: bool) -> float:
    """Seconds to write ``size`` bytes as files of ``chunk_size`` the way the store writes a
    block (a temp file, written, fsynced, renamed, the directory fsynced), with no crypto and
    no hashing: what the disk and the kernel cost alone."""
    directory.mkdir()
    buffer = os.urandom(chunk_size)
    full, rest = divmod(size, chunk_size)
    pieces = [chunk_size] * full + ([rest] if rest else [])
    started = time.perf_counter()
    for index, length in enumerate(pieces):
        temp = directory / f".tmp-{index}"
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            view = memoryview(buffer)[:length]
            while view:
                view = view[os.write(fd, view) :]
            if fsync:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temp, directory / str(index))
        if fsync:
            dir_fd = os.open(directory, os.O_RDONLY)
            try:
                os.fsync(dir_fd)
            finally:
                os.close(dir_fd)
    # Left in place until the run ends (see measure): deleting a thousand files here would
    # slow the next measurement's file creation.
    return time.perf_counter() - started


def write_input(path: Path, size: int) -> None:
    with open(path, "wb") as file:
        remaining = size
        while remaining:
            piece = os.urandom(min(remaining, 4 * MiB))
            file.write(piece)
            remaining -= len(piece)


@dataclass
class Report:
    size: int
    chunk_size: int
    directory: str
    limit_start: float
    limit_end: float
    io_seconds: dict[str, float]
    idle_rss_mb: float
    runs: list[Run]
    machine: dict[str, Any]

    @property
    def limit_mb_per_s(self) -> float:
        return self.size / min(self.limit_start, self.limit_end) / 1e6

    def ratio(self, run: Run) -> float:
        return run.mb_per_s / self.limit_mb_per_s

    def verdicts(self) -> list[str]:
        lines = []
        for run in self.runs:
            if run.timed != "inside":
                continue
            ratio = self.ratio(run)
            verdict = "met" if ratio >= GOAL_RATIO else "missed"
            label = run.name.split(" ", 1)
            lines.append(
                f"{label[0]}/limit ({label[1]}) = {ratio:.3f} (goal {GOAL_RATIO}): goal {verdict}"
            )
        for run in self.runs:
            verdict = "met" if run.peak_rss_mb <= GOAL_RSS_MB else "missed"
            lines.append(
                f"peak RSS {run.name} = {run.peak_rss_mb:.1f} MB (goal {GOAL_RSS_MB:.0f} MB): "
                f"goal {verdict}"
            )
        return lines

    def against_io(self) -> list[str]:
        """Each publish beside the store's I/O alone with the same fsync setting: how much of
        the disk's (or the page cache's) pace is left once the crypto is added."""
        lines = []
        for run in self.runs:
            if run.name.startswith("publish fsync "):
                setting = run.name.split()[2].rstrip(",")
                io_rate = self.size / self.io_seconds[setting] / 1e6
                lines.append(
                    f"publish/store I/O alone ({run.name.split(' ', 1)[1]}) = "
                    f"{run.mb_per_s / io_rate:.3f}"
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
            "store I/O alone (the same bytes as files written, renamed, no crypto): "
            + ", ".join(
                f"fsync {name} {self.size / seconds / 1e6:.1f} MB/s"
                for name, seconds in self.io_seconds.items()
            ),
            "",
            f"  {'run':<38}{'MB/s':>9}{'ratio':>8}{'seconds':>9}{'CPU s':>8}{'peak RSS MB':>13}",
        ]
        for run in self.runs:
            lines.append(
                f"  {run.name:<38}{run.mb_per_s:>9.1f}{self.ratio(run):>8.3f}"
                f"{run.seconds:>9.2f}{run.cpu_seconds:>8.2f}{run.peak_rss_mb:>13.1f}"
            )
        lines.append(f"  {'idle child (same imports)':<38}{'':>42}{self.idle_rss_mb:>13.1f}")
        lines += [
            "",
            "MB/s is 10^6 bytes per second; ratio is MB/s over the limit. The cli rows are timed",
            "from outside, start-up included; the others around the call alone. open with",
            "workers=2 fetches, verifies and decrypts the next chunks in two threads while the",
            "calling thread writes the current one.",
            "",
            *self.against_io(),
            "",
            *self.verdicts(),
        ]
        return "\n".join(lines)

    def as_json(self) -> dict[str, Any]:
        return {
            "size": self.size,
            "chunk_size": self.chunk_size,
            "limit_mb_per_s": self.limit_mb_per_s,
            "io_mb_per_s": {
                name: self.size / seconds / 1e6 for name, seconds in self.io_seconds.items()
            },
            "idle_rss_mb": self.idle_rss_mb,
            "machine": self.machine,
            "runs": [
                {**asdict(run), "mb_per_s": run.mb_per_s, "ratio": self.ratio(run)}
                for run in self.runs
            ],
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
    io_seconds = {}
    for name, fsync in (("on", True), ("off", False)):
        os.sync()
        io_seconds[name] = measure_io(args.size, args.chunk_size, work / f"io-{name}", fsync=fsync)

    def child_args(kind: str, store: Path, **extra: Any) -> list[str]:
        command = [*me, "--child", kind, "--work", str(work), "--input", str(source)]
        command += ["--store", str(store), "--chunk-size", str(args.chunk_size)]
        for name, value in extra.items():
            command += [f"--{name.replace('_', '-')}", str(value)]
        return command

    runs: list[Run] = []
    idle = run_child(child_args("idle", work / "none"), "idle", 0)
    # Every store stays until the whole run ends. ext4 skips recently deleted inodes when it
    # allocates one, scanning past each (perf: ext4_create -> recently_deleted): a store of a
    # thousand blocks deleted just before a publish made that publish's file creation cost
    # several times what it costs on a file system at rest, which is not the store's cost.
    kept = work / "store-kept"
    for fsync in (1, 0):
        for workers in (1, 2):
            keep = fsync == 1 and workers == 1
            store = kept if keep else work / f"store-{fsync}-{workers}"
            command = child_args("publish", store, fsync=fsync, workers=workers, keep=int(keep))
            name = f"publish fsync {'on' if fsync else 'off'}, workers={workers}"
            runs.append(run_child(command, name, args.size))
    for workers in (1, 2):
        name = f"open fsync on, workers={workers}"
        runs.append(run_child(child_args("open", kept, workers=workers), name, args.size))
        (work / "opened").unlink()

    hearth = Path(sys.executable).with_name("hearth")
    if not args.no_cli and hearth.is_file():
        runs += cli_runs(hearth, work, source, args)
    limit_end = measure_limit(args.size)
    machine["load_end"] = _load()
    return Report(
        size=args.size,
        chunk_size=args.chunk_size,
        directory=str(work.parent),
        limit_start=limit_start,
        limit_end=limit_end,
        io_seconds=io_seconds,
        idle_rss_mb=idle.peak_rss_mb,
        runs=runs,
        machine=machine,
    )


def cli_runs(hearth: Path, work: Path, source: Path, args: argparse.Namespace) -> list[Run]:
    keys = subprocess.run(
        [hearth, "adds", "keygen", "--out", work / "cli"], capture_output=True, check=True
    )
    reader = dict(line.split(": ") for line in keys.stdout.decode().splitlines())
    store, grants = work / "store-cli", work / "grants"
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
        work / "cli-manifest.json",
        "--quiet",
    ]
    runs = [run_child([str(a) for a in publish], "cli publish", args.size, timed="outside")]
    (grant,) = grants.iterdir()
    opening = [
        hearth,
        "adds",
        "open",
        work / "cli-manifest.json",
        "--grant",
        grant,
        "--key",
        work / "cli.x25519.pem",
        "--blocks",
        store,
        "-o",
        work / "cli-opened",
        "--quiet",
    ]
    runs.append(run_child([str(a) for a in opening], "cli open", args.size, timed="outside"))
    if (work / "cli-opened").stat().st_size != args.size:
        raise RuntimeError("hearth adds open wrote the wrong number of bytes")
    return runs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    parser.add_argument("--size", type=parse_size, default=1 << 30, help="default 1GiB")
    parser.add_argument("--chunk-size", type=parse_size, default=MiB, help="default 1MiB")
    parser.add_argument("--dir", type=Path, default=None, help="where temporary files go")
    parser.add_argument("--json", action="store_true", help="a JSON summary instead")
    parser.add_argument("--no-cli", action="store_true", help="skip the command-line runs")
    for hidden in ("--child", "--work", "--input", "--store"):
        parser.add_argument(hidden, help=argparse.SUPPRESS)
    parser.add_argument("--fsync", type=int, default=1, help=argparse.SUPPRESS)
    parser.add_argument("--workers", type=int, default=1, help=argparse.SUPPRESS)
    parser.add_argument("--keep", type=int, default=0, help=argparse.SUPPRESS)
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
