"""``hearth adds keygen|publish|grant|open|head|provider-record|receipt|blocks``, end to end.

Local tests run the commands in process (typer's CliRunner) against real block stores on disk;
the service tests run them against the real service over real HTTP (tests/support/live.py).
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from hearth.adds import b64url_encode, validate
from hearth.adds.keys import load_ed25519_private_key, load_x25519_private_key
from hearth.blockstore import DirectoryBlockStore, FileBlockStore
from hearth.cli.client_config import Profile, save_api_key, save_profile
from hearth.cli.main import app
from tests.support.agents import register
from tests.support.live import Live, live_service, sqlite_settings

NOW = 1_795_000_000
DAY = 86_400
CID = re.compile(r"bafkrei[a-z2-7]{52}")


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No bearer from the environment or from a real hearth home."""
    monkeypatch.delenv("HEARTH_BEARER", raising=False)
    monkeypatch.setenv("HEARTH_HOME", str(tmp_path / "no-home"))


def hearth(
    *args: str | Path, stdin: bytes | None = None, env: dict[str, str] | None = None
) -> Result:
    return CliRunner().invoke(app, [str(a) for a in args], input=stdin, env=env)


def ok(result: Result) -> Result:
    assert result.exit_code == 0, (result.exit_code, result.stderr, result.exception)
    return result


def printed(result: Result, name: str) -> str:
    """The CID a command printed on stderr as ``name: <cid>``."""
    found = re.search(rf"^{name}: ({CID.pattern})", result.stderr, re.MULTILINE)
    assert found, result.stderr
    return found[1]


@dataclass(frozen=True)
class Principal:
    id: str
    signing: Path
    box: Path
    box_public: str
    signing_public: str


def keygen(directory: Path, name: str) -> Principal:
    result = ok(hearth("adds", "keygen", "--out", directory / name))
    publics = dict(line.split(": ") for line in result.stdout.strip().splitlines())
    return Principal(
        f"did:example:{name}",
        directory / f"{name}.ed25519.pem",
        directory / f"{name}.x25519.pem",
        publics["x25519_public_key"],
        publics["ed25519_public_key"],
    )


@pytest.fixture(scope="module")
def people(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Principal]:
    """Three principals' keys, made once (with keygen) for the whole module."""
    keys = tmp_path_factory.mktemp("keys")
    return {name: keygen(keys, name) for name in ("alice", "bob", "carol")}


def publish(
    source: Path | str,
    publisher: Principal,
    blocks: Path | str,
    out: Path,
    *extra: str | Path,
    stdin: bytes | None = None,
    env: dict[str, str] | None = None,
) -> str:
    result = ok(
        hearth(
            "adds",
            "publish",
            source,
            "--key",
            publisher.signing,
            "--publisher-id",
            publisher.id,
            "--blocks",
            blocks,
            "-o",
            out,
            *extra,
            stdin=stdin,
            env=env,
        )
    )
    return printed(result, "manifest_cid")


def grant(
    manifest: Path, issuer: Principal, reader: Principal, out: Path, *extra: str | Path
) -> Result:
    return hearth(
        "adds",
        "grant",
        manifest,
        "--key",
        issuer.signing,
        "--issuer-id",
        issuer.id,
        "--audience",
        reader.id,
        "--audience-key",
        reader.box_public,
        "--now",
        str(NOW),
        "-o",
        out,
        *extra,
    )


def open_object(
    manifest: Path | str,
    grant_file: Path | str,
    reader: Principal,
    blocks: Path | str,
    *extra: str | Path,
) -> Result:
    return hearth(
        "adds",
        "open",
        manifest,
        "--grant",
        grant_file,
        "--key",
        reader.box,
        "--blocks",
        blocks,
        "--now",
        str(NOW + 60),
        *extra,
    )


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def leftovers(directory: Path, name: str) -> list[Path]:
    return sorted(directory.glob(f"{name}*"))


# --- keygen ---------------------------------------------------------------------------------


