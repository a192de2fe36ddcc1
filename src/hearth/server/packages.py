"""Package discovery data: the wheels the service offers, their index and their manifests.

The service serves the wheels found in one directory (``SERVICE_PACKAGES_DIR``, by default
``var/dist`` under the working directory). :class:`PackageCatalog` scans that directory (never
recursively, never following symlinks), reads each wheel's name and version from its file name
(the wheel file name convention, PEP 427) and hashes the file, so that a client can download it
once and check its size and SHA-256 before installing it. Nothing here imports web code; the
routes turn these dictionaries into responses.

``python -m hearth.server.packages build DEST`` builds this project's wheel into ``DEST`` unless a
wheel of the current version is already there, and prints the wheel's path.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from importlib.metadata import version as installed_version
from pathlib import Path
from typing import BinaryIO
from urllib.parse import quote

from .json_types import JsonObject

__all__ = [
    "DEFAULT_DIRECTORY",
    "PROTOCOL",
    "Artifact",
    "PackageCatalog",
    "build_wheel",
    "main",
    "normalize_name",
    "parse_wheel_filename",
    "project_metadata",
]

PROTOCOL = "love-package/v1"
DEFAULT_DIRECTORY = Path("var/dist")  # relative to the working directory
CHUNK = 1024 * 1024

# {distribution}-{version}(-{build tag})?-{python tag}-{abi tag}-{platform tag}.whl
_DISTRIBUTION = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._]*[A-Za-z0-9])?")
# A normalised PEP 440 version, as tools write it into wheel file names.
_VERSION = re.compile(
    r"(?:(?P<epoch>[0-9]+)!)?"
    r"(?P<release>[0-9]+(?:\.[0-9]+)*)"
    r"(?:(?P<pre_l>a|b|rc)(?P<pre_n>[0-9]+))?"
    r"(?:\.post(?P<post>[0-9]+))?"
    r"(?:\.dev(?P<dev>[0-9]+))?"
    r"(?:\+(?P<local>[a-z0-9]+(?:\.[a-z0-9]+)*))?"
)
_BUILD = re.compile(r"(?P<number>[0-9]+)(?P<rest>[A-Za-z0-9_.]*)")
_TAG = re.compile(r"[A-Za-z0-9_.]+")
_PRE_RANK = {"a": 0, "b": 1, "rc": 2}

_VersionKey = tuple[
    int,
    tuple[int, ...],
    tuple[int, int, int],
    tuple[int, int],
    tuple[int, int],
    tuple[tuple[int, int, str], ...],
]


def normalize_name(name: str) -> str:
    """A distribution name as compared here: lowercase, runs of ``-_.`` as one ``_``."""
    return re.sub(r"[-_.]+", "_", name).lower()


def parse_wheel_filename(filename: str) -> tuple[str, str, str | None] | None:
    """``(normalised name, version, build tag)`` of a wheel file name, or None if it is not one."""
    if not filename.endswith(".whl"):
        return None
    parts = filename[: -len(".whl")].split("-")
    if len(parts) not in (5, 6):
        return None
    distribution, version, tags = parts[0], parts[1], parts[-3:]
    build = parts[2] if len(parts) == 6 else None
    if not _DISTRIBUTION.fullmatch(distribution) or not _VERSION.fullmatch(version):
        return None
    if build is not None and not _BUILD.fullmatch(build):
        return None
    if not all(_TAG.fullmatch(tag) for tag in tags):
        return None
    return normalize_name(distribution), version, build


def _version_key(version: str) -> _VersionKey:
    """PEP 440 ordering of a version that :data:`_VERSION` matched."""
    match = _VERSION.fullmatch(version)
    if match is None:  # pragma: no cover - only validated versions reach here
        raise ValueError(f"not a normalised version: {version!r}")
    release = [int(part) for part in match["release"].split(".")]
    while len(release) > 1 and release[-1] == 0:
        release.pop()
    pre_l, post, dev, local = match["pre_l"], match["post"], match["dev"], match["local"]
    if pre_l is not None:
        pre = (1, _PRE_RANK[pre_l], int(match["pre_n"]))
    elif post is None and dev is not None:
        pre = (0, 0, 0)  # 1.0.dev1 sorts before 1.0a1
    else:
        pre = (2, 0, 0)
    return (
        int(match["epoch"] or 0),
        tuple(release),
        pre,
        (1, int(post)) if post is not None else (0, 0),
        (0, int(dev)) if dev is not None else (1, 0),
        tuple(
            (1, int(part), "") if part.isdigit() else (0, 0, part)
            for part in (local.split(".") if local else ())
        ),
    )


def _build_key(build: str | None) -> tuple[int, int, str]:
    match = _BUILD.fullmatch(build) if build else None
    return (1, int(match["number"]), match["rest"]) if match else (0, 0, "")


@dataclass(frozen=True)
class Artifact:
    """One wheel in the catalog's directory."""

    name: str  # normalised distribution name
    version: str
    filename: str
    size: int
    sha256: str  # lowercase hex
    path: Path  # absolute, inside the catalog's directory


