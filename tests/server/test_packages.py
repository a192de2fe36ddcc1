"""The package catalog against the real wheel of this project, built once per session."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import zipfile
from importlib.metadata import version as installed_version
from pathlib import Path
from typing import BinaryIO

import pytest

from hearth.server import packages
from hearth.server.packages import PROTOCOL, PackageCatalog, build_wheel, parse_wheel_filename

PROJECT_ROOT = Path(__file__).resolve().parents[2]
BASE = "https://hearth.example"
VERSION = installed_version("hearth")


@pytest.fixture(scope="session")
def built_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_wheel(PROJECT_ROOT, tmp_path_factory.mktemp("dist"))


@pytest.fixture
def dist(tmp_path: Path, built_wheel: Path) -> Path:
    """A directory of its own holding a copy of the real wheel, free to change."""
    directory = tmp_path / "dist"
    directory.mkdir()
    shutil.copy2(built_wheel, directory / built_wheel.name)
    return directory


def sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def fake_wheel(directory: Path, filename: str, content: bytes = b"not really a zip") -> Path:
    path = directory / filename
    path.write_bytes(content)
    return path


def test_build_wheel_writes_only_the_wheel(built_wheel: Path) -> None:
    assert built_wheel.is_file()
    assert built_wheel.name.startswith(f"hearth-{VERSION}-")
    assert built_wheel.name.endswith(".whl")
    assert [p.name for p in built_wheel.parent.iterdir()] == [built_wheel.name]  # no staging left


def test_the_real_wheel_is_a_valid_zip_of_this_project(built_wheel: Path) -> None:
    with zipfile.ZipFile(built_wheel) as archive:
        assert archive.testzip() is None
        names = archive.namelist()
        assert "hearth/__init__.py" in names
        assert "hearth/server/packages.py" in names
        metadata = archive.read(f"hearth-{VERSION}.dist-info/METADATA").decode()
    assert "Name: hearth\n" in metadata
    assert f"Version: {VERSION}\n" in metadata


def test_catalog_finds_the_real_wheel_with_its_size_and_sha256(built_wheel: Path) -> None:
    catalog = PackageCatalog(built_wheel.parent)
    [artifact] = catalog.artifacts()
    assert artifact.name == "hearth"
    assert artifact.version == VERSION
    assert artifact.filename == built_wheel.name
    assert artifact.size == built_wheel.stat().st_size
    assert artifact.sha256 == sha256_of(built_wheel)
    assert artifact.sha256 == artifact.sha256.lower()
    assert len(artifact.sha256) == 64
    assert artifact.path == built_wheel.resolve()
    assert catalog.find("hearth", VERSION) is artifact
    assert catalog.find("HEARTH", VERSION) is artifact
    assert catalog.find("hearth", "999.0") is None
    assert catalog.find("other", VERSION) is None
    assert catalog.file(built_wheel.name) is artifact


def test_discovery_document() -> None:
    catalog = PackageCatalog(Path("does-not-exist"))
    expected = {
        "protocol": "love-package/v1",
        "index_url": f"{BASE}/.well-known/love-packages/index.json",
    }
    assert catalog.discovery(BASE) == expected
    assert catalog.discovery(BASE + "/") == expected
    assert PROTOCOL == "love-package/v1"


def test_index_document(built_wheel: Path) -> None:
    catalog = PackageCatalog(built_wheel.parent)
    assert catalog.index(BASE + "/") == {
        "protocol": "love-package/v1",
        "document_type": "package-index",
        "packages": [
            {
                "name": "hearth",
                "versions": [
                    {
                        "version": VERSION,
                        "manifest_url": (
                            f"{BASE}/.well-known/love-packages/hearth/{VERSION}/manifest.json"
                        ),
                    }
                ],
            }
        ],
    }


def test_manifest_document(built_wheel: Path) -> None:
    catalog = PackageCatalog(built_wheel.parent)
    artifact = catalog.find("hearth", VERSION)
    assert artifact is not None
    url = f"{BASE}/packages/{built_wheel.name}"
    manifest = catalog.manifest(BASE + "/", artifact)
    assert manifest == {
        "protocol": "love-package/v1",
        "document_type": "package-manifest",
        "name": "hearth",
        "version": VERSION,
        "install": {"specifier": f"hearth=={VERSION}", "url": url},
        "artifact": {
            "filename": built_wheel.name,
            "size": built_wheel.stat().st_size,
            "sha256": sha256_of(built_wheel),
            "mirrors": [{"url": url}],
        },
    }
    assert catalog.manifest(BASE, artifact) == manifest


def test_empty_or_missing_directory(tmp_path: Path) -> None:
    assert PackageCatalog(tmp_path / "missing").artifacts() == []
    assert PackageCatalog(tmp_path).artifacts() == []
    assert PackageCatalog(tmp_path).index(BASE)["packages"] == []
    assert PackageCatalog(tmp_path).find("hearth", VERSION) is None


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Records each file the catalog hashes."""
    calls: list[str] = []
    real = packages._digest

    def digest(stream: BinaryIO) -> tuple[int, str]:
        calls.append(str(getattr(stream, "name", "?")))
        return real(stream)

    monkeypatch.setattr(packages, "_digest", digest)
    return calls


