"""Export of an identity's life (issue 20) beside ``hearth adds publish`` of the same bytes.

Run ``.venv/bin/python bench/export.py``. ``--memories`` (default 100000) and ``--thoughts``
(default 1GiB of sealed thoughts, as JSON lines) size the life, ``--repeat`` (default 3; the
median counts) how often each step runs, ``--dir`` where the files go, ``--json`` prints a
machine-readable summary. A measurement, not a test: it exits 0 whether or not the goals are
met.

What it measures, each step a child process of its own, timed from outside (interpreter start
and imports included), its peak RSS from ``os.wait4``:

1. ``export``: the write side of ``hearth export``: a synthetic life (memories as the SDK reads
   them, strands with sealed thoughts in base64, the other data sets nearly empty), its JSON
   lines written beforehand to one file per data set and read back from the page cache, as
   ``hearth adds publish`` reads its input, and written by ``hearth.proofs.life.LifeWriter``
   into a ``hearth.adds.car.CarWriter`` file (fsynced): every data set an ADDS object, granted
   and indexed under a signed head, the same code ``hearth export`` runs once it has the
   records. Not included: reading the records through the service's listings (bound by the
   service, a page of records per request) and turning them into JSON lines.
2. ``verify --open``: ``hearth.client.export.verify_export`` of that file with the owner's
   keys: every block hashed, every document validated, every object opened and its records
   counted: the checks an import will run before writing anything.
3. ``import``: ``hearth.client.export.import_export`` of that file into a fresh ``hearth
   serve`` (its own SQLite database, or with ``--database-url`` a new database on that
   PostgreSQL server, dropped after; started before and stopped after, not timed): the
   export checked and granted to the service (new grants, index and head), sent as the
   request's body spliced with the export's own blocks, and the service's whole import
   (spooling, verification with every object opened, the key proof, every record written in
   one transaction) until it answers. The client's peak RSS is
   the child's; the service's is its ``VmHWM`` after the import (reported with its RSS before
   it: what a served process holds anyway).
4. ``hearth adds publish`` (the command) of a file holding exactly the life's JSON lines,
   into a block store directory (fsync on, the command's default): the reference.
5. ``database alone``: the import's database (a new SQLite file with the service's pragmas, or
   a new database on the ``--database-url`` server) storing the life's memories and sealed
   thoughts in bare tables (a primary key each, no other index, no trigger, no hearth code),
   in one transaction as the import does, by the driver's fastest bulk path (SQLite:
   ``executemany``; PostgreSQL: ``COPY``), the rows made beforehand and only the database's
   calls and the commit timed: the most any import that keeps these bytes in this database
   can reach, measured in the same run.

Ratios: export, verify and import MB/s over publish MB/s, against the goal 0.5, and the
database alone over publish (the import's ceiling); peak RSS against the goal 150 MB. MB/s
counts plaintext bytes (10^6 a MB). The life is importable: its records are what the service
reads (an identity with the bench's keys, memories, a strand and its sealed thoughts).
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # tests/support/postgres.py, the one way to a fresh database

GOAL_RATIO = 0.5
GOAL_RSS_MB = 150.0
MiB = 1 << 20
THOUGHT_BYTES = 3072  # sealed bytes per thought (a paragraph and its tag), before base64
_UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}
IDENTITY = str(uuid.UUID(int=1))
STRAND = str(uuid.UUID(int=2))


def parse_size(text: str) -> int:
    for unit, factor in sorted(_UNITS.items(), key=lambda item: -len(item[0])):
        if text.endswith(unit):
            return int(float(text[: -len(unit)]) * factor)
    return int(text)


# --- the life: the same bytes for every step -------------------------------------------------


def _rng(seed: int) -> Iterator[bytes]:
    """Deterministic bytes (not secret): each step regenerates exactly the same life."""
    import hashlib  # noqa: PLC0415

    counter = 0
    while True:
        yield hashlib.shake_256(b"%d/%d" % (seed, counter)).digest(THOUGHT_BYTES)
        counter += 1


def bench_keys() -> Any:
    """The bench identity's keys (fixed: not secret, the same in every process)."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import (  # noqa: PLC0415
        Ed25519PrivateKey,
    )
    from cryptography.hazmat.primitives.asymmetric.x25519 import (  # noqa: PLC0415
        X25519PrivateKey,
    )

    from hearth.client.mnemonic_keys import IdentityKeys  # noqa: PLC0415

    return IdentityKeys(
        signing=Ed25519PrivateKey.from_private_bytes(bytes(range(32))),
        box=X25519PrivateKey.from_private_bytes(bytes(range(1, 33))),
        strand_master=bytes(32),
    )