def _sort_key(artifact: Artifact) -> tuple[str, _VersionKey, tuple[int, int, str], str]:
    parsed = parse_wheel_filename(artifact.filename)
    build = parsed[2] if parsed else None
    return artifact.name, _version_key(artifact.version), _build_key(build), artifact.filename


def _digest(stream: BinaryIO) -> tuple[int, str]:
    """``(bytes read, lowercase hex SHA-256)`` of a stream, read 1 MiB at a time."""
    digest = hashlib.sha256()
    size = 0
    while chunk := stream.read(CHUNK):
        digest.update(chunk)
        size += len(chunk)
    return size, digest.hexdigest()


def _same_file(a: os.stat_result, b: os.stat_result) -> bool:
    return (a.st_dev, a.st_ino, a.st_size, a.st_mtime_ns, a.st_ctime_ns) == (
        b.st_dev,
        b.st_ino,
        b.st_size,
        b.st_mtime_ns,
        b.st_ctime_ns,
    )


def _hash_regular_file(path: Path, expected: os.stat_result) -> tuple[int, str] | None:
    """Size and SHA-256 of ``path`` if it is still the regular file ``expected`` describes."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    flags |= getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as stream:
        before = os.fstat(stream.fileno())
        if not stat.S_ISREG(before.st_mode) or not _same_file(before, expected):
            return None
        size, sha256 = _digest(stream)
        after = os.fstat(stream.fileno())
    if size != before.st_size or not _same_file(before, after):
        return None  # changed while being read; try again on the next scan
    return size, sha256


class PackageCatalog:
    """The wheels in one directory, hashed once per version of each file.

    A file is hashed again only when its size, modification time, inode or change time differs
    from the last scan. Safe to share between threads.
    """

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        self._cache: dict[str, tuple[tuple[int, int, int, int, int], Artifact]] = {}
        self._lock = threading.Lock()

    def artifacts(self) -> list[Artifact]:
        """The wheels in the directory, sorted by name, then version (PEP 440), then build."""
        with self._lock:
            return self._scan()

    def _scan(self) -> list[Artifact]:
        try:
            root = self.directory.resolve(strict=True)
            entries = list(os.scandir(root))
        except OSError:
            self._cache.clear()
            return []
        found: dict[str, tuple[tuple[int, int, int, int, int], Artifact]] = {}
        for entry in entries:
            parsed = parse_wheel_filename(entry.name)
            if parsed is None:
                continue
            try:
                if entry.is_symlink() or not entry.is_file(follow_symlinks=False):
                    continue
                path = Path(entry.path)
                if path.resolve(strict=True).parent != root:
                    continue
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            signature = (
                info.st_dev,
                info.st_ino,
                info.st_size,
                info.st_mtime_ns,
                info.st_ctime_ns,
            )
            cached = self._cache.get(entry.name)
            if cached is not None and cached[0] == signature:
                found[entry.name] = cached
                continue
            hashed = _hash_regular_file(path, info)
            if hashed is None:
                continue
            name, version, _build = parsed
            artifact = Artifact(name, version, entry.name, hashed[0], hashed[1], path)
            found[entry.name] = (signature, artifact)
        self._cache = found
        return sorted((artifact for _, artifact in found.values()), key=_sort_key)

    def find(self, name: str, version: str) -> Artifact | None:
        """The wheel of ``name`` (normalised) at exactly ``version``; the highest build wins."""
        wanted = normalize_name(name)
        matches = [a for a in self.artifacts() if a.name == wanted and a.version == version]
        return matches[-1] if matches else None

    def file(self, filename: str) -> Artifact | None:
        """The scanned wheel whose file name is exactly ``filename``; never builds a path."""
        return next((a for a in self.artifacts() if a.filename == filename), None)

    def discovery(self, base_url: str) -> JsonObject:
        """The ``/.well-known/love-packages`` document."""
        base = _base(base_url)
        return {"protocol": PROTOCOL, "index_url": f"{base}/.well-known/love-packages/index.json"}

    def index(self, base_url: str) -> JsonObject:
        """The package index: every name, and every version with its manifest's URL."""
        base = _base(base_url)
        packages: dict[str, list[dict[str, str]]] = {}
        for artifact in self.artifacts():
            versions = packages.setdefault(artifact.name, [])
            if versions and versions[-1]["version"] == artifact.version:
                continue  # another build of the same version
            versions.append(
                {
                    "version": artifact.version,
                    "manifest_url": _manifest_url(base, artifact.name, artifact.version),
                }
            )
        return {
            "protocol": PROTOCOL,
            "document_type": "package-index",
            "packages": [{"name": name, "versions": v} for name, v in packages.items()],
        }

    def manifest(self, base_url: str, artifact: Artifact) -> JsonObject:
        """The manifest of one wheel: what to install and how to check the downloaded file."""
        url = f"{_base(base_url)}/packages/{quote(artifact.filename, safe='')}"
        return {
            "protocol": PROTOCOL,
            "document_type": "package-manifest",
            "name": artifact.name,
            "version": artifact.version,
            "install": {"specifier": f"{artifact.name}=={artifact.version}", "url": url},
            "artifact": {
                "filename": artifact.filename,
                "size": artifact.size,
                "sha256": artifact.sha256,
                "mirrors": [{"url": url}],
            },
        }


