"""``hearth export`` and ``hearth export verify`` (issue 20) against the real service over real
HTTP: a life with a record of every kind is written to a CAR on this machine, verified offline
(with and without the owner's keys), read by ``@ipld/car``, and refused once damaged."""

from __future__ import annotations

import asyncio
import json
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from hearth.client import AsyncHearthClient
from hearth.client.backup import open_backup
from hearth.client.export import verify_export
from tests.support.cli_homes import PASSPHRASE, home_with_identity, ok, run
from tests.support.ipld_car import read_with_ipld_car
from tests.support.live import Live, live_on


@dataclass
class Exported:
    live: Live
    home: Path
    tmp: Path
    car: Path
    written: dict[str, Any]
    made: dict[str, str]


def j(args: list[str], home: Path) -> Any:
    return json.loads(ok(run(args, home)).stdout)


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Exported]:
    tmp = tmp_path_factory.mktemp("export_cli")
    with live_on("sqlite", tmp / "service") as live:
        home, _profile = home_with_identity(live, tmp, "Leaver")
        made: dict[str, str] = {}
        first = j(["memory", "add", "I keep a garden.", "--json"], home)
        made["memory"] = first["id"]
        second = ["memory", "add", "I keep two gardens.", "--supersedes", first["id"], "--json"]
        made["memory_v2"] = j(second, home)["id"]
        j(["memory", "add", "Heard at the gate.", "--untrusted", "--json"], home)
        made["strand"] = j(["strands", "create", "musings", "--json"], home)["id"]
        ok(run(["strands", "write", made["strand"], "a sealed thought"], home))
        ok(run(["strands", "write", made["strand"], "another one"], home))
        made["runtime"] = j(["runtime", "create", "--name", "walker", "--json"], home)["id"]
        j(["inbox", "send", "hello from outside", "--json"], home)
        ok(run(["backup", "push"], home))
        car = tmp / "life.car"
        written = j(["export", "-o", str(car), "--json"], home)
        yield Exported(live, home, tmp, car, written, made)


def test_export_writes_every_data_set(exported: Exported) -> None:
    written = exported.written
    assert written["file"] == str(exported.car)
    assert exported.car.stat().st_size == written["bytes"]
    records = written["records"]
    # The welcome letter of registration, two versions of one memory, and the untrusted one.
    assert records["memories"] == 4
    assert records["strands"] == 3  # the strand and its two thoughts
    assert records["runtimes"] >= 2  # the runtime and its events
    assert records["inbox"] == 1
    assert records["key_backup"] == 1
    assert records["identity"] >= 2
    assert records["expression"] == 1
    assert not exported.car.with_name("life.car.partial").exists()


def test_verify_offline_with_and_without_the_owners_keys(exported: Exported) -> None:
    # No service is asked: the file and (with --open) the home's key file are all it reads.
    checked = j(["export", "verify", str(exported.car), "--json"], exported.home)
    assert checked["ok"] is True
    assert checked["root"] == exported.written["root"]
    assert checked["checked"]["objects"] == 11
    assert checked["checked"]["opened"] is None
    opened = j(["export", "verify", str(exported.car), "--open", "--json"], exported.home)
    assert opened["ok"] is True
    assert opened["checked"]["opened"] == 12  # every data set and the index
    memories = next(o for o in opened["objects"] if o["name"] == "memories")
    assert memories["records"] == 4
    plain = ok(run(["export", "verify", str(exported.car)], exported.home)).stdout
    assert "valid" in plain