def test_keygen_writes_private_keys_and_prints_the_public_halves(tmp_path: Path) -> None:
    result = ok(hearth("adds", "keygen", "--out", tmp_path / "k"))
    signing = load_ed25519_private_key((tmp_path / "k.ed25519.pem").read_bytes())
    box = load_x25519_private_key((tmp_path / "k.x25519.pem").read_bytes())
    assert mode(tmp_path / "k.ed25519.pem") == mode(tmp_path / "k.x25519.pem") == 0o600
    assert result.stdout.splitlines() == [
        f"ed25519_public_key: {b64url_encode(signing.public_key().public_bytes_raw())}",
        f"x25519_public_key: {b64url_encode(box.public_key().public_bytes_raw())}",
    ]
    before = (tmp_path / "k.x25519.pem").read_bytes()
    again = hearth("adds", "keygen", "--out", tmp_path / "k")
    assert again.exit_code == 1
    assert "exists" in again.stderr
    assert (tmp_path / "k.x25519.pem").read_bytes() == before


# --- publish, grant, open -------------------------------------------------------------------


@pytest.mark.parametrize("layout", ["store", "plain"])
@pytest.mark.parametrize(
    "shape",  # (plaintext size, --chunk-size, chunks)
    [
        (0, "1MiB", 1),
        (1, "1MiB", 1),
        (5 * 1024 + 3, "1KiB", 6),
        (4096, "1KiB", 4),
        # Chunks a multiple of the direct-I/O alignment: each written directly at its offset.
        (3 * 4096 + 5, "4KiB", 4),
    ],
    ids=["empty", "one-byte", "several", "boundary", "aligned"],
)
def test_publish_grant_open_gives_back_the_same_bytes(
    tmp_path: Path, people: dict[str, Principal], layout: str, shape: tuple[int, str, int]
) -> None:
    size, chunk_size, chunks = shape
    alice, bob = people["alice"], people["bob"]
    data = os.urandom(size)
    (tmp_path / "data").write_bytes(data)
    blocks = tmp_path / "blocks"
    if layout == "plain":
        blocks.mkdir()  # an existing directory without the marker is the plain form
    manifest = tmp_path / "manifest.json"
    key_file = tmp_path / "content.key"
    cid = publish(
        tmp_path / "data",
        alice,
        blocks,
        manifest,
        "--chunk-size",
        chunk_size,
        "--content-key-out",
        key_file,
        "--media-type",
        "application/octet-stream",
    )
    result = validate(manifest.read_bytes())
    assert result.valid
    assert result.cid == cid
    assert len(result.document["chunks"]) == chunks
    assert result.document["plaintext"]["size"] == size
    assert mode(key_file) == 0o600
    store_type = FileBlockStore if layout == "store" else DirectoryBlockStore
    stored = sorted(store_type(blocks, create=False).cids())
    assert stored == sorted({c["cid"] for c in result.document["chunks"]})

    granted = ok(grant(manifest, alice, bob, tmp_path / "grant.json", "--content-key", key_file))
    assert printed(granted, "grant_cid") == validate((tmp_path / "grant.json").read_bytes()).cid
    out = tmp_path / "out"
    opened = ok(open_object(manifest, tmp_path / "grant.json", bob, blocks, "-o", out))
    assert out.read_bytes() == data
    assert mode(out) == 0o600
    assert f"opened {size} bytes" in opened.stderr
    assert leftovers(tmp_path, "out") == [out]


def test_publish_from_stdin_and_open_to_stdout(
    tmp_path: Path, people: dict[str, Principal]
) -> None:
    alice, bob = people["alice"], people["bob"]
    data = os.urandom(3000)
    manifest = tmp_path / "m.json"
    publish(
        "-",
        alice,
        tmp_path / "blocks",
        manifest,
        "--chunk-size",
        "1000",
        "--grant-to",
        bob.box_public,
        "--audience",
        bob.id,
        "--object-id",
        "notes",
        stdin=data,
    )
    assert validate(manifest.read_bytes()).document["object_id"] == "notes"
    (grant_file,) = tmp_path.glob("*.grant.json")  # next to the manifest by default
    result = hearth(
        "adds",
        "open",
        manifest,
        "--grant",
        grant_file,
        "-k",
        bob.box,
        "--blocks",
        tmp_path / "blocks",
    )
    ok(result)
    assert result.stdout_bytes == data


