"""The think cycle's one wire format, shared by the hosted loop (server) and the user's own loop
(``hearth runtime run``): what a cycle stores as a thought's plaintext (``hearth/think-cycle/v1``,
sealed before it leaves the loop) and how a prompt is built from the wake and a strand's recent
thoughts. Pure: no I/O, so both sides import it and neither imports the other."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

THOUGHT_FORMAT = "hearth/think-cycle/v1"
STRAND_NAME = "thoughts"  # the strand a runtime's loop makes on its first cycle


@dataclass(frozen=True)
class Prompt:
    """A system text and a conversation: ``(role, text)`` with role ``user`` or ``assistant``,
    alternating, beginning and ending with ``user``."""

    system: str
    turns: tuple[tuple[str, str], ...]


def thought_plaintext(
    *,
    in_reply_to: str,
    sender: str,
    message: str,
    reply: str,
    provider: str | None,
    model: str | None,
) -> bytes:
    """What a cycle stores (sealed): the message it answered and the reply, as JSON."""
    return json.dumps(
        {
            "format": THOUGHT_FORMAT,
            "in_reply_to": in_reply_to,
            "sender": sender,
            "message": message,
            "reply": reply,
            "provider": provider,
            "model": model,
        },
        ensure_ascii=False,
        separators=(",", ":"),
    ).encode("utf-8")


def parse_thought(plaintext: bytes) -> dict[str, Any] | None:
    """The cycle record a thought holds, or None for a thought written some other way."""
    try:
        parsed = json.loads(plaintext.decode("utf-8", errors="replace"))
    except ValueError:
        return None
    if isinstance(parsed, dict) and parsed.get("format") == THOUGHT_FORMAT:
        return parsed
    return None


def turns_of(plaintext: bytes) -> list[tuple[str, str]]:
    parsed = parse_thought(plaintext)
    if parsed is not None:
        return [
            ("user", f"Message from {parsed.get('sender')}:\n{parsed.get('message')}"),
            ("assistant", str(parsed.get("reply"))),
        ]
    # A thought written some other way (by the identity itself): context, not a turn of ours.
    text = plaintext.decode("utf-8", errors="replace")
    return [("user", f"An earlier thought of yours:\n{text}")]


def build_prompt(wake_markdown: str, history: Iterable[bytes], sender: str, body: str) -> Prompt:
    """The wake (Markdown) as the system text, the thoughts as the conversation so far, the
    message last. Consecutive turns of one role are joined: both vendor APIs want them to
    alternate, beginning with the user."""
    turns: list[tuple[str, str]] = []
    for plaintext in history:
        turns.extend(turns_of(plaintext))
    turns.append(("user", f"Message from {sender}:\n{body}"))
    merged: list[tuple[str, str]] = []
    for role, text in turns:
        if merged and merged[-1][0] == role:
            merged[-1] = (role, merged[-1][1] + "\n\n" + text)
        else:
            merged.append((role, text))
    if merged[0][0] != "user":
        merged.insert(0, ("user", "(The conversation so far.)"))
    system = (
        "You are the agent described by this wake document. Answer the last message.\n\n"
        + wake_markdown
    )
    return Prompt(system, tuple(merged))