def life_lines(memories: int, thought_bytes: int) -> Iterator[tuple[str, bytes]]:
    """(data set, JSON line) for the whole life, in the order an export writes them."""
    identity = IDENTITY
    keys = bench_keys()
    record = {
        "identity_id": identity,
        "did": f"did:svc:{identity}",
        "service": "http://bench",
        "root_public_key": base64.b64encode(keys.signing_public_raw).decode(),
        "box_public_key": base64.b64encode(keys.box_public_raw).decode(),
    }
    yield ("identity", json.dumps({"kind": "identity", "record": record}).encode() + b"\n")
    yield (
        "expression",
        json.dumps({"kind": "expression", "record": {"register": "calm"}}).encode() + b"\n",
    )
    for n in range(memories):
        record = {
            "id": str(uuid.UUID(int=n + 10)),
            "agent_id": identity,
            "tier": "episodic",
            "key": None,
            "content": f"Memory {n}: the garden after the rain, and what it taught me. " * 3,
            "created_at": "2026-11-28T01:00:00.000000Z",
            "provenance": {"channel": "api", "api_key_id": None, "runtime_id": None},
            "attestations": [],
            "supersedes": None,
        }
        yield "memories", json.dumps({"kind": "memory", "record": record}).encode() + b"\n"
    strand = {"id": STRAND, "name": "musings", "next_seq": 1}
    yield "strands", json.dumps({"kind": "strand", "record": strand}).encode() + b"\n"
    written = 0
    nonce = base64.b64encode(bytes(12)).decode()
    for seq, sealed in enumerate(_rng(7), start=1):
        if written >= thought_bytes:
            break
        record = {
            "id": str(uuid.UUID(int=(1 << 64) + seq)),
            "strand_id": STRAND,
            "seq": seq,
            "ciphertext": base64.b64encode(sealed).decode(),
            "nonce": nonce,
        }
        line = json.dumps({"kind": "thought", "record": record}).encode() + b"\n"
        written += len(line)
        yield "strands", line


# --- the database alone ------------------------------------------------------------------------

FLOOR_BATCH = 10_000  # rows made, then stored, at a time (the rows of 1 GiB would not fit)
FLOOR = ("floor_memories", "floor_thoughts")
FLOOR_TABLES = (
    "CREATE TABLE floor_memories (id VARCHAR(36) PRIMARY KEY, content TEXT NOT NULL)",
    "CREATE TABLE floor_thoughts (id VARCHAR(36) PRIMARY KEY, strand_id VARCHAR(36) NOT NULL,"
    " seq INTEGER NOT NULL, ciphertext {blob} NOT NULL, nonce {blob} NOT NULL)",
)