def test_publish_refuses_to_lose_the_content_key(
    tmp_path: Path, people: dict[str, Principal]
) -> None:
    (tmp_path / "data").write_bytes(b"secret")
    result = hearth(
        "adds",
        "publish",
        tmp_path / "data",
        "--key",
        people["alice"].signing,
        "--publisher-id",
        "did:example:alice",
        "--blocks",
        tmp_path / "blocks",
    )
    assert result.exit_code == 2
    assert "content key would be lost" in result.stderr
    assert not (tmp_path / "blocks").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--chunk-size", "1MB", "--content-key-out", "k"], "--chunk-size"),
        (["--chunk-size", "17MiB", "--content-key-out", "k"], "16MiB"),
        (["--grant-to", "AAAA"], "--audience"),
        (["--grant-to", "AAAA", "--audience", "did:x", "--grant-dir", "."], "32-byte"),
        (
            ["--grant-to", b64url_encode(bytes(32)), "--audience", "x", "--grant-dir", "."],
            "cannot receive a key",
        ),
        (["--content-key-out", "k", "--blocks", "http://127.0.0.1:9/"], "bearer"),
    ],
)
def test_publish_usage_errors_exit_2_before_any_work(
    tmp_path: Path, people: dict[str, Principal], args: list[str], message: str
) -> None:
    (tmp_path / "data").write_bytes(b"x")
    blocks = ["--blocks", str(tmp_path / "blocks")] if "--blocks" not in args else []
    result = hearth(
        "adds",
        "publish",
        tmp_path / "data",
        "-k",
        people["alice"].signing,
        "--publisher-id",
        "a",
        *blocks,
        *args,
    )
    assert result.exit_code == 2, result.stderr
    assert message in result.stderr
    assert not (tmp_path / "blocks").exists()
    assert not (tmp_path / "k").exists()


def test_publish_never_replaces_a_file(tmp_path: Path, people: dict[str, Principal]) -> None:
    (tmp_path / "data").write_bytes(b"x")
    (tmp_path / "key").write_text("an earlier key")
    result = hearth(
        "adds",
        "publish",
        tmp_path / "data",
        "-k",
        people["alice"].signing,
        "--publisher-id",
        "a",
        "--blocks",
        tmp_path / "blocks",
        "--content-key-out",
        tmp_path / "key",
    )
    assert result.exit_code == 1
    assert "exists" in result.stderr
    assert (tmp_path / "key").read_text() == "an earlier key"


@dataclass
class Published:
    data: bytes
    manifest: Path
    grant: Path
    blocks: Path
    chunks: list[str]


@pytest.fixture
def plain(tmp_path: Path, people: dict[str, Principal]) -> Published:
    """Three chunks in a plain directory, granted to bob for a day from NOW."""
    data = os.urandom(2500)
    (tmp_path / "data").write_bytes(data)
    blocks = tmp_path / "plain"
    blocks.mkdir()
    manifest = tmp_path / "manifest.json"
    publish(
        tmp_path / "data",
        people["alice"],
        blocks,
        manifest,
        "--chunk-size",
        "1KiB",
        "--content-key-out",
        tmp_path / "content.key",
    )
    ok(
        grant(
            manifest,
            people["alice"],
            people["bob"],
            tmp_path / "grant.json",
            "--content-key",
            tmp_path / "content.key",
            "--expires-in",
            "1d",
            "--rights",
            "read,delegate",
        )
    )
    chunks = [c["cid"] for c in validate(manifest.read_bytes()).document["chunks"]]
    return Published(data, manifest, tmp_path / "grant.json", blocks, chunks)


def _wrong_key(case: Published, people: dict[str, Principal]) -> list[str]:
    return ["--key", str(people["carol"].box)]


def _expired(case: Published, people: dict[str, Principal]) -> list[str]:
    return ["--now", str(NOW + DAY)]


def _not_yet(case: Published, people: dict[str, Principal]) -> list[str]:
    return ["--now", str(NOW - 1)]


def _tampered(case: Published, people: dict[str, Principal]) -> list[str]:
    block = case.blocks / case.chunks[1]
    damaged = bytearray(block.read_bytes())
    damaged[10] ^= 1
    block.write_bytes(bytes(damaged))
    return []


def _missing(case: Published, people: dict[str, Principal]) -> list[str]:
    (case.blocks / case.chunks[2]).unlink()
    return []


@pytest.mark.parametrize(
    ("breakage", "code"),
    [
        (_wrong_key, "open.wrong_key"),
        (_expired, "open.expired"),
        (_not_yet, "open.not_yet_valid"),
        (_tampered, "store.block_corrupt"),
        (_missing, "open.block_missing"),
    ],
)
@pytest.mark.parametrize("workers", ["1", "3"])
def test_every_refusal_exits_1_and_leaves_no_output(
    tmp_path: Path,
    people: dict[str, Principal],
    plain: Published,
    *,
    breakage: object,
    code: str,
    workers: str,
) -> None:
    extra = breakage(plain, people)  # type: ignore[operator]
    out = tmp_path / "out.bin"
    args = ["-o", str(out), "--workers", workers, *extra]
    # later options win: --key and --now given again replace the defaults
    result = open_object(plain.manifest, plain.grant, people["bob"], plain.blocks, *args)
    assert result.exit_code == 1, result.stderr
    assert f"error: {code}: " in result.stderr
    assert leftovers(tmp_path, "out.bin") == []