def _base(base_url: str) -> str:
    return base_url.rstrip("/")


def _manifest_url(base: str, name: str, version: str) -> str:
    return (
        f"{base}/.well-known/love-packages/"
        f"{quote(name, safe='')}/{quote(version, safe='')}/manifest.json"
    )


def _hatchling() -> list[str]:
    script = Path(sys.executable).parent / ("hatchling.exe" if os.name == "nt" else "hatchling")
    return [str(script)] if script.is_file() else [sys.executable, "-m", "hatchling"]


def build_wheel(project_root: Path, dest: Path) -> Path:
    """Build the wheel of the project at ``project_root`` into ``dest``; return its path.

    hatchling writes into a fresh directory inside ``dest`` and the wheel is then renamed into
    place, so a catalog scanning ``dest`` never sees a half-written wheel. Raises
    :class:`subprocess.CalledProcessError` (with the captured output) if the build fails.
    """
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".build-", dir=dest))
    try:
        subprocess.run(
            [*_hatchling(), "build", "-t", "wheel", "-d", str(staging)],
            cwd=project_root,
            check=True,
            capture_output=True,
            text=True,
        )
        wheels = sorted(staging.glob("*.whl"))
        if len(wheels) != 1:
            raise RuntimeError(f"expected one wheel from hatchling, got {wheels}")
        target = dest / wheels[0].name
        os.replace(wheels[0], target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


def project_metadata(project_root: Path) -> tuple[str, str]:
    """``(normalised name, version)`` from ``pyproject.toml`` (installed version if dynamic)."""
    with (Path(project_root) / "pyproject.toml").open("rb") as stream:
        project = tomllib.load(stream)["project"]
    name = str(project["name"])
    version = project.get("version")
    return normalize_name(name), str(version) if version else installed_version(name)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hearth.server.packages")
    commands = parser.add_subparsers(dest="command", required=True)
    build = commands.add_parser(
        "build", help="build this project's wheel into DEST unless one of this version is there"
    )
    build.add_argument("dest", type=Path, metavar="DEST")
    build.add_argument("--project-root", type=Path, default=Path.cwd())
    build.add_argument("--force", action="store_true", help="build even if the wheel is there")
    args = parser.parse_args(argv)

    name, version = project_metadata(args.project_root)
    existing = None if args.force else PackageCatalog(args.dest).find(name, version)
    if existing is not None:
        print(existing.path)
        return 0
    try:
        wheel = build_wheel(args.project_root, args.dest)
    except subprocess.CalledProcessError as error:
        sys.stderr.write(f"{error.stdout or ''}{error.stderr or ''}")
        print(f"wheel build failed (exit {error.returncode})", file=sys.stderr)
        return 1
    print(wheel)
    return 0


if __name__ == "__main__":
    sys.exit(main())