def floor_batches(memories: int, thought_bytes: int) -> Iterator[tuple[str, list[tuple[Any, ...]]]]:
    """(table, rows) of the life's memories and thoughts as a database holds them at least:
    the memory's text, the thought's sealed bytes and nonce decoded from base64."""
    batch: list[tuple[Any, ...]] = []
    table = "floor_memories"
    for _, line in life_lines(memories, thought_bytes):
        entry = json.loads(line)
        record = entry["record"]
        if entry["kind"] == "memory":
            row: tuple[Any, ...] = (record["id"], record["content"])
            kind = "floor_memories"
        elif entry["kind"] == "thought":
            nonce = base64.b64decode(record["nonce"])
            sealed = base64.b64decode(record["ciphertext"])
            row = (record["id"], record["strand_id"], record["seq"], sealed, nonce)
            kind = "floor_thoughts"
        else:
            continue
        if kind != table or len(batch) >= FLOOR_BATCH:
            if batch:
                yield table, batch
            batch, table = [], kind
        batch.append(row)
    if batch:
        yield table, batch


def floor_sqlite(
    path: str, batches: Iterator[tuple[str, list[tuple[Any, ...]]]]
) -> tuple[float, dict[str, int]]:
    import sqlite3  # noqa: PLC0415

    from hearth.server.db.engine import SQLITE_PRAGMAS  # noqa: PLC0415

    conn = sqlite3.connect(path, isolation_level=None)
    try:
        for pragma in SQLITE_PRAGMAS:
            conn.execute(pragma)
        for table in FLOOR_TABLES:
            conn.execute(table.format(blob="BLOB"))
        spent = 0.0
        conn.execute("BEGIN IMMEDIATE")
        for table, rows in batches:
            marks = ", ".join("?" * len(rows[0]))
            started = time.perf_counter()
            conn.executemany(f"INSERT INTO {table} VALUES ({marks})", rows)
            spent += time.perf_counter() - started
        started = time.perf_counter()
        conn.execute("COMMIT")  # SQLite's own checkpoint runs here, as after the import's
        spent += time.perf_counter() - started
        return spent, {t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in FLOOR}
    finally:
        conn.close()


def floor_postgresql(
    url: str, batches: Iterator[tuple[str, list[tuple[Any, ...]]]]
) -> tuple[float, dict[str, int]]:
    import asyncio  # noqa: PLC0415

    import asyncpg  # noqa: PLC0415

    async def run() -> tuple[float, dict[str, int]]:
        conn = await asyncpg.connect(url.replace("postgresql+asyncpg://", "postgresql://"))
        try:
            for table in FLOOR_TABLES:
                await conn.execute(table.format(blob="bytea"))
            # As migration 0017 stores thoughts: inline, never compressed.
            await conn.execute("ALTER TABLE floor_thoughts ALTER ciphertext SET STORAGE EXTERNAL")
            spent = 0.0
            transaction = conn.transaction()
            await transaction.start()
            for table, rows in batches:
                started = time.perf_counter()
                await conn.copy_records_to_table(table, records=rows)
                spent += time.perf_counter() - started
            started = time.perf_counter()
            await transaction.commit()
            spent += time.perf_counter() - started
            counts = {t: await conn.fetchval(f"SELECT count(*) FROM {t}") for t in FLOOR}
            return spent, counts
        finally:
            await conn.close()

    return asyncio.run(run())


# --- the child side ----------------------------------------------------------------------------