@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_refusal_on_stdout_says_the_output_is_incomplete(
    people: dict[str, Principal], plain: Published, workers: str
) -> None:
    _missing(plain, people)
    result = open_object(
        plain.manifest, plain.grant, people["bob"], plain.blocks, "--workers", workers
    )
    assert result.exit_code == 1
    assert result.stdout_bytes == plain.data[:2048]  # the two chunks that verified
    assert "open.block_missing" in result.stderr
    assert "incomplete" in result.stderr


def test_open_never_replaces_a_file_without_force(
    tmp_path: Path, people: dict[str, Principal], plain: Published
) -> None:
    out = tmp_path / "out"
    out.write_bytes(b"mine")
    result = open_object(plain.manifest, plain.grant, people["bob"], plain.blocks, "-o", out)
    assert result.exit_code == 1
    assert out.read_bytes() == b"mine"
    ok(open_object(plain.manifest, plain.grant, people["bob"], plain.blocks, "-o", out, "--force"))
    assert out.read_bytes() == plain.data


def test_delegation_regrant_then_open_with_the_parent(
    tmp_path: Path, people: dict[str, Principal], plain: Published
) -> None:
    bob, carol = people["bob"], people["carol"]
    child = tmp_path / "child.json"
    result = hearth(
        "adds",
        "grant",
        plain.manifest,
        "--key",
        bob.signing,
        "--audience",
        carol.id,
        "--audience-key-file",
        carol.box,
        "--from-grant",
        plain.grant,
        "--box-key",
        bob.box,
        "--now",
        str(NOW + 10),
        "-o",
        child,
    )
    ok(result)
    document = validate(child.read_bytes()).document
    assert document["parent_grant"] == validate(plain.grant.read_bytes()).cid
    assert document["issuer"]["id"] == bob.id  # the parent's audience, by default
    assert document["expires_at"] == NOW + DAY  # capped at the parent's expiry
    assert document["rights"] == ["read"]

    without = open_object(plain.manifest, child, carol, plain.blocks, "-o", tmp_path / "o")
    assert without.exit_code == 1
    assert "open.parent_missing" in without.stderr
    out = tmp_path / "carol.bin"
    ok(
        open_object(
            plain.manifest, child, carol, plain.blocks, "--parent-grant", plain.grant, "-o", out
        )
    )
    assert out.read_bytes() == plain.data

    # carol's grant lacks 'delegate': she cannot pass it on
    refused = hearth(
        "adds",
        "grant",
        plain.manifest,
        "--key",
        carol.signing,
        "--audience",
        "did:example:dan",
        "--audience-key",
        bob.box_public,
        "--from-grant",
        child,
        "--box-key",
        carol.box,
        "--parent-grant",
        plain.grant,
        "--now",
        str(NOW + 20),
        "-o",
        tmp_path / "g2.json",
    )
    assert refused.exit_code == 1
    assert "does not list 'delegate'" in refused.stderr
    assert not (tmp_path / "g2.json").exists()


def test_regrant_refusals(tmp_path: Path, people: dict[str, Principal], plain: Published) -> None:
    bob, carol = people["bob"], people["carol"]
    common: list[str | Path] = [
        "adds",
        "grant",
        plain.manifest,
        "--key",
        bob.signing,
        "--audience",
        carol.id,
        "--audience-key",
        carol.box_public,
        "--from-grant",
        plain.grant,
        "--now",
        str(NOW + 10),
        "-o",
        tmp_path / "g.json",
    ]
    cases: list[tuple[list[str | Path], str]] = [
        (["--box-key", bob.box, "--rights", "read,derive"], "derive"),
        (["--box-key", bob.box, "--issuer-id", "did:example:mallory"], "audience"),
        (["--box-key", bob.box, "--expires-at", str(NOW + 2 * DAY)], "no later"),
        (["--box-key", carol.box], "open.wrong_key"),
    ]
    for extra, message in cases:
        result = hearth(*common, *extra)
        assert result.exit_code == 1, (extra, result.stderr)
        assert message in result.stderr
        assert not (tmp_path / "g.json").exists()
    usage = hearth(*common)  # --from-grant without --box-key
    assert usage.exit_code == 2
    both = hearth(*common, "--box-key", bob.box, "--content-key", tmp_path / "content.key")
    assert both.exit_code == 2