def test_untouched_files_are_not_hashed_again(dist: Path, counted: list[str]) -> None:
    catalog = PackageCatalog(dist)
    [first] = catalog.artifacts()
    assert len(counted) == 1
    [second] = catalog.artifacts()
    assert second is first
    assert catalog.find("hearth", VERSION) is first
    assert catalog.file(first.filename) is first
    catalog.index(BASE)
    assert len(counted) == 1


def test_a_rewritten_file_is_hashed_again(dist: Path, counted: list[str]) -> None:
    catalog = PackageCatalog(dist)
    [wheel] = dist.iterdir()
    [first] = catalog.artifacts()
    wheel.write_bytes(b"replaced content")
    [second] = catalog.artifacts()
    assert len(counted) == 2
    assert second.sha256 == hashlib.sha256(b"replaced content").hexdigest()
    assert second.size == len(b"replaced content")
    assert second.sha256 != first.sha256


def test_same_size_replacement_with_restored_mtime_is_hashed_again(
    dist: Path, counted: list[str]
) -> None:
    catalog = PackageCatalog(dist)
    [wheel] = dist.iterdir()
    [first] = catalog.artifacts()
    before = wheel.stat()
    data = bytearray(wheel.read_bytes())
    data[-1] ^= 0xFF
    staged = dist.parent / "staged"
    staged.write_bytes(bytes(data))
    os.utime(staged, ns=(before.st_atime_ns, before.st_mtime_ns))
    os.replace(staged, wheel)  # how build_wheel puts a wheel in place: a new inode
    assert wheel.stat().st_size == before.st_size
    assert wheel.stat().st_mtime_ns == before.st_mtime_ns
    [second] = catalog.artifacts()
    assert len(counted) == 2
    assert second.size == first.size
    assert second.sha256 == hashlib.sha256(bytes(data)).hexdigest()


def test_removed_files_leave_the_catalog(dist: Path) -> None:
    catalog = PackageCatalog(dist)
    [artifact] = catalog.artifacts()
    artifact.path.unlink()
    assert catalog.artifacts() == []
    assert catalog.file(artifact.filename) is None


def test_junk_and_bad_names_are_ignored(dist: Path) -> None:
    for name in [
        "README.txt",
        "notawheel.whl",
        "foo-1.0.whl",
        "foo-1.0-py3-none.whl",
        "foo-1.0-1-2-py3-none-any.whl",
        "-1.0-py3-none-any.whl",
        ".hidden-1.0-py3-none-any.whl",
        "foo-notaversion-py3-none-any.whl",
        "foo-1.0-x1-py3-none-any.whl",  # build tags start with a digit
        "foo-1.0-py3-none-any.WHL",
        "foo-1.0-py3-none-any.whl.part",
        "foo-1.0-py3-none-an y.whl",
        "foo bar-1.0-py3-none-any.whl",
    ]:
        fake_wheel(dist, name)
    (dist / "dir-1.0-py3-none-any.whl").mkdir()
    nested = dist / "nested"
    nested.mkdir()
    fake_wheel(nested, "nested-1.0-py3-none-any.whl")
    names = [a.filename for a in PackageCatalog(dist).artifacts()]
    assert names == [f"hearth-{VERSION}-py3-none-any.whl"]


