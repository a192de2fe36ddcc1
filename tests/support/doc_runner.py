"""Runs a Markdown document's examples in order, as a reader would type them.

``python doc_runner.py DOC.md --base-url URL`` (run with the venv's Python, in the folder the
reader would be in):

- a ``console`` block's commands are the lines that start with ``$ `` (a line ending in ``\\``
  goes on on the next one); the other lines are what the reader sees, and are not run. The
  commands of one block run in one ``bash -euo pipefail``, and what they export carries on to
  the blocks after it (and to the Python blocks' ``os.environ``);
- a ``python`` block runs in one namespace shared by the document's Python blocks, in this
  process, so later blocks use what earlier ones made;
- other blocks (``json``, ``text``, diagrams) are shown, not run.

The docs say ``http://127.0.0.1:8000``, where `make run` serves; here that address is the test's
live service. ``SKIPPED`` names the few commands that are not run, each with the reason: what
stands in for it. It prints one line per block and, on a failure, the block's line, the command
and its output, and exits 1. Standard library only: it runs in any venv.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import traceback
from dataclasses import dataclass
from pathlib import Path

DOCS_BASE_URL = "http://127.0.0.1:8000"
COMMAND_WAIT_S = 300  # a guard against a hung command, never a speed

SKIPPED = {
    "make run &": "the test's live service stands for it (its address replaces :8000)",
    "make run": "the test's live service stands for it (its address replaces :8000)",
    "make test": "this test suite is that run",
    "make install": "tests/test_setup.py runs it in a fresh copy",
}

FENCE = re.compile(r"^```(\S*)\s*$")


@dataclass(frozen=True)
class Block:
    lang: str
    line: int  # where its text starts in the document (1-based)
    text: str

    def commands(self) -> list[str]:
        found: list[str] = []
        pending: str | None = None
        for raw in self.text.splitlines():
            if pending is not None:
                pending += "\n" + raw
            elif raw.startswith("$ "):
                pending = raw[2:]
            else:
                continue
            if not pending.endswith("\\"):
                found.append(pending)
                pending = None
        return found


def blocks(markdown: str) -> list[Block]:
    found: list[Block] = []
    lang: str | None = None
    start = 0
    lines: list[str] = []
    for number, raw in enumerate(markdown.splitlines(), 1):
        fence = FENCE.match(raw)
        if lang is None and fence:
            lang, start, lines = fence.group(1), number + 1, []
        elif lang is not None and raw.strip() == "```":
            found.append(Block(lang, start, "\n".join(lines) + "\n"))
            lang = None
        elif lang is not None:
            lines.append(raw)
    return found


def bare(command: str) -> str:
    """The command without its trailing comment, for the SKIPPED table."""
    return re.sub(r"\s+#.*$", "", command).strip()


def run_console(block: Block, base_url: str) -> str | None:
    """Runs the block's commands; returns an error text, or None."""
    script: list[str] = []
    for command in block.commands():
        if bare(command) in SKIPPED:
            print(f"    skipped {bare(command)!r}: {SKIPPED[bare(command)]}")
            continue
        script.append(command.replace(DOCS_BASE_URL, base_url))
    if not script:
        return None
    with tempfile.NamedTemporaryFile("rb", suffix=".env") as env_file:
        # Every command is echoed before it runs, so a failure names it; the environment it
        # leaves is read back for the blocks after it.
        body = "\n".join(f"printf '+ %s\\n' {quote(c)} >&2\n{c}" for c in script)
        program = f"set -euo pipefail\n{body}\nenv -0 > {quote(env_file.name)}\n"
        done = subprocess.run(
            ["bash", "-c", program],
            capture_output=True,
            text=True,
            timeout=COMMAND_WAIT_S,
            check=False,
            stdin=subprocess.DEVNULL,  # as in a script: nothing to type at a prompt
        )
        sys.stdout.write(indent(done.stdout))
        if done.returncode != 0:
            return f"exit {done.returncode}\n{done.stderr}"
        exported = env_file.read().split(b"\0")
    os.environ.clear()
    for pair in exported:
        if b"=" in pair:
            name, _, value = pair.decode().partition("=")
            os.environ[name] = value
    return None


def run_python(block: Block, namespace: dict[str, object], base_url: str, doc: Path) -> str | None:
    source = block.text.replace(DOCS_BASE_URL, base_url)
    try:
        # Blank lines before the block, so a traceback's line numbers are the document's.
        code = compile("\n" * (block.line - 1) + source, str(doc), "exec")
        exec(code, namespace)
    except Exception:
        return traceback.format_exc()
    return None


def quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def indent(text: str) -> str:
    return "".join(f"    | {line}\n" for line in text.splitlines())


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("doc", type=Path)
    parser.add_argument("--base-url", required=True)
    args = parser.parse_args()
    namespace: dict[str, object] = {"__name__": "__doc__"}
    ran = 0
    for block in blocks(args.doc.read_text(encoding="utf-8")):
        if block.lang == "console":
            if not block.commands():
                print(f"FAILED: {args.doc}:{block.line}: a console block with no '$ ' command")
                return 1
            error = run_console(block, args.base_url)
        elif block.lang == "python":
            error = run_python(block, namespace, args.base_url, args.doc)
        else:
            continue
        sys.stdout.flush()
        if error is not None:
            print(f"FAILED: {args.doc}:{block.line} ({block.lang} block)\n{error}")
            return 1
        ran += 1
        print(f"{args.doc.name}:{block.line}: {block.lang} block ran")
        sys.stdout.flush()
    print(f"{ran} blocks ran")
    return 0


if __name__ == "__main__":
    sys.exit(main())