def test_grant_refuses_a_content_key_of_another_object(
    tmp_path: Path, people: dict[str, Principal], plain: Published
) -> None:
    (tmp_path / "other").write_bytes(b"other")
    other = tmp_path / "other.json"
    publish(
        tmp_path / "other",
        people["alice"],
        plain.blocks,
        other,
        "--content-key-out",
        tmp_path / "other.key",
    )
    result = grant(
        plain.manifest,
        people["alice"],
        people["bob"],
        tmp_path / "g.json",
        "--content-key",
        tmp_path / "other.key",
    )
    assert result.exit_code == 1
    assert "holds the key of manifest" in result.stderr


# --- blocks copy ----------------------------------------------------------------------------


def test_blocks_copy_between_layouts_then_open(
    tmp_path: Path, people: dict[str, Principal]
) -> None:
    alice, bob = people["alice"], people["bob"]
    data = os.urandom(4000)
    (tmp_path / "data").write_bytes(data)
    store = tmp_path / "store"
    manifest = tmp_path / "m.json"
    publish(
        tmp_path / "data",
        alice,
        store,
        manifest,
        "--chunk-size",
        "1KiB",
        "--grant-to",
        bob.box_public,
        "--audience",
        bob.id,
        "--expires-in",
        "1h",
    )
    (grant_file,) = tmp_path.glob("*.grant.json")

    exported = tmp_path / "export"
    copied = ok(hearth("adds", "blocks", "copy", store, exported, "--plain"))
    assert "copied 4 blocks, 0 already present" in copied.stderr
    assert sorted(p.name for p in exported.iterdir()) == sorted(FileBlockStore(store).cids())
    assert not (exported / "ADDS-BLOCKSTORE").exists()
    out = tmp_path / "out"
    result = hearth(
        "adds",
        "open",
        manifest,
        "--grant",
        grant_file,
        "-k",
        bob.box,
        "--blocks",
        exported,
        "-o",
        out,
    )
    ok(result)
    assert out.read_bytes() == data

    back = tmp_path / "back"
    ok(hearth("adds", "blocks", "copy", exported, back))
    assert (back / "ADDS-BLOCKSTORE").is_file()
    first = sorted(FileBlockStore(back).cids())[0]
    again = ok(hearth("adds", "blocks", "copy", exported, back, first))
    assert "copied 0 blocks, 1 already present" in again.stderr
    missing = hearth("adds", "blocks", "copy", tmp_path / "nowhere", back)
    assert missing.exit_code == 1
    assert hearth("adds", "blocks", "copy", exported, back, "not-a-cid").exit_code == 2


# --- heads ----------------------------------------------------------------------------------