def test_symlinks_are_ignored(dist: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    secret = fake_wheel(outside, "secret-1.0-py3-none-any.whl", b"secret")
    (dist / "secret-1.0-py3-none-any.whl").symlink_to(secret)
    (dist / "passwd-1.0-py3-none-any.whl").symlink_to("/etc/passwd")
    (dist / "dangling-1.0-py3-none-any.whl").symlink_to(tmp_path / "nothing")
    [wheel] = [p for p in dist.iterdir() if p.name.startswith("hearth-")]
    (dist / "alias-1.0-py3-none-any.whl").symlink_to(wheel.name)  # even inside the directory
    catalog = PackageCatalog(dist)
    assert [a.name for a in catalog.artifacts()] == ["hearth"]
    assert catalog.find("secret", "1.0") is None
    assert catalog.file("secret-1.0-py3-none-any.whl") is None
    assert catalog.file("alias-1.0-py3-none-any.whl") is None


def test_a_symlinked_directory_is_scanned_in_place(dist: Path, tmp_path: Path) -> None:
    link = tmp_path / "link"
    link.symlink_to(dist, target_is_directory=True)
    [artifact] = PackageCatalog(link).artifacts()
    assert artifact.path == (dist / artifact.filename).resolve()


def test_file_only_matches_exact_scanned_names(dist: Path) -> None:
    catalog = PackageCatalog(dist)
    [artifact] = catalog.artifacts()
    assert catalog.file(artifact.filename) is artifact
    for attempt in [
        "../etc/passwd",
        "/etc/passwd",
        f"./{artifact.filename}",
        f"../dist/{artifact.filename}",
        str(artifact.path),
        artifact.filename.upper(),
        "",
        ".",
        "..",
    ]:
        assert catalog.file(attempt) is None, attempt


def test_sorting_by_name_then_pep440_version_then_build(tmp_path: Path) -> None:
    versions = ["1.10", "1.9", "1.0rc1", "1.0", "1.0.dev1", "1.0a1", "1.0.post1", "1!0.1", "1.0+a"]
    for v in versions:
        fake_wheel(tmp_path, f"zeta-{v}-py3-none-any.whl")
    fake_wheel(tmp_path, "zeta-1.0-2-py3-none-any.whl", b"build 2")
    fake_wheel(tmp_path, "zeta-1.0-10-py3-none-any.whl", b"build 10")
    fake_wheel(tmp_path, "Alpha.Pkg-2.0-py3-none-any.whl")
    catalog = PackageCatalog(tmp_path)
    order = [(a.name, a.version) for a in catalog.artifacts()]
    assert order == [
        ("alpha_pkg", "2.0"),
        ("zeta", "1.0.dev1"),
        ("zeta", "1.0a1"),
        ("zeta", "1.0rc1"),
        ("zeta", "1.0"),
        ("zeta", "1.0"),
        ("zeta", "1.0"),
        ("zeta", "1.0+a"),
        ("zeta", "1.0.post1"),
        ("zeta", "1.9"),
        ("zeta", "1.10"),
        ("zeta", "1!0.1"),
    ]
    newest_build = catalog.find("zeta", "1.0")
    assert newest_build is not None
    assert newest_build.filename == "zeta-1.0-10-py3-none-any.whl"
    assert catalog.find("Alpha-Pkg", "2.0") is not None
    index = catalog.index(BASE)
    assert [p["name"] for p in index["packages"]] == ["alpha_pkg", "zeta"]
    zeta = [v["version"] for v in index["packages"][1]["versions"]]
    assert zeta == [
        "1.0.dev1",
        "1.0a1",
        "1.0rc1",
        "1.0",
        "1.0+a",
        "1.0.post1",
        "1.9",
        "1.10",
        "1!0.1",
    ]
    assert index["packages"][1]["versions"][-1]["manifest_url"] == (
        f"{BASE}/.well-known/love-packages/zeta/1%210.1/manifest.json"
    )


def test_parse_wheel_filename() -> None:
    assert parse_wheel_filename("hearth-0.1.0-py3-none-any.whl") == ("hearth", "0.1.0", None)
    assert parse_wheel_filename("Foo_Bar-1.0-3abc-cp311-cp311-manylinux_2_17_x86_64.whl") == (
        "foo_bar",
        "1.0",
        "3abc",
    )
    assert parse_wheel_filename("foo-1.0-py2.py3-none-any.whl") == ("foo", "1.0", None)
    assert parse_wheel_filename("foo-1.0-py3-none-any.tar.gz") is None


def test_cli_keeps_a_wheel_of_the_current_version(
    dist: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def no_build(project_root: Path, dest: Path) -> Path:
        raise AssertionError("must not rebuild")

    monkeypatch.setattr(packages, "build_wheel", no_build)
    assert packages.main(["build", str(dist), "--project-root", str(PROJECT_ROOT)]) == 0
    [wheel] = dist.iterdir()
    assert capsys.readouterr().out.strip() == str(wheel.resolve())


def test_cli_builds_when_no_wheel_of_the_current_version(
    tmp_path: Path,
    built_wheel: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    built: list[Path] = []

    def fake_build(project_root: Path, dest: Path) -> Path:
        built.append(dest)
        target = dest / built_wheel.name
        dest.mkdir(parents=True, exist_ok=True)
        shutil.copy2(built_wheel, target)
        return target

    dest = tmp_path / "var" / "dist"
    dest.mkdir(parents=True)
    fake_wheel(dest, "hearth-0.0.0.dev0-py3-none-any.whl")  # an older version does not count
    monkeypatch.setattr(packages, "build_wheel", fake_build)
    assert packages.main(["build", str(dest), "--project-root", str(PROJECT_ROOT)]) == 0
    assert built == [dest]
    assert capsys.readouterr().out.strip() == str(dest / built_wheel.name)
    assert packages.main(["build", str(dest), "--project-root", str(PROJECT_ROOT)]) == 0
    assert built == [dest]  # second run finds it
    assert packages.main(["build", str(dest), "--force", "--project-root", str(PROJECT_ROOT)]) == 0
    assert built == [dest, dest]


def test_cli_as_a_module(dist: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "hearth.server.packages", "build", str(dist)],
        cwd=PROJECT_ROOT,
        check=True,
        capture_output=True,
        text=True,
    )
    [wheel] = dist.iterdir()
    assert result.stdout.strip() == str(wheel.resolve())


def test_project_metadata_matches_the_installed_version() -> None:
    assert packages.project_metadata(PROJECT_ROOT) == ("hearth", VERSION)
