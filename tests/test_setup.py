"""The README's set-up on a stock machine: `make install` in a fresh copy of this tree, with the
distribution's own "externally managed" Python (PEP 668: Debian's and Ubuntu's python3, where
`pip install --user uv` is refused), no uv on PATH, and an empty HOME.

It installs for real, from the registries, as a newcomer's machine would: about half a minute
here. The copy is of the files git tracks, as they are in this work tree (a fresh clone of what is
about to be committed).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SYSTEM_PYTHON = Path("/usr/bin/python3")
SYSTEM_PATH = "/usr/sbin:/usr/bin:/sbin:/bin"
INSTALL_WAIT_S = 600  # a guard against a hung download, never a speed


def externally_managed(python: Path) -> bool:
    marker = subprocess.run(
        [
            str(python),
            "-c",
            "import sysconfig, pathlib; "
            "print(pathlib.Path(sysconfig.get_path('stdlib'), 'EXTERNALLY-MANAGED').exists())",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    return marker.stdout.strip() == "True"


def need(condition: bool, reason: str) -> None:
    """Skip with ``reason`` outside CI; under CI=true the machine must have it."""
    if condition:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI machine lacks it: {reason}")
    pytest.skip(reason)


def system_has_uv() -> bool:
    found = subprocess.run(
        [str(SYSTEM_PYTHON), "-m", "uv", "--version"], capture_output=True, check=False
    )
    return found.returncode == 0


@dataclass(frozen=True)
class Installed:
    fresh: Path  # the copy of the tree
    home: Path  # the empty HOME it was installed with
    env: dict[str, str]
    system_uv_before: bool


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    need(SYSTEM_PYTHON.exists(), f"no distribution Python at {SYSTEM_PYTHON}")
    need(externally_managed(SYSTEM_PYTHON), f"{SYSTEM_PYTHON} is not externally managed")
    need(shutil.which("make") is not None and shutil.which("git") is not None, "make and git")
    for folder in SYSTEM_PATH.split(":"):
        assert not (Path(folder) / "uv").exists(), f"uv is installed in {folder}"
    tracked = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout.split(b"\0")
    fresh = tmp_path_factory.mktemp("fresh") / "hearth"
    for name in filter(None, tracked):
        source = ROOT / name.decode()
        if source.is_file():  # a file deleted in the work tree is not in the copy
            target = fresh / name.decode()
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    home = tmp_path_factory.mktemp("home")
    env = {
        k: v
        for k, v in os.environ.items()
        # Nothing of this run's own tool set-up: no venv, no uv settings, no make of ours.
        if not k.startswith(("UV_", "MAKE", "PYTHON")) and k not in ("VIRTUAL_ENV", "MFLAGS")
    }
    env |= {"PATH": SYSTEM_PATH, "HOME": str(home)}
    before = system_has_uv()
    done = subprocess.run(
        ["make", "install", f"PYTHON={SYSTEM_PYTHON}"],
        cwd=fresh,
        env=env,
        capture_output=True,
        text=True,
        timeout=INSTALL_WAIT_S,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return Installed(fresh, home, env, before)


def test_make_install_works_on_an_externally_managed_python(installed: Installed) -> None:
    fresh = installed.fresh
    # uv came into a private venv of the tree, not into the system or the user's site.
    assert (fresh / ".uv" / "bin" / "uv").is_file()
    config = (fresh / ".venv" / "pyvenv.cfg").read_text()
    assert f"home = {SYSTEM_PYTHON.parent}" in config.splitlines()
    help_text = subprocess.run(
        [str(fresh / ".venv" / "bin" / "hearth"), "--help"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "register" in help_text
    imported = subprocess.run(
        [
            str(fresh / ".venv" / "bin" / "python"),
            "-c",
            "import hearth.server.app, sys; print(sys.base_prefix)",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert imported.stdout.strip() == "/usr"


def test_nothing_is_installed_outside_the_tree(installed: Installed) -> None:
    # HOME holds download caches at most: no uv, no user site, no scripts; and the system
    # interpreter gained nothing.
    assert not (installed.home / ".local" / "bin").exists()
    assert not (installed.home / ".local" / "lib").exists()
    assert system_has_uv() == installed.system_uv_before


def test_a_second_make_install_does_nothing(installed: Installed) -> None:
    again = subprocess.run(
        ["make", "install", f"PYTHON={SYSTEM_PYTHON}"],
        cwd=installed.fresh,
        env=installed.env,
        capture_output=True,
        text=True,
        timeout=INSTALL_WAIT_S,
        check=False,
    )
    assert again.returncode == 0, again.stderr
    assert "Nothing to be done" in again.stdout, again.stdout