def test_head_new_and_resolve_with_a_fork_and_its_merge(
    tmp_path: Path, people: dict[str, Principal]
) -> None:
    alice = people["alice"]
    manifests = [validate(p.read_bytes()).cid for p in _manifests(tmp_path, alice, 4)]

    def new(name: str, manifest: str, *previous: Path) -> Path:
        args: list[str | Path] = []
        for path in previous:
            args += ["--previous", path]
        result = ok(
            hearth(
                "adds",
                "head",
                "new",
                "--key",
                alice.signing,
                "--issuer-id",
                alice.id,
                "--head-id",
                "notes",
                "--manifest",
                manifest,
                "--now",
                str(NOW),
                "-o",
                tmp_path / name,
                *args,
            )
        )
        assert printed(result, "head_cid") == validate((tmp_path / name).read_bytes()).cid
        return tmp_path / name

    h0 = new("h0.json", manifests[0])
    h1a = new("h1a.json", manifests[1], h0)
    h1b = new("h1b.json", manifests[2], h0)
    assert validate(h1a.read_bytes()).document["sequence"] == 1

    forked = hearth("adds", "head", "resolve", h0, h1a, h1b)
    assert forked.exit_code == 3, forked.stderr
    report = json.loads(forked.stdout)
    (history,) = report["resolutions"]
    assert history["forked"] is True
    assert history["current"] is None
    assert len(history["candidates"]) == 2
    assert "forked: notes" in forked.stderr

    h2 = new("h2.json", manifests[3], h0, h1a, h1b)
    assert len(validate(h2.read_bytes()).document["parents"]) == 2
    merged = ok(
        hearth(
            "adds",
            "head",
            "resolve",
            h0,
            h1a,
            h1b,
            h2,
            "--head-id",
            "notes",
            "--issuer-key",
            alice.signing_public,
        )
    )
    (history,) = json.loads(merged.stdout)["resolutions"]
    assert history["current"]["manifest_cid"] == manifests[3]
    assert history["history_forks"] == [1]

    junk = tmp_path / "junk.json"
    junk.write_text("{}")
    with_junk = hearth("adds", "head", "resolve", h0, junk)
    assert with_junk.exit_code == 0
    assert len(json.loads(with_junk.stdout)["rejected"]) == 1
    assert "not a valid head" in with_junk.stderr
    assert hearth("adds", "head", "resolve", junk).exit_code == 1
    refused = hearth(
        "adds",
        "head",
        "new",
        "--key",
        alice.signing,
        "--issuer-id",
        alice.id,
        "--head-id",
        "notes",
        "--manifest",
        manifests[0],
        "--previous",
        junk,
    )
    assert refused.exit_code == 1
    assert (
        hearth(
            "adds",
            "head",
            "new",
            "--key",
            alice.signing,
            "--issuer-id",
            alice.id,
            "--head-id",
            "notes",
            "--manifest",
            "nope",
        ).exit_code
        == 2
    )
    assert hearth("adds", "head", "resolve").exit_code == 2


def _manifests(tmp_path: Path, publisher: Principal, count: int) -> list[Path]:
    paths = []
    for index in range(count):
        (tmp_path / f"d{index}").write_bytes(bytes([index]))
        path = tmp_path / f"m{index}.json"
        publish(
            tmp_path / f"d{index}",
            publisher,
            tmp_path / "blocks",
            path,
            "--content-key-out",
            tmp_path / f"k{index}",
        )
        paths.append(path)
    return paths


# --- a provider's documents -----------------------------------------------------------------


def test_provider_record_and_receipt_for_a_local_store(
    tmp_path: Path, people: dict[str, Principal], plain: Published
) -> None:
    provider = people["carol"]
    record = tmp_path / "record.json"
    result = ok(
        hearth(
            "adds",
            "provider-record",
            "--key",
            provider.signing,
            "--provider-id",
            "p.example",
            "--record-id",
            "main",
            "--sequence",
            "3",
            "--blocks",
            plain.blocks,
            "--endpoint",
            "https://p.example/v1/adds/blocks/{cid},10",
            "--endpoint",
            "ipfs://{cid}",
            "--expires-in",
            "7d",
            "--now",
            str(NOW),
            "-o",
            record,
        )
    )
    document = validate(record.read_bytes()).document
    assert printed(result, "provider_record_cid") == validate(record.read_bytes()).cid
    assert sorted(i["cid"] for i in document["inventory"]) == sorted(plain.chunks)
    assert {i["role"] for i in document["inventory"]} == {"block"}
    assert document["expires_at"] == NOW + 7 * DAY
    assert document["endpoints"][0] == {
        "transport": "https",
        "uri_template": "https://p.example/v1/adds/blocks/{cid}",
        "priority": 10,
    }

    receipt = tmp_path / "receipt.json"
    ok(
        hearth(
            "adds",
            "receipt",
            "--key",
            provider.signing,
            "--provider-id",
            "p.example",
            "--items",
            ",".join(plain.chunks[:2]),
            "--item",
            plain.chunks[2],
            "--blocks",
            plain.blocks,
            "--commitment",
            "store_and_serve",
            "--retention-days",
            "30",
            "--provider-record",
            validate(record.read_bytes()).cid,
            "--now",
            str(NOW),
            "-o",
            receipt,
        )
    )
    checked = ok(hearth("adds", "validate", record, receipt))
    assert "valid provider_record" in checked.stdout
    assert "valid receipt" in checked.stdout
    items = validate(receipt.read_bytes()).document["items"]
    assert [i["cid"] for i in items] == plain.chunks
    assert [i["size"] for i in items] == [1040, 1040, 468]

    (plain.blocks / plain.chunks[0]).unlink()
    not_held = hearth(
        "adds",
        "receipt",
        "--key",
        provider.signing,
        "--provider-id",
        "p.example",
        "--items",
        plain.chunks[0],
        "--blocks",
        plain.blocks,
        "--commitment",
        "store",
        "--retention-days",
        "30",
    )
    assert not_held.exit_code == 1
    assert "does not hold" in not_held.stderr
    usage = hearth("adds", "receipt", "--items", plain.chunks[1], "--commitment", "store")
    assert usage.exit_code == 2
    assert "--key" in usage.stderr

    def record_with(endpoint: str) -> Result:
        return hearth(
            "adds",
            "provider-record",
            "--key",
            provider.signing,
            "--provider-id",
            "p",
            "--record-id",
            "r",
            "--sequence",
            "0",
            "--blocks",
            plain.blocks,
            "--endpoint",
            endpoint,
        )

    bad = record_with("no-scheme/{cid}")
    assert bad.exit_code == 2
    no_cid = record_with("https://p.example/all")
    assert no_cid.exit_code == 1
    assert "spec.endpoint.missing_cid" in no_cid.stderr


