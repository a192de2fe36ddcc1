"""ADDS validation throughput against the raw Ed25519 verify rate, measured in one run.

Run ``.venv/bin/python bench/adds_verify.py`` (or ``make bench``); ``--seconds N`` sets the
length of each headline measurement (default 2 s), ``--json`` prints a machine-readable summary
instead of the report. It is a measurement, not a test: it exits 0 whether or not the goal is met.

What it measures (docs/performance.md explains the figures):
1. Raw Ed25519 verifications per second with ``cryptography`` and with PyNaCl (libsodium), key
   loaded once, over a message the size of the grant's signed bytes. The faster of the two is the
   reference, "the raw verify rate".
2. Documents per second through ``hearth.adds.validate.validate(bytes)`` (strict parse, every
   rule, signer binding, signature), for a grant with every optional member and for a
   1,000-chunk manifest, every result asserted valid. Two figures each:
   - distinct documents: every call sees a signature it has not seen for thousands of calls, as
     a verifier does in service. This is the headline figure and the one held against the goal.
   - same bytes repeated: one document over and over, so anything memoized per signature or per
     document is free. It flatters; the gap between the two is what a new signature costs (it
     hid 1.4 ms per grant while the R point check sat behind an lru_cache).
3. The ratio grant rate / raw verify rate, against the goal of 0.5.
4. Where the time goes, in µs per call: parse, structural check, cross-member rules, signed
   bytes and ``ed25519.verify``, timed step by step in the order validate() runs them.
5. The canonicalizer's fast path against ``rfc8785.dumps``.
6. python-tuf on the same task, as the reference for large documents: ``Metadata.from_bytes``
   of targets metadata (compact JSON, Ed25519, one signature) followed by
   ``Metadata.verify_delegate`` from a root that lists the key (which canonicalizes the signed
   part and verifies with ``cryptography``), for 1,000 targets (about the manifest's size) and
   for 5 targets (about the grant's size). It takes turns with hearth's manifest and grant, and
   the report gives hearth's rate per byte over python-tuf's, against the goal of 1.5 for the
   large document (issue 15).

Every measurement is a ``time.perf_counter`` loop over a fixed duration. Measurements that are
compared take turns of 20 ms (raw verify, the grant and the small python-tuf document; the two
manifest figures and the large python-tuf document; the three canonicalizers), so a change in
load hits both sides of a ratio alike. The whole set runs three times in one process and the
best of the three is kept for each figure, so that a burst of work on the other core spoils one
sample rather than the result.
"""

from __future__ import annotations

import argparse
import datetime
import functools
import importlib.metadata
import itertools
import json
import os
import platform
import random
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import nacl.signing
import rfc8785
from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PrivateKey,
    Ed25519PublicKey,
)
from securesystemslib.signer import CryptoSigner
from tuf.api.metadata import Metadata, Root, TargetFile, Targets
from tuf.api.serialization.json import JSONSerializer

from hearth.adds import ed25519
from hearth.adds.b64 import b64url_decode
from hearth.adds.builders import (
    Chunk,
    Encryption,
    KeyWrap,
    Right,
    SignedDocument,
    build_grant,
    build_manifest,
)
from hearth.adds.canonical import canonicalize
from hearth.adds.cid import cid_for_bytes
from hearth.adds.documents import sign_document, signed_bytes
from hearth.adds.ijson import parse
from hearth.adds.kinds import KINDS
from hearth.adds.problems import Problem
from hearth.adds.validate import validate

# Grant documents per second / raw Ed25519 verifications per second: 0.7 since issue 15 (it was
# 0.5, issue 2).
GOAL = 0.7
# Issue 15: the 1,000-chunk manifest at no less than 1.5 times python-tuf's bytes per second on
# targets metadata of about the same size.
TUF_GOAL = 1.5
REPEATS = 3
MIB = 1 << 20
CHUNKS = 1_000
EPOCH = 1_700_000_000
# Distinct documents per measurement: every call sees a signature it has not seen for thousands
# of calls, so no per-signature memo in the path (a point-check lru_cache once hid 1.4 ms per
# grant) can flatter the figure. 8,192 grants are about 10 MB; manifests are 160 kB each, so
# there are fewer of them, but they are slow enough for a memo to matter little.
GRANT_POOL = 8192
MANIFEST_POOL = 8
TUF_TARGETS = {"small": 5, "large": CHUNKS}  # about the grant's and the manifest's size