def child(args: argparse.Namespace) -> int:
    from hearth.adds.car import CarWriter  # noqa: PLC0415
    from hearth.client import HearthClient  # noqa: PLC0415
    from hearth.client.export import EXPORT_WORKERS, import_export, verify_export  # noqa: PLC0415
    from hearth.proofs.life import DATA_SETS, LifeWriter  # noqa: PLC0415

    if args.child == "floor":
        batches = floor_batches(args.memories, args.thoughts)
        if args.url.startswith("postgresql"):
            seconds, rows = floor_postgresql(args.url, batches)
        else:
            seconds, rows = floor_sqlite(args.url.split("///", 1)[1], batches)
        print(json.dumps({"seconds": seconds, "rows": rows}))
        return 0
    keys = bench_keys()
    if args.child == "import":
        bearer = os.environ["HEARTH_BENCH_BEARER"]
        with HearthClient(args.url, api_key=bearer) as client, open(args.car, "rb") as source:
            imported = import_export(client, source, keys=keys)
        print(json.dumps({"records": imported.records}))
    elif args.child == "export":
        with open(args.car, "wb") as out:
            car = CarWriter(out)
            writer = LifeWriter(
                car,
                key=keys.signing,
                did=f"did:svc:{IDENTITY}",
                box_public=keys.box_public_raw,
                exported_at=int(time.time()),
                workers=EXPORT_WORKERS,
            )
            for name in DATA_SETS:
                # Each data set's records, read from the file the parent wrote (as publish
                # reads its input): the pipeline is measured, not the making of the records.
                with open(Path(args.car).with_name(f"set-{name}.jsonl"), "rb") as lines:
                    writer.add(name, lines)
            head = writer.finish({"identity_id": IDENTITY, "service": "http://bench"})
            car.finish([head.cid])
            out.flush()
            os.fsync(out.fileno())
        print(json.dumps({"bytes": sum(entry.size for entry in writer.objects.values())}))
    else:
        with open(args.car, "rb") as stream:
            report = verify_export(stream, box_key=keys.box)
        if not report.ok:
            raise SystemExit(f"verify failed: {report.problems[:3]}")
        print(json.dumps({"bytes": report.opened_bytes}))
    return 0


# --- the parent side ---------------------------------------------------------------------------


def run_measured(command: list[str]) -> tuple[float, float, str]:
    """Like ``run``, with the peak RSS read from ``os.wait4`` for this child alone."""
    os.sync()
    started = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert process.stdout is not None
    assert process.stderr is not None
    stdout, stderr = process.stdout.read(), process.stderr.read()
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    process.stdout.close()
    process.stderr.close()
    if process.returncode != 0:
        raise RuntimeError(f"{command[:4]} failed: {stderr.decode(errors='replace')[-2000:]}")
    return wall, usage.ru_maxrss * 1024 / 1e6, stdout.decode()


@contextlib.contextmanager
def database(work: Path, server: str | None) -> Iterator[str]:
    """A new, empty database for one service: a SQLite file in ``work``, or a database made on
    the PostgreSQL ``server`` (a SQLAlchemy URL) and dropped afterwards."""
    if server is None:
        yield f"sqlite+aiosqlite:///{work}/hearth.sqlite3"
        return
    # tests/support/postgres.py imports asyncpg alone: this process stays small, and a child
    # started by vfork reports the parent's RSS as its own peak.
    from tests.support.postgres import fresh_database  # noqa: PLC0415

    with fresh_database(server) as url:
        yield url


@contextlib.contextmanager
def served(work: Path, hearth: str, database_url: str) -> Iterator[tuple[str, int]]:
    """A fresh ``hearth serve`` on the (empty) database ``database_url``: (address, pid)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("SERVICE_")}
    env.update(
        SERVICE_DATABASE_URL=database_url,
        SERVICE_PUBLIC_BASE_URL=url,
        SERVICE_POW_DIFFICULTY_BITS="8",
        SERVICE_BLOCKS_DIR=str(work / "blocks"),
        SERVICE_WORKER_IN_PROCESS="false",
        SERVICE_LOG_LEVEL="warning",
        SERVICE_MAX_IMPORT_BYTES=str(1 << 40),
    )
    command = [hearth, "serve", "--host", "127.0.0.1", "--port", str(port)]
    with (work / "serve.log").open("wb") as log:
        process = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        import httpx2  # noqa: PLC0415

        deadline = time.monotonic() + 90
        while True:
            with contextlib.suppress(httpx2.HTTPError):
                if httpx2.get(f"{url}/healthz", timeout=1).status_code == 200:
                    break
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError((work / "serve.log").read_text()[-2000:])
            time.sleep(0.2)
        yield url, process.pid
    finally:
        process.terminate()
        process.wait(timeout=60)


def rss_mb(pid: int, field: str) -> float:
    """``VmRSS`` or ``VmHWM`` (peak) of a process, in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) * 1024 / 1e6
    return 0.0