# --- against the real service ---------------------------------------------------------------


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    with live_service(sqlite_settings(tmp_path_factory.mktemp("adds_cli"))) as service:
        yield service


def test_publish_to_the_service_and_open_from_another_project(
    tmp_path: Path, people: dict[str, Principal], live: Live
) -> None:
    alice, bob = people["alice"], people["bob"]
    bearer_a = register(live)[1]["project"]["api_key"]
    bearer_b = register(live)[1]["project"]["api_key"]
    assert bearer_a != bearer_b
    bearer_file = tmp_path / "bearer-a"
    bearer_file.write_text(bearer_a + "\n")
    data = os.urandom(200_000)
    (tmp_path / "data").write_bytes(data)
    grants = tmp_path / "grants"
    grants.mkdir()
    manifest = tmp_path / "m.json"
    manifest_cid = publish(
        tmp_path / "data",
        alice,
        live.base_url,
        manifest,
        "--bearer-file",
        bearer_file,
        "--chunk-size",
        "64KiB",
        "--grant-to",
        bob.box_public,
        "--audience",
        bob.id,
        "--grant-dir",
        grants,
    )
    (grant_file,) = grants.iterdir()
    grant_cid = grant_file.name.split(".")[0]
    chunks = [c["cid"] for c in validate(manifest.read_bytes()).document["chunks"]]
    assert len(chunks) == 4

    # project B: documents fetched by CID from the node, blocks too, with B's bearer
    out = tmp_path / "bob.bin"
    as_b = {"HEARTH_BEARER": bearer_b}
    result = hearth(
        "adds",
        "open",
        manifest_cid,
        "--grant",
        grant_cid,
        "-k",
        bob.box,
        "--blocks",
        live.base_url,
        "-o",
        out,
        env=as_b,
    )
    ok(result)
    assert out.read_bytes() == data
    wrong = hearth(
        "adds",
        "open",
        manifest_cid,
        "--grant",
        grant_cid,
        "-k",
        alice.box,
        "--blocks",
        live.base_url,
        "-o",
        tmp_path / "x",
        env=as_b,
    )
    assert wrong.exit_code == 1
    assert "open.wrong_key" in wrong.stderr
    assert not (tmp_path / "x").exists()

    record = tmp_path / "record.json"
    ok(hearth("adds", "provider-record", "--from", live.base_url, "-o", record))
    receipt = tmp_path / "receipt.json"
    ok(
        hearth(
            "adds",
            "receipt",
            "--request",
            live.base_url,
            "--items",
            ",".join(chunks),
            "--item",
            manifest_cid,
            "--commitment",
            "store",
            "-o",
            receipt,
            "--bearer-file",
            bearer_file,
        )
    )
    checked = ok(hearth("adds", "validate", record, receipt))
    assert "valid provider_record" in checked.stdout
    assert "valid receipt" in checked.stdout
    held = validate(record.read_bytes()).document["inventory"]
    assert set(chunks) <= {item["cid"] for item in held}
    items = {i["cid"]: i["role"] for i in validate(receipt.read_bytes()).document["items"]}
    assert items == {**dict.fromkeys(chunks, "block"), manifest_cid: "manifest"}
    not_held = hearth(
        "adds",
        "receipt",
        "--request",
        live.base_url,
        "--items",
        chunks[0],
        "--commitment",
        "store",
        env=as_b,
    )
    assert not_held.exit_code == 1
    assert "not_held" in not_held.stderr
    assert bearer_b not in not_held.stderr
    assert bearer_a not in result.stderr + wrong.stderr + not_held.stderr