# --- fixtures -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Fixture:
    """One signed document and what its signature covers."""

    name: str
    kind: str
    data: bytes
    document: dict[str, Any]
    simple: bool
    message: bytes
    public_key: bytes
    signature: bytes


def _fixture(name: str, signed: SignedDocument) -> Fixture:
    parsed = parse(signed.canonical)
    document: dict[str, Any] = parsed.value
    signature = document["signature"]
    return Fixture(
        name=name,
        kind=signed.kind,
        data=signed.canonical,
        document=document,
        simple=parsed.simple,
        message=signed_bytes(document, simple=parsed.simple),
        public_key=b64url_decode(signature["public_key"]),
        signature=b64url_decode(signature["value"]),
    )


def _grant(key: Ed25519PrivateKey, rng: random.Random) -> SignedDocument:
    """A typical grant with every optional member."""
    return build_grant(
        key=key,
        issuer_id="did:example:alice",
        grant_id="grant-00000",
        manifest_cid=cid_for_bytes(rng.randbytes(32)),
        audience="did:example:bob",
        audience_x25519_public_key=rng.randbytes(32),
        rights=[Right.READ, Right.DERIVE, Right.REPLICATE],
        issued_at=EPOCH,
        not_before=EPOCH + 60,
        expires_at=EPOCH + 30 * 86_400,
        key_wrap=KeyWrap(
            ephemeral_public_key=rng.randbytes(32),
            nonce=rng.randbytes(12),
            ciphertext=rng.randbytes(48),  # a 32-byte content key and the 16-byte tag
        ),
        parent_grant=cid_for_bytes(rng.randbytes(32)),
        task_id="task-7f3a",
        purpose="summarize the quarterly report",
        extensions={"example:trace": "3d1c9b2e"},
    )


def _grant_pool(base: SignedDocument, key: Ed25519PrivateKey, count: int) -> list[bytes]:
    """``count`` grants like ``base`` with distinct grant_id, hence distinct signatures."""
    unsigned = {k: v for k, v in base.document.items() if k != "signature"}
    pool = []
    for number in range(count):
        unsigned["grant_id"] = f"grant-{number:05d}"
        pool.append(canonicalize(sign_document(unsigned, key)))
    return pool


