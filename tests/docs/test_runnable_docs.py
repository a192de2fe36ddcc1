"""The README and the quick start run as written: every command and code block, in order,
against a live service (tests/support/doc_runner.py says how a document is run and which few
commands are stood in for). A doc that drifts from the code fails here."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.live import Live, live_service, sqlite_settings

ROOT = Path(__file__).resolve().parents[2]
RUNNER = ROOT / "tests" / "support" / "doc_runner.py"
# Each document, and what its run must print beyond succeeding (what a block prints to show the
# reader, where a silent wrong answer would otherwise pass).
DOCS = {
    "README.md": ["True grant bafkrei"],
    "docs/quickstart.md": ["connected", "self provisioned"],
    "docs/sdk.md": ["memory_stored", "Heard in the loop.", "unreachable after three tries"],
}
DOC_WAIT_S = 900  # a guard against a hung document, never a speed


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    with live_service(sqlite_settings(tmp_path_factory.mktemp("docs_service"))) as live:
        yield live


def reader_folder(tmp_path: Path) -> Path:
    """Where the reader stands: a checkout's root (its .venv and tests, as `make install` left
    them) with a HOME of its own, so nothing of the developer's leaks in."""
    folder = tmp_path / "checkout"
    folder.mkdir()
    for name in (".venv", "tests", "src", "docs"):
        (folder / name).symlink_to(ROOT / name)
    (tmp_path / "home").mkdir()
    return folder


def run_doc(doc: Path, base_url: str, folder: Path) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": str(folder.parent / "home"),
        "LANG": "C.UTF-8",
        "CI": "true",  # the service's and the CLI's non-interactive behaviour, as in a script
    }
    return subprocess.run(
        [sys.executable, str(RUNNER), str(doc), "--base-url", base_url],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=DOC_WAIT_S,
        check=False,
    )


@pytest.mark.parametrize("doc", DOCS)
def test_the_doc_runs_as_written(doc: str, live: Live, tmp_path: Path) -> None:
    done = run_doc(ROOT / doc, live.base_url, reader_folder(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    assert " blocks ran" in done.stdout
    for printed in DOCS[doc]:
        assert printed in done.stdout, (printed, done.stdout)


def test_a_failing_command_fails_the_doc_and_names_it(live: Live, tmp_path: Path) -> None:
    doc = tmp_path / "broken.md"
    doc.write_text(
        textwrap.dedent(
            """\
            ```console
            $ export GREETING=hello
            $ make run &                    # stood in for
            ```

            ```python
            import os
            assert os.environ["GREETING"] == "hello"
            ```

            ```console
            $ curl -fsS http://127.0.0.1:8000/healthz > /dev/null
            $ test "$GREETING" = bye
            ```
            """
        )
    )
    done = run_doc(doc, live.base_url, reader_folder(tmp_path))
    assert done.returncode == 1, done.stdout
    assert "skipped 'make run &'" in done.stdout
    assert "broken.md:7: python block ran" in done.stdout  # the export carried on
    assert f"FAILED: {doc}:12 (console block)" in done.stdout
    assert '+ test "$GREETING" = bye' in done.stdout  # the failing command is named
    assert "+ curl" in done.stdout  # and :8000 was the live service, which answered