def test_heads_through_the_service(
    tmp_path: Path, people: dict[str, Principal], live: Live
) -> None:
    alice = people["alice"]
    env = {"HEARTH_BEARER": register(live)[1]["project"]["api_key"]}
    (tmp_path / "d").write_bytes(b"notes")
    manifest_cid = publish(
        tmp_path / "d",
        alice,
        live.base_url,
        tmp_path / "m.json",
        "--content-key-out",
        tmp_path / "k",
        env=env,
    )
    for sequence in (0, 1):
        result = ok(
            hearth(
                "adds",
                "head",
                "new",
                "--key",
                alice.signing,
                "--issuer-id",
                alice.id,
                "--head-id",
                "notes/main",
                "--manifest",
                manifest_cid,
                "--from",
                live.base_url,
                "--node",
                live.base_url,
                "-o",
                tmp_path / f"h{sequence}.json",
                env=env,
            )
        )
        assert f"(sequence {sequence})" in result.stderr
    resolved = ok(
        hearth(
            "adds",
            "head",
            "resolve",
            "--from",
            live.base_url,
            "--head-id",
            "notes/main",
            "--issuer-key",
            alice.signing_public,
            env=env,
        )
    )
    (history,) = json.loads(resolved.stdout)["resolutions"]
    assert history["current"]["cid"] == validate((tmp_path / "h1.json").read_bytes()).cid
    unknown = hearth(
        "adds",
        "head",
        "resolve",
        "--from",
        live.base_url,
        "--head-id",
        "other",
        "--issuer-key",
        alice.signing_public,
        env=env,
    )
    assert unknown.exit_code == 1


def test_grant_submit_copy_down_and_the_homes_bearer(
    tmp_path: Path, people: dict[str, Principal], live: Live
) -> None:
    """A grant submitted by CLI opens by CID from the node; blocks copied down open offline;
    a hearth home's bearer is used for its own service and never sent to another origin."""
    alice, carol = people["alice"], people["carol"]
    _, registration = register(live)
    home = tmp_path / "home"
    profile = Profile(
        base_url=live.base_url,
        project_id=registration["project"]["id"],
        identity_id="x",
        did="did:svc:x",
    )
    save_profile(home, profile)
    save_api_key(home, registration["project"]["api_key"])
    as_home = {"HEARTH_HOME": str(home)}
    data = os.urandom(70_000)
    (tmp_path / "data").write_bytes(data)
    manifest = tmp_path / "m.json"
    manifest_cid = publish(
        tmp_path / "data",
        alice,
        live.base_url,
        manifest,
        "--chunk-size",
        "32KiB",
        "--content-key-out",
        tmp_path / "k",
        env=as_home,
    )
    granted = hearth(
        "adds",
        "grant",
        manifest,
        "--key",
        alice.signing,
        "--issuer-id",
        alice.id,
        "--audience",
        carol.id,
        "--audience-key",
        carol.box_public,
        "--content-key",
        tmp_path / "k",
        "--node",
        live.base_url,
        "-o",
        tmp_path / "g.json",
        env=as_home,
    )
    grant_cid = printed(ok(granted), "grant_cid")
    out = tmp_path / "out"
    ok(
        hearth(
            "adds",
            "open",
            manifest_cid,
            "--grant",
            grant_cid,
            "-k",
            carol.box,
            "--blocks",
            live.base_url,
            "-o",
            out,
            env=as_home,
        )
    )
    assert out.read_bytes() == data

    local = tmp_path / "local"
    copied = ok(hearth("adds", "blocks", "copy", live.base_url, local, "--plain", env=as_home))
    assert "copied 3 blocks" in copied.stderr
    offline = tmp_path / "offline"
    ok(
        hearth(
            "adds",
            "open",
            manifest,
            "--grant",
            tmp_path / "g.json",
            "-k",
            carol.box,
            "--blocks",
            local,
            "-o",
            offline,
        )
    )
    assert offline.read_bytes() == data

    save_profile(home, Profile("http://127.0.0.1:9", profile.project_id, "x", "did:svc:x"))
    elsewhere = hearth(
        "adds",
        "open",
        manifest_cid,
        "--grant",
        grant_cid,
        "-k",
        carol.box,
        "--blocks",
        live.base_url,
        env=as_home,
    )
    assert elsewhere.exit_code == 2
    assert "needs a bearer" in elsewhere.stderr