def _manifest(key: Ed25519PrivateKey, rng: random.Random, object_id: str) -> SignedDocument:
    """A 1,000-chunk manifest: 1 MiB chunks, the last one smaller."""
    sizes = [MIB] * (CHUNKS - 1) + [MIB // 3]
    chunks = [
        Chunk(index, cid_for_bytes(rng.randbytes(32)), rng.randbytes(12), size)
        for index, size in enumerate(sizes)
    ]
    return build_manifest(
        key=key,
        publisher_id="did:example:alice",
        object_id=object_id,
        created_at=EPOCH,
        plaintext_size=sum(sizes),
        encryption=Encryption(
            key_id="sha256:" + "A" * 43, chunk_size=MIB, aad_context=rng.randbytes(32)
        ),
        chunks=chunks,
        media_type="application/octet-stream",
    )


@dataclass(frozen=True)
class TufFixture:
    """Signed python-tuf targets metadata, and the root whose key list verifies them."""

    name: str
    pool: list[bytes]  # distinct documents (versions differ), hence distinct signatures
    root: Metadata[Root]

    def validate(self, data: bytes) -> None:
        """What a python-tuf client does with new targets metadata: parse (every member
        deserialized and type-checked) and verify the signature threshold."""
        metadata = Metadata[Targets].from_bytes(data)
        self.root.verify_delegate(Targets.type, metadata)


def _tuf_fixture(
    name: str, key: Ed25519PrivateKey, rng: random.Random, targets: int, count: int
) -> TufFixture:
    signer = CryptoSigner(key)
    expires = datetime.datetime(2030, 1, 1, tzinfo=datetime.UTC)
    root = Metadata(Root(expires=expires))
    root.signed.add_key(signer.public_key, Targets.type)
    files = {
        f"objects/object-{n:05d}.bin": TargetFile(
            length=MIB, hashes={"sha256": rng.randbytes(32).hex()}, path=f"objects/object-{n:05d}"
        )
        for n in range(targets)
    }
    # Compact, as hearth's canonical documents are: pretty-printed bytes would add whitespace
    # that costs the parser next to nothing and flatter python-tuf's bytes per second.
    serializer = JSONSerializer(compact=True)
    pool = []
    for version in range(1, count + 1):
        metadata = Metadata(Targets(version=version, expires=expires, targets=files))
        metadata.sign(signer)
        pool.append(metadata.to_bytes(serializer))
    fixture = TufFixture(name, pool, root)
    for data in (pool[0], pool[-1]):
        fixture.validate(data)  # raises when the signature does not verify
    return fixture


# --- timing ---------------------------------------------------------------------------------


SLICE = 0.02  # seconds per turn when measurements take turns (the docstring says 20 ms)


def _batch_size(call: Callable[[], object], target: float) -> int:
    """Calls that last at least ``target`` seconds (running them also warms up)."""
    batch = 1
    while batch < 1 << 20:
        start = time.perf_counter()
        for _ in range(batch):
            call()
        if time.perf_counter() - start >= target:
            break
        batch *= 2
    return batch


def interleaved_rates(calls: dict[str, Callable[[], object]], seconds: float) -> dict[str, float]:
    """Calls per second of each of ``calls``, run in turns of about ``SLICE`` seconds until each
    has run for ``seconds``, so that a change in the load on the machine hits all of them alike
    (their ratios are then fair even when their absolute figures are not)."""
    batches = {name: _batch_size(call, SLICE) for name, call in calls.items()}
    busy = dict.fromkeys(calls, 0.0)
    counts = dict.fromkeys(calls, 0)
    while min(busy.values()) < seconds:
        for name, call in calls.items():
            batch = batches[name]
            start = time.perf_counter()
            for _ in range(batch):
                call()
            busy[name] += time.perf_counter() - start
            counts[name] += batch
    return {name: counts[name] / busy[name] for name in calls}


Micros = dict[str, float]  # microseconds per call, by name ("" for a single figure)


@dataclass
class Measurement:
    """One measurement, run once per repetition; the best (lowest) figure of each name counts."""

    key: str
    run: Callable[[float], Micros]  # seconds -> µs per call
    seconds: float
    samples: list[Micros] = field(default_factory=list)

    def best(self) -> Micros:
        return {name: min(s[name] for s in self.samples) for name in self.samples[0]}


def _valid(data: bytes) -> None:
    result = validate(data)
    if result.errors:
        raise AssertionError(f"benchmark document is invalid: {result.errors}")


STEPS = ("parse", "structure", "cross", "signed_bytes", "verify")


def step_micros(fixture: Fixture, seconds: float) -> Micros:
    """µs per call of each step of validate(), run in sequence the way validate runs them (so
    each step sees the caches and the garbage collector as it does there), and of a whole
    validate() call in the same loop, so that the remainder is measured under the same load."""
    rules = KINDS[fixture.kind]
    data, public_key, signature = fixture.data, fixture.public_key, fixture.signature
    clock = time.perf_counter
    totals = [0.0] * (len(STEPS) + 1)
    calls = 0
    deadline = clock() + seconds
    while True:
        t0 = clock()
        parsed = parse(data)
        t1 = clock()
        document = parsed.value
        problems: list[Problem] = []
        rules.check_structure(document, problems)
        t2 = clock()
        for cross in rules.cross:
            cross(document, problems)
        t3 = clock()
        message = signed_bytes(document, simple=parsed.simple)
        t4 = clock()
        verified = ed25519.verify(public_key, signature, message)
        t5 = clock()
        _valid(data)
        t6 = clock()
        if problems or not verified:
            raise AssertionError(f"benchmark {fixture.kind} fails a step: {problems}")
        for index, (begin, finish) in enumerate(
            ((t0, t1), (t1, t2), (t2, t3), (t3, t4), (t4, t5), (t5, t6))
        ):
            totals[index] += finish - begin
        calls += 1
        if t6 >= deadline:
            names = (*STEPS, "validate")
            return {name: 1e6 * total / calls for name, total in zip(names, totals, strict=True)}


# --- the measurements -----------------------------------------------------------------------


def _measurements(
    grant: Fixture,
    grant_pool: list[bytes],
    manifest: Fixture,
    manifest_pool: list[bytes],
    tuf: dict[str, TufFixture],
    *,
    seconds: float,
) -> list[Measurement]:
    short = max(0.25, seconds / 4)
    out: list[Measurement] = []

    def add(key: str, run: Callable[[float], Micros], duration: float) -> None:
        out.append(Measurement(key, run, duration))

    def group(calls: dict[str, Callable[[], object]]) -> Callable[[float], Micros]:
        return lambda s: {name: 1e6 / rate for name, rate in interleaved_rates(calls, s).items()}

    # 1 and 2. Raw Ed25519 verification (key objects loaded once) and the full hot path,
    # validate(bytes), taking turns so that their ratio is fair.
    raw: dict[str, dict[str, Callable[[], object]]] = {}
    for fixture in (grant, manifest):
        openssl_key = Ed25519PublicKey.from_public_bytes(fixture.public_key)
        sodium_key = nacl.signing.VerifyKey(fixture.public_key)
        sig, msg = fixture.signature, fixture.message

        def openssl_verify(
            k: Ed25519PublicKey = openssl_key, s: bytes = sig, m: bytes = msg
        ) -> None:
            k.verify(s, m)

        def sodium_verify(
            k: nacl.signing.VerifyKey = sodium_key, s: bytes = sig, m: bytes = msg
        ) -> None:
            k.verify(m, s)

        raw[fixture.kind] = {
            f"raw.{fixture.kind}.cryptography": openssl_verify,
            f"raw.{fixture.kind}.pynacl": sodium_verify,
        }

    grants = itertools.cycle(grant_pool)
    small_tuf = tuf["small"]
    small_tuf_docs = itertools.cycle(small_tuf.pool)
    headline: dict[str, Callable[[], object]] = {
        **raw["grant"],
        "validate.grant.distinct": lambda: _valid(next(grants)),
        "validate.grant.repeated": lambda: _valid(grant.data),
        # 6. python-tuf on a document of about the grant's size, in the same turns.
        "tuf.small": lambda: small_tuf.validate(next(small_tuf_docs)),
    }
    add("", group(headline), seconds)
    manifests = itertools.cycle(manifest_pool)
    large_tuf = tuf["large"]
    large_tuf_docs = itertools.cycle(large_tuf.pool)
    big: dict[str, Callable[[], object]] = {
        "validate.manifest.distinct": lambda: _valid(next(manifests)),
        "validate.manifest.repeated": lambda: _valid(manifest.data),
        "tuf.large": lambda: large_tuf.validate(next(large_tuf_docs)),
    }
    add("", group(big), seconds)
    add("", group(raw["manifest"]), short)

    # 4. Breakdown of validate() into its steps.
    for fixture in (grant, manifest):
        add(f"steps.{fixture.kind}", functools.partial(step_micros, fixture), short)

    # 5. The canonicalizer: fast path (flag known / inspected) against rfc8785.
    for fixture in (grant, manifest):
        doc = fixture.document
        expected = bytes(rfc8785.dumps(doc))
        if canonicalize(doc) != expected or canonicalize(doc, simple=True) != expected:
            raise AssertionError(f"fast canonical form of the {fixture.kind} differs from rfc8785")
        encoders: dict[str, Callable[[], object]] = {
            f"canon.{fixture.kind}.fast_known": functools.partial(canonicalize, doc, simple=True),
            f"canon.{fixture.kind}.fast": functools.partial(canonicalize, doc),
            f"canon.{fixture.kind}.rfc8785": functools.partial(rfc8785.dumps, doc),
        }
        add("", group(encoders), short)
    return out


# --- report ---------------------------------------------------------------------------------


def _version(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "?"


def _commit() -> str | None:
    """The checked-out commit of the source measured, "+dirty" when src/ has local changes."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

    def git(*args: str) -> str:
        done = subprocess.run(
            ["git", "-C", root, *args], capture_output=True, text=True, check=False
        )
        return done.stdout.strip() if done.returncode == 0 else ""

    head = git("rev-parse", "--short", "HEAD")
    if not head:
        return None
    return head + ("+dirty" if git("status", "--porcelain", "--", "src") else "")


def _summary(
    measurements: list[Measurement],
    grant: Fixture,
    manifest: Fixture,
    tuf: dict[str, TufFixture],
    seconds: float,
) -> dict[str, Any]:
    best: Micros = {}
    for measurement in measurements:
        for name, value in measurement.best().items():
            best[".".join(part for part in (measurement.key, name) if part)] = value

    def rate(key: str) -> float:
        return 1e6 / best[key]

    raw = {lib: rate(f"raw.grant.{lib}") for lib in ("cryptography", "pynacl")}
    fastest = max(raw, key=raw.__getitem__)
    reference = raw[fastest]
    summary: dict[str, Any] = {
        "date": datetime.date.today().isoformat(),
        "commit": _commit(),
        "machine": {
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "python": platform.python_version(),
            "cryptography": _version("cryptography"),
            "pynacl": _version("pynacl"),
            "rfc8785": _version("rfc8785"),
            "tuf": _version("tuf"),
            "securesystemslib": _version("securesystemslib"),
        },
        "seconds": seconds,
        "repeats": REPEATS,
        "goal": GOAL,
        "raw_verify": {
            "message_bytes": len(grant.message),
            "cryptography_per_s": raw["cryptography"],
            "pynacl_per_s": raw["pynacl"],
            "fastest": fastest,
            "rate_per_s": reference,
        },
    }
    for fixture in (grant, manifest):
        kind = fixture.kind
        distinct, repeated = rate(f"validate.{kind}.distinct"), rate(f"validate.{kind}.repeated")
        steps = {step: best[f"steps.{kind}.{step}"] for step in STEPS}
        in_loop = best[f"steps.{kind}.validate"]
        summary[kind] = {
            "bytes": len(fixture.data),
            "signed_bytes": len(fixture.message),
            "per_s": distinct,
            "ratio": distinct / reference,
            "repeated_per_s": repeated,
            "repeated_ratio": repeated / reference,
            "raw_verify_own_size_per_s": max(
                rate(f"raw.{kind}.cryptography"), rate(f"raw.{kind}.pynacl")
            ),
            "new_signature_us": 1e6 / distinct - 1e6 / repeated,
            "non_verify_us": 1e6 / distinct - 1e6 / reference,
            "breakdown_us": {**steps, "other": in_loop - sum(steps.values()), "validate": in_loop},
            "canonicalize_per_s": {
                name: rate(f"canon.{kind}.{name}") for name in ("fast_known", "fast", "rfc8785")
            },
        }
    summary["grant"]["meets_goal"] = summary["grant"]["ratio"] >= GOAL
    summary["tuf_goal"] = TUF_GOAL
    for size, fixture in (("small", grant), ("large", manifest)):
        tuf_bytes = len(tuf[size].pool[0])
        tuf_rate = rate(f"tuf.{size}")
        hearth = summary[fixture.kind]
        summary[fixture.kind]["tuf"] = {
            "targets": TUF_TARGETS[size],
            "bytes": tuf_bytes,
            "per_s": tuf_rate,
            "mb_per_s": tuf_rate * tuf_bytes / 1e6,
            "hearth_mb_per_s": hearth["per_s"] * hearth["bytes"] / 1e6,
            # hearth's bytes per second over python-tuf's, in the same turns
            "ratio_per_byte": (hearth["per_s"] * hearth["bytes"]) / (tuf_rate * tuf_bytes),
        }
    summary["manifest"]["tuf"]["meets_goal"] = (
        summary["manifest"]["tuf"]["ratio_per_byte"] >= TUF_GOAL
    )
    summary["samples_us"] = {
        ".".join(part for part in (m.key, name) if part): [sample[name] for sample in m.samples]
        for m in measurements
        for name in m.samples[0]
    }
    return summary


def _report(summary: dict[str, Any]) -> str:
    machine, raw = summary["machine"], summary["raw_verify"]
    grant, manifest = summary["grant"], summary["manifest"]
    reference = raw["rate_per_s"]
    lines = [
        f"ADDS verify benchmark, {summary['date']}, commit {summary['commit']}: "
        f"{machine['cpus']} CPUs, "
        f"Python {machine['python']}, cryptography {machine['cryptography']}, "
        f"PyNaCl {machine['pynacl']}, rfc8785 {machine['rfc8785']}, "
        f"tuf {machine['tuf']}, securesystemslib {machine['securesystemslib']}",
        f"best of {summary['repeats']} runs; {summary['seconds']:g} s per headline measurement "
        f"(in 20 ms turns with those it is compared with), "
        f"{max(0.25, summary['seconds'] / 4):g} s per breakdown and canonicalizer figure",
        f"load average (1 min) {machine['load_average_1m'][0]:.2f} before, "
        f"{machine['load_average_1m'][1]:.2f} after; this process had the CPU "
        f"{100 * machine['cpu_share']:.0f}% of the time"
        + (
            " (other work competed: figures are pessimistic)" if machine["cpu_share"] < 0.95 else ""
        ),
        "",
        f"Raw Ed25519 verify, key loaded once, {raw['message_bytes']:,}-byte message "
        "(the grant's signed bytes)",
    ]
    for lib, label in (("cryptography", "Ed25519PublicKey.verify"), ("pynacl", "VerifyKey.verify")):
        per_s = raw[f"{lib}_per_s"]
        mark = "  <- reference (fastest)" if lib == raw["fastest"] else ""
        lines.append(f"  {lib:<13} {label:<24} {per_s:>10,.0f} /s {1e6 / per_s:>9.1f} µs{mark}")
    lines += ["", "validate(bytes): strict parse, every rule, signer binding, Ed25519 verify"]
    for name, doc in (("grant", grant), (f"manifest, {CHUNKS:,} chunks", manifest)):
        lines.append(
            f"  {name} ({doc['bytes']:,} B)"
            f"\n    distinct documents      {doc['per_s']:>10,.0f} /s {1e6 / doc['per_s']:>9.1f} µs"
            f"   ratio to raw verify {doc['ratio']:.3f}"
            f"\n    same bytes repeated     {doc['repeated_per_s']:>10,.0f} /s "
            f"{1e6 / doc['repeated_per_s']:>9.1f} µs   ratio to raw verify "
            f"{doc['repeated_ratio']:.3f}  (memos warm: flatters)"
        )
    own = manifest["raw_verify_own_size_per_s"]
    lines.append(
        f"  (raw verify over the manifest's own {manifest['signed_bytes']:,} signed bytes: "
        f"{own:,.0f} /s, {1e6 / own:.1f} µs)"
    )
    verdict = "PASS" if grant["meets_goal"] else "BELOW GOAL"
    lines += [
        "",
        f"Goal: grant rate >= {summary['goal']} x raw verify rate "
        f"({summary['goal'] * reference:,.0f} /s): {grant['per_s']:,.0f} /s, "
        f"ratio {grant['ratio']:.3f}  {verdict}",
        f"  a grant costs {grant['non_verify_us']:.1f} µs beyond one raw verify; the goal allows "
        f"{1e6 / reference * (1 / summary['goal'] - 1):.1f} µs. A new signature costs "
        f"{grant['new_signature_us']:.1f} µs more than a repeated one.",
        f"Manifest: {manifest['per_s']:,.1f} /s, "
        f"ratio {manifest['ratio']:.4f} to the raw verify rate",
        "",
        "Against python-tuf (Metadata.from_bytes + verify_delegate, targets metadata, Ed25519),",
        "distinct documents, in the same turns as hearth's document of about the same size",
    ]
    for label, doc in (("small (grant)", grant), ("large (manifest)", manifest)):
        tuf = doc["tuf"]
        lines.append(
            f"  {label:<17} python-tuf {tuf['targets']:>5,} targets {tuf['bytes']:>8,} B "
            f"{tuf['per_s']:>9,.1f} /s {tuf['mb_per_s']:>6.1f} MB/s; hearth "
            f"{tuf['hearth_mb_per_s']:>6.1f} MB/s; hearth/tuf per byte {tuf['ratio_per_byte']:.2f}"
        )
    tuf_verdict = "PASS" if manifest["tuf"]["meets_goal"] else "BELOW GOAL"
    lines += [
        f"Goal: manifest >= {summary['tuf_goal']} x python-tuf per byte: "
        f"{manifest['tuf']['ratio_per_byte']:.2f}  {tuf_verdict}",
        "",
        "Where the time goes (µs per call)",
        f"  {'step':<44}{'grant':>10}{'manifest':>12}",
    ]
    labels = {
        "parse": "parse (ijson.parse)",
        "structure": "structure (check_structure)",
        "cross": "cross-member rules (.cross)",
        "signed_bytes": "signed_bytes(doc, simple=True)",
        "verify": "ed25519.verify (policy checks + libsodium)",
        "other": "other (binding, base64, result objects)",
        "validate": "= validate(), timed in the same loop",
    }
    for step, label in labels.items():
        g, m = grant["breakdown_us"][step], manifest["breakdown_us"][step]
        lines.append(f"  {label:<44}{g:>10.1f}{m:>12.1f}")
    lines.append(
        "  (the steps are the general path, one by one; validate() itself checks a small\n"
        "  canonical document against its kind's regex instead of the parse and structure\n"
        "  steps, and cuts the signed bytes out of canonical input: 'other' goes negative by\n"
        "  what that saves)"
    )
    lines += [
        "",
        "Canonicalizer, documents per second",
        f"  {'':<44}{'grant':>10}{'manifest':>12}",
    ]
    canon_labels = {
        "fast_known": "canonicalize(doc, simple=True) (as validate)",
        "fast": "canonicalize(doc) (is_simple walk first)",
        "rfc8785": "rfc8785.dumps(doc)",
    }
    for key, label in canon_labels.items():
        g, m = grant["canonicalize_per_s"][key], manifest["canonicalize_per_s"][key]
        lines.append(f"  {label:<44}{g:>10,.0f}{m:>12,.1f}")
    g_speed = grant["canonicalize_per_s"]["fast_known"] / grant["canonicalize_per_s"]["rfc8785"]
    m_speed = (
        manifest["canonicalize_per_s"]["fast_known"] / manifest["canonicalize_per_s"]["rfc8785"]
    )
    lines.append(f"  {'fast path speed-up over rfc8785':<44}{g_speed:>9.0f}x{m_speed:>11.0f}x")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--seconds", type=float, default=2.0, help="length of each headline measurement"
    )
    parser.add_argument("--json", action="store_true", help="print a JSON summary instead")
    args = parser.parse_args(argv)
    seconds: float = args.seconds

    def progress(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    progress("building documents...")
    rng = random.Random(20261120)
    key = ed25519.private_key_from_raw(bytes(range(32)))
    grant_signed = _grant(key, rng)
    grant = _fixture("grant", grant_signed)
    grant_pool = _grant_pool(grant_signed, key, GRANT_POOL)
    manifests = [_manifest(key, rng, f"object-{n}") for n in range(MANIFEST_POOL)]
    manifest = _fixture("manifest", manifests[0])
    for data in (grant.data, manifest.data, grant_pool[0], grant_pool[-1]):
        _valid(data)
    tuf = {
        "small": _tuf_fixture("small", key, rng, TUF_TARGETS["small"], GRANT_POOL // 8),
        "large": _tuf_fixture("large", key, rng, TUF_TARGETS["large"], MANIFEST_POOL),
    }

    measurements = _measurements(
        grant, grant_pool, manifest, [m.canonical for m in manifests], tuf, seconds=seconds
    )
    load_before = os.getloadavg()[0]
    wall, cpu = time.perf_counter(), time.process_time()
    for repeat in range(REPEATS):
        progress(f"run {repeat + 1} of {REPEATS}...")
        for measurement in measurements:
            measurement.samples.append(measurement.run(measurement.seconds))
    cpu_share = (time.process_time() - cpu) / (time.perf_counter() - wall)
    summary = _summary(measurements, grant, manifest, tuf, seconds)
    summary["machine"]["load_average_1m"] = [load_before, os.getloadavg()[0]]
    summary["machine"]["cpu_share"] = cpu_share
    print(json.dumps(summary, indent=2) if args.json else _report(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