def test_a_damaged_export_is_refused_with_exit_1(exported: Exported) -> None:
    data = bytearray(exported.car.read_bytes())
    data[len(data) // 2] ^= 0x01
    damaged = exported.tmp / "damaged.car"
    damaged.write_bytes(bytes(data))
    result = run(["export", "verify", str(damaged), "--json"], exported.home)
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    assert report["ok"] is False
    assert "car.hash" in {problem["code"] for problem in report["problems"]}
    not_car = exported.tmp / "not.car"
    not_car.write_bytes(b"not a car at all")
    assert run(["export", "verify", str(not_car)], exported.home).exit_code == 1


def test_an_independent_car_reader_finds_every_block_under_its_cid(exported: Exported) -> None:
    read = read_with_ipld_car(exported.car)
    assert read["roots"] == [exported.written["root"]]
    assert len(read["blocks"]) == exported.written["blocks"]
    assert all(block["holds"] for block in read["blocks"])


def test_export_needs_an_output_file(exported: Exported) -> None:
    result = run(["export"], exported.home)
    assert result.exit_code == 2


def test_a_reader_added_to_an_export_opens_it_with_its_own_key(exported: Exported) -> None:
    reader = j(["adds", "keygen", "--out", str(exported.tmp / "reader"), "--json"], exported.home)
    copy = exported.tmp / "for-reader.car"
    added = [
        "export",
        "add-reader",
        str(exported.car),
        "--audience",
        "https://new.example",
        "--audience-key",
        reader["x25519_public_key"],
        "-o",
        str(copy),
        "--json",
    ]
    written = j(added, exported.home)
    assert written["root"] != exported.written["root"]
    key = str(exported.tmp / "reader.x25519.pem")
    checked = j(["export", "verify", str(copy), "--key", key, "--json"], exported.home)
    assert checked["ok"] is True
    assert checked["checked"]["opened"] == 12
    # The original export holds no grant for that key: it does not open with it.
    refused = run(["export", "verify", str(exported.car), "--key", key, "--json"], exported.home)
    assert refused.exit_code == 1
    assert "life.no_grant" in {p["code"] for p in json.loads(refused.stdout)["problems"]}
    # And a reader is added only to an export that verifies.
    broken = exported.tmp / "broken.car"
    broken.write_bytes(b"not a car")
    elsewhere = str(exported.tmp / "x.car")
    again = run([*added[:2], str(broken), *added[3:-3], "-o", elsewhere], exported.home)
    assert again.exit_code == 1
    assert not (exported.tmp / "x.car").exists()


def test_an_export_is_signed_only_with_the_identitys_own_root_key(
    exported: Exported, tmp_path: Path
) -> None:
    # A child of the same project has a root key of its own: this home's keys, pointed at the
    # child, are not its root key, so nothing is signed or written.
    child = j(
        ["fork", "--name", "Kid", "--save-key", str(tmp_path / "kid.pem"), "--json"], exported.home
    )
    home = tmp_path / "home"
    shutil.copytree(exported.home, home)
    for name in ("profile.json", "keys.backup.json"):
        record = json.loads((home / name).read_text())
        record.update({"identity_id" if name == "profile.json" else "agent_id": child["agent_id"]})
        record["did"] = child["did"]
        (home / name).write_text(json.dumps(record))
    target = tmp_path / "wrong.car"
    result = run(["export", "-o", str(target)], home)
    assert result.exit_code == 1, result.output
    assert "not the root key" in result.stderr
    assert not target.exists()
    assert not target.with_name("wrong.car.partial").exists()


def test_the_async_client_exports_the_same_life(exported: Exported, tmp_path: Path) -> None:
    sealed = json.loads((exported.home / "keys.backup.json").read_text())
    keys = open_backup(sealed["blob_base64"], sealed["key_derivation"], PASSPHRASE)
    profile = json.loads((exported.home / "profile.json").read_text())
    target = tmp_path / "async.car"

    async def export() -> Any:
        async with AsyncHearthClient.from_home(exported.home) as client:
            with target.open("wb") as out:
                return await client.export_life(
                    out, keys=keys, identity_id=profile["identity_id"], did=profile["did"]
                )

    written = asyncio.run(export())
    with target.open("rb") as car:
        report = verify_export(car, box_key=keys.box)
    assert report.ok, report.problems
    assert report.root == written.root
    assert written.records["memories"] == exported.written["records"]["memories"]