def cpu_seconds(pid: int) -> float:
    """User and system CPU time of a process so far (``/proc/<pid>/stat``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure_import(
    me: list[str], car: Path, work: Path, hearth: str, server: str | None
) -> dict[str, float]:
    """One import into a fresh service: the client's wall time and peak RSS, the service's
    RSS before and its peak after, and the CPU time the service spent on it (on a loaded
    machine the wall time also counts waiting for a core)."""
    from hearth.client import HearthClient  # noqa: PLC0415
    from hearth.client.mnemonic_keys import new_identity  # noqa: PLC0415

    work.mkdir()
    with database(work, server) as database_url, served(work, hearth, database_url) as (url, pid):
        with HearthClient(url) as client:
            host = client.register(new_identity().keys, "Host", pow_difficulty=8)
        before = rss_mb(pid, "VmRSS")
        cpu = cpu_seconds(pid)
        os.environ["HEARTH_BENCH_BEARER"] = host.api_key
        try:
            wall, rss, _ = run_measured([*me, "--child", "import", "--car", str(car), "--url", url])
        finally:
            del os.environ["HEARTH_BENCH_BEARER"]
        return {
            "wall": wall,
            "rss": rss,
            "service_before": before,
            "service_peak": rss_mb(pid, "VmHWM"),
            "service_cpu": cpu_seconds(pid) - cpu,
        }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--thoughts", type=parse_size, default=1 << 30)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--dir", type=Path, default=None)
    parser.add_argument("--json", action="store_true")
    # A PostgreSQL server (SQLAlchemy URL): each import's service gets a new database on it.
    parser.add_argument("--database-url", default=None)
    parser.add_argument(
        "--child", choices=["export", "verify", "import", "floor"], help=argparse.SUPPRESS
    )
    parser.add_argument("--car", help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args)

    from hearth.proofs.life import DATA_SETS  # noqa: PLC0415

    python = sys.executable
    hearth = str(Path(python).with_name("hearth"))
    with tempfile.TemporaryDirectory(dir=args.dir, prefix="bench-export-") as tmp:
        work = Path(tmp)
        source = work / "life.jsonl"
        with source.open("wb") as out:
            sets = {name: (work / f"set-{name}.jsonl").open("wb") for name in DATA_SETS}
            for name, line in life_lines(args.memories, args.thoughts):
                out.write(line)
                sets[name].write(line)
            for each in sets.values():
                each.close()
        size = source.stat().st_size
        subprocess.run(
            [hearth, "adds", "keygen", "--out", str(work / "k")], check=True, capture_output=True
        )
        figures: dict[str, list[tuple[float, float]]] = {
            "export": [],
            "verify": [],
            "import": [],
            "publish": [],
        }
        service: list[tuple[float, float, float]] = []
        floor_s: list[float] = []
        floor_rows: dict[str, int] = {}
        me = [python, __file__, "--memories", str(args.memories), "--thoughts", str(args.thoughts)]
        for round_ in range(args.repeat):
            car = work / f"life-{round_}.car"
            wall, rss, out_text = run_measured([*me, "--child", "export", "--car", str(car)])
            assert json.loads(out_text)["bytes"] >= size
            figures["export"].append((wall, rss))
            wall, rss, out_text = run_measured([*me, "--child", "verify", "--car", str(car)])
            figures["verify"].append((wall, rss))
            imported = measure_import(
                me, car, work / f"service-{round_}", hearth, args.database_url
            )
            figures["import"].append((imported["wall"], imported["rss"]))
            service.append(
                (imported["service_before"], imported["service_peak"], imported["service_cpu"])
            )
            subprocess.run(["rm", "-rf", str(work / f"service-{round_}")], check=True)
            car.unlink()
            store = work / f"store-{round_}"
            publish = [hearth, "adds", "publish", str(source), "--key", str(work / "k.ed25519.pem")]
            publish += ["--publisher-id", "bench", "--blocks", str(store), "-q"]
            publish += ["-o", str(work / f"m-{round_}.json")]
            publish += ["--content-key-out", str(work / f"ck-{round_}")]
            figures["publish"].append(run_measured(publish)[:2])
            subprocess.run(["rm", "-rf", str(store)], check=True)
            floor_work = work / f"floor-{round_}"
            floor_work.mkdir()
            with database(floor_work, args.database_url) as database_url:
                out_text = run_measured([*me, "--child", "floor", "--url", database_url])[2]
            stored = json.loads(out_text)
            floor_s.append(stored["seconds"])
            floor_rows = stored["rows"]
            subprocess.run(["rm", "-rf", str(floor_work)], check=True)
    rates = {
        name: size / statistics.median(wall for wall, _ in runs) / 1e6
        for name, runs in figures.items()
    }
    peaks = {name: max(rss for _, rss in runs) for name, runs in figures.items()}
    rates["database_alone"] = size / statistics.median(floor_s) / 1e6
    summary: dict[str, Any] = {
        "memories": args.memories,
        "thought_bytes": args.thoughts,
        "plaintext_bytes": size,
        "repeat": args.repeat,
        "load_average": os.getloadavg(),
        "mb_per_s": rates,
        "peak_rss_mb": peaks,
        "ratio_export": rates["export"] / rates["publish"],
        "ratio_verify": rates["verify"] / rates["publish"],
        "ratio_import": rates["import"] / rates["publish"],
        "ratio_database_alone": rates["database_alone"] / rates["publish"],
        "database_alone_rows": floor_rows,
        # The import checks everything before it writes anything: the two in series.
        "ratio_verify_then_database": 1
        / (1 / rates["verify"] + 1 / rates["database_alone"])
        / rates["publish"],
        "service_rss_mb": {
            "before_import": max(before for before, _, _ in service),
            "peak": max(peak for _, peak, _ in service),
        },
        "service_cpu_s": statistics.median(cpu for _, _, cpu in service),
        "goal_ratio": GOAL_RATIO,
        "goal_rss_mb": GOAL_RSS_MB,
    }
    if args.json:
        print(json.dumps(summary, indent=2))
        return 0
    print(
        f"life: {args.memories} memories, {args.thoughts / MiB:.0f} MiB of thoughts;"
        f" {size / 1e6:.1f} MB of JSON lines; median of {args.repeat};"
        f" load average {os.getloadavg()[0]:.2f}"
    )
    for name in ("export", "verify", "import", "publish"):
        print(f"  {name:<8} {rates[name]:8.1f} MB/s   peak RSS {peaks[name]:7.1f} MB")
    print(f"  database alone {rates['database_alone']:8.1f} MB/s   (bare tables, one transaction)")
    held = summary["service_rss_mb"]
    print(
        f"  import's service: RSS {held['before_import']:.1f} MB before, peak"
        f" {held['peak']:.1f} MB, CPU {summary['service_cpu_s']:.1f} s"
    )
    for name in ("export", "verify", "import"):
        ratio = summary[f"ratio_{name}"]
        verdict = "met" if ratio >= GOAL_RATIO else "missed"
        print(f"  {name}/publish = {ratio:.2f} (goal {GOAL_RATIO}: {verdict})")
    print(
        f"  database alone/publish = {summary['ratio_database_alone']:.2f} (the most an import"
        " storing these bytes in this database can reach)"
    )
    print(
        f"  verify, then the database alone = {summary['ratio_verify_then_database']:.2f} of"
        " publish (the import checks everything before it writes)"
    )
    worst = max(peaks["export"], peaks["verify"], peaks["import"])
    verdict = "met" if worst <= GOAL_RSS_MB else "missed"
    print(
        f"  peak RSS of export, verify and import's client {worst:.1f} MB"
        f" (goal {GOAL_RSS_MB:.0f} MB: {verdict})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
