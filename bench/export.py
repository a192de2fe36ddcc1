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
3. ``hearth adds publish`` (the command) of a file holding exactly the life's JSON lines,
   into a block store directory (fsync on, the command's default): the reference.

Ratios: export MB/s and verify MB/s over publish MB/s, against the goal 0.5; peak RSS against
the goal 150 MB. MB/s counts plaintext bytes (10^6 a MB).
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

GOAL_RATIO = 0.5
GOAL_RSS_MB = 150.0
MiB = 1 << 20
THOUGHT_BYTES = 3072  # sealed bytes per thought (a paragraph and its tag), before base64
_UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}


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


def life_lines(memories: int, thought_bytes: int) -> Iterator[tuple[str, bytes]]:
    """(data set, JSON line) for the whole life, in the order an export writes them."""
    identity = str(uuid.UUID(int=1))
    yield (
        "identity",
        json.dumps({"kind": "identity", "record": {"identity_id": identity}}).encode() + b"\n",
    )
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
    yield (
        "strands",
        json.dumps({"kind": "strand", "record": {"id": "s", "name": "musings"}}).encode() + b"\n",
    )
    written = 0
    for seq, sealed in enumerate(_rng(7), start=1):
        if written >= thought_bytes:
            break
        record = {"seq": seq, "ciphertext": base64.b64encode(sealed).decode(), "nonce": "AAAA"}
        line = json.dumps({"kind": "thought", "record": record}).encode() + b"\n"
        written += len(line)
        yield "strands", line


# --- the child side ----------------------------------------------------------------------------


def child(args: argparse.Namespace) -> int:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import (  # noqa: PLC0415
        Ed25519PrivateKey,
    )
    from cryptography.hazmat.primitives.asymmetric.x25519 import (  # noqa: PLC0415
        X25519PrivateKey,
    )

    from hearth.adds.car import CarWriter  # noqa: PLC0415
    from hearth.client.export import EXPORT_WORKERS, verify_export  # noqa: PLC0415
    from hearth.client.mnemonic_keys import IdentityKeys  # noqa: PLC0415
    from hearth.proofs.life import DATA_SETS, LifeWriter  # noqa: PLC0415

    keys = IdentityKeys(
        signing=Ed25519PrivateKey.from_private_bytes(bytes(range(32))),
        box=X25519PrivateKey.from_private_bytes(bytes(range(1, 33))),
        strand_master=bytes(32),
    )
    if args.child == "export":
        with open(args.car, "wb") as out:
            car = CarWriter(out)
            writer = LifeWriter(
                car,
                key=keys.signing,
                did="did:svc:bench",
                box_public=keys.box_public_raw,
                exported_at=int(time.time()),
                workers=EXPORT_WORKERS,
            )
            for name in DATA_SETS:
                # Each data set's records, read from the file the parent wrote (as publish
                # reads its input): the pipeline is measured, not the making of the records.
                with open(Path(args.car).with_name(f"set-{name}.jsonl"), "rb") as lines:
                    writer.add(name, lines)
            head = writer.finish({"identity_id": "bench", "service": "http://bench"})
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--thoughts", type=parse_size, default=1 << 30)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--dir", type=Path, default=None)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--child", choices=["export", "verify"], help=argparse.SUPPRESS)
    parser.add_argument("--car", help=argparse.SUPPRESS)
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
        figures: dict[str, list[tuple[float, float]]] = {"export": [], "verify": [], "publish": []}
        me = [python, __file__, "--memories", str(args.memories), "--thoughts", str(args.thoughts)]
        for round_ in range(args.repeat):
            car = work / f"life-{round_}.car"
            wall, rss, out_text = run_measured([*me, "--child", "export", "--car", str(car)])
            assert json.loads(out_text)["bytes"] >= size
            figures["export"].append((wall, rss))
            wall, rss, out_text = run_measured([*me, "--child", "verify", "--car", str(car)])
            figures["verify"].append((wall, rss))
            car.unlink()
            store = work / f"store-{round_}"
            publish = [hearth, "adds", "publish", str(source), "--key", str(work / "k.ed25519.pem")]
            publish += ["--publisher-id", "bench", "--blocks", str(store), "-q"]
            publish += ["-o", str(work / f"m-{round_}.json")]
            publish += ["--content-key-out", str(work / f"ck-{round_}")]
            figures["publish"].append(run_measured(publish)[:2])
            subprocess.run(["rm", "-rf", str(store)], check=True)
    rates = {
        name: size / statistics.median(wall for wall, _ in runs) / 1e6
        for name, runs in figures.items()
    }
    peaks = {name: max(rss for _, rss in runs) for name, runs in figures.items()}
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
    for name in ("export", "verify", "publish"):
        print(f"  {name:<8} {rates[name]:8.1f} MB/s   peak RSS {peaks[name]:7.1f} MB")
    for name in ("export", "verify"):
        ratio = summary[f"ratio_{name}"]
        verdict = "met" if ratio >= GOAL_RATIO else "missed"
        print(f"  {name}/publish = {ratio:.2f} (goal {GOAL_RATIO}: {verdict})")
    worst = max(peaks["export"], peaks["verify"])
    verdict = "met" if worst <= GOAL_RSS_MB else "missed"
    print(f"  peak RSS of export and verify {worst:.1f} MB (goal {GOAL_RSS_MB:.0f} MB: {verdict})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
