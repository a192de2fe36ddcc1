"""``hearth keys generate`` and ``hearth adds validate|sign|cid|schema``, end to end."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hearth.adds import b64url_encode, validate
from hearth.adds.keys import load_ed25519_private_key, load_x25519_private_key
from hearth.cli.main import app
from tests.vectors.generate import HERE as VECTORS

runner = CliRunner()
INDEX = json.loads((VECTORS / "index.json").read_text())
PUBLISHER_KEY = VECTORS / "keys" / "publisher.ed25519.pem"
PROVIDER_KEY = VECTORS / "keys" / "provider.ed25519.pem"


def run(*args: str, stdin: bytes | None = None) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args), input=stdin)
    return result.exit_code, result.stdout, result.stderr


def test_keys_generate_writes_private_pem_files(tmp_path: Path) -> None:
    code, out, err = run("keys", "generate", "--out", str(tmp_path / "alice"))
    assert code == 0, err
    signing_path = tmp_path / "alice.ed25519.pem"
    box_path = tmp_path / "alice.x25519.pem"
    for path in (signing_path, box_path):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    signing = load_ed25519_private_key(signing_path.read_bytes())
    box = load_x25519_private_key(box_path.read_bytes())
    printed = dict(line.split(": ") for line in out.strip().splitlines())
    assert printed == {
        "ed25519_public_key": b64url_encode(signing.public_key().public_bytes_raw()),
        "x25519_public_key": b64url_encode(box.public_key().public_bytes_raw()),
    }


def test_keys_generate_makes_the_prefix_folder_private(tmp_path: Path) -> None:
    # `--out keys/alice` on a fresh checkout, as the README shows it.
    code, _, err = run("keys", "generate", "--out", str(tmp_path / "keys" / "alice"))
    assert code == 0, err
    assert stat.S_IMODE((tmp_path / "keys").stat().st_mode) == 0o700
    assert (tmp_path / "keys" / "alice.ed25519.pem").is_file()


def test_keys_generate_never_overwrites_without_force(tmp_path: Path) -> None:
    assert run("keys", "generate", "--out", str(tmp_path / "k"))[0] == 0
    before = (tmp_path / "k.ed25519.pem").read_bytes()
    code, _, err = run("keys", "generate", "--out", str(tmp_path / "k"))
    assert code == 1
    assert "exists" in err
    assert (tmp_path / "k.ed25519.pem").read_bytes() == before
    assert run("keys", "generate", "--out", str(tmp_path / "k"), "--force")[0] == 0
    assert (tmp_path / "k.ed25519.pem").read_bytes() != before


def test_validate_every_vector() -> None:
    files = sorted(str(VECTORS / f"{name}.json") for name in INDEX["documents"])
    code, out, _ = run("adds", "validate", *files)
    assert code == 0
    for name, entry in INDEX["documents"].items():
        assert f"{name}.json: valid {entry['kind']} {entry['cid']}" in out


def test_validate_reports_invalid_files_and_exits_1(tmp_path: Path) -> None:
    document = json.loads((VECTORS / "grant-full.json").read_bytes())
    document["rights"] = ["derive"]
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps(document))
    code, out, _ = run("adds", "validate", str(VECTORS / "grant-full.json"), str(broken))
    assert code == 1
    assert "broken.json: invalid grant" in out
    assert "/rights: spec.rights.read" in out
    assert "/signature/value: profile.signature.invalid" in out


def test_validate_json_lines(tmp_path: Path) -> None:
    not_json = tmp_path / "x.json"
    not_json.write_bytes(b"\xef\xbb\xbf{}")
    good = str(VECTORS / "head-full.json")
    code, out, _ = run("adds", "validate", "--json", good, str(not_json), str(tmp_path / "no"))
    assert code == 1
    lines = [json.loads(line) for line in out.splitlines()]
    assert [line["file"] for line in lines] == [good, str(not_json), str(tmp_path / "no")]
    assert lines[0] == {
        "file": good,
        "valid": True,
        "kind": "head",
        "cid": INDEX["documents"]["head-full"]["cid"],
        "errors": [],
        "warnings": [],
    }
    assert lines[1]["valid"] is False
    assert lines[1]["errors"] == [
        {"pointer": "", "code": "spec.ijson.bom", "message": "a byte order mark is not allowed"}
    ]
    assert lines[2]["errors"][0]["code"] == "file.unreadable"


def test_validate_with_now_warns_but_stays_valid() -> None:
    expired_at = str(INDEX["now"] + 86_400)
    code, out, _ = run(
        "adds", "validate", "--json", "--now", expired_at, str(VECTORS / "grant-minimal.json")
    )
    assert code == 0
    report = json.loads(out)
    assert report["valid"] is True
    assert [w["code"] for w in report["warnings"]] == ["profile.time.expired"]


def test_validate_reads_standard_input() -> None:
    code, out, _ = run("adds", "validate", "-", stdin=(VECTORS / "receipt-full.json").read_bytes())
    assert code == 0
    assert "-: valid receipt" in out


@pytest.mark.parametrize("args", [["adds", "validate"], ["adds", "validate", "--bogus", "x"]])
def test_usage_errors_exit_2(args: list[str]) -> None:
    assert run(*args)[0] == 2


def _unsigned(name: str) -> dict[str, object]:
    document = json.loads((VECTORS / f"{name}.json").read_bytes())
    del document["signature"]
    return document


@pytest.mark.parametrize(
    ("name", "key"),
    [
        ("grant-full", PUBLISHER_KEY),
        ("manifest-full", PUBLISHER_KEY),
        ("receipt-full", PROVIDER_KEY),
    ],
)
def test_sign_reproduces_the_golden_vector(tmp_path: Path, name: str, key: Path) -> None:
    unsigned = tmp_path / "unsigned.json"
    unsigned.write_text(json.dumps(_unsigned(name), indent=2))
    code, out, err = run("adds", "sign", "--key", str(key), str(unsigned))
    assert code == 0, err
    assert out.rstrip("\n").encode() == (VECTORS / f"{name}.json").read_bytes()


def test_sign_writes_a_file(tmp_path: Path) -> None:
    unsigned = tmp_path / "unsigned.json"
    unsigned.write_text(json.dumps(_unsigned("head-full")))
    code, _, err = run(
        "adds", "sign", "-k", str(PUBLISHER_KEY), str(unsigned), "-o", str(tmp_path / "s")
    )
    assert code == 0, err
    assert validate((tmp_path / "s").read_bytes()).valid


def test_sign_refusals(tmp_path: Path) -> None:
    unsigned = tmp_path / "unsigned.json"
    unsigned.write_text(json.dumps(_unsigned("grant-minimal")))
    code, out, err = run("adds", "sign", "--key", str(PROVIDER_KEY), str(unsigned))
    assert (code, out) == (1, "")
    assert "profile.signature.signer_mismatch" in err

    signed = str(VECTORS / "grant-minimal.json")
    code, _, err = run("adds", "sign", "--key", str(PUBLISHER_KEY), signed)
    assert code == 1
    assert "already signed" in err
    assert run("adds", "sign", "--key", str(PUBLISHER_KEY), "--resign", signed)[0] == 0

    invalid = _unsigned("grant-minimal")
    invalid["rights"] = []
    unsigned.write_text(json.dumps(invalid))
    code, out, err = run("adds", "sign", "--key", str(PUBLISHER_KEY), str(unsigned))
    assert (code, out) == (1, "")
    assert "spec.rights.read" in err

    code, _, err = run("adds", "sign", "--key", str(VECTORS / "keys" / "reader.x25519.pem"), signed)
    assert code == 1
    assert "Ed25519" in err


def test_cid(tmp_path: Path) -> None:
    code, out, _ = run("adds", "cid", str(VECTORS / "head-full.json"))
    assert (code, out.strip()) == (0, INDEX["documents"]["head-full"]["cid"])
    spaced = tmp_path / "spaced.json"  # the CID names the canonical form, not the file's bytes
    spaced.write_text(json.dumps(json.loads((VECTORS / "head-full.json").read_bytes()), indent=4))
    assert run("adds", "cid", str(spaced))[1].strip() == INDEX["documents"]["head-full"]["cid"]
    (tmp_path / "bad.json").write_text('{"a": 1, "a": 2}')
    code, _, err = run("adds", "cid", str(tmp_path / "bad.json"))
    assert code == 1
    assert "duplicate" in err


def test_schema_prints_a_json_schema() -> None:
    code, out, _ = run("adds", "schema", "grant")
    assert code == 0
    schema = json.loads(out)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert run("adds", "schema", "nope")[0] == 2


def test_installed_console_script() -> None:
    """The real entry point, as a user runs it: exit codes 0, 1 and 2."""
    hearth = Path(sys.executable).with_name("hearth")
    env = {**os.environ, "COLUMNS": "200"}

    def status(*args: str) -> int:
        return subprocess.run([hearth, *args], capture_output=True, env=env, check=False).returncode

    assert status("adds", "validate", str(VECTORS / "head-full.json")) == 0
    assert status("adds", "validate", str(VECTORS / "keys" / "reader.x25519.pem")) == 1
    assert status("adds", "validate") == 2
