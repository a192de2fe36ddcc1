"""``hearth voice``: the wake's voice, one line per event as it arrives.

Each line is the event's name and its data as compact JSON (``--json``: one JSON object per
line, ``{"event": ..., "data": ...}``). It runs until Ctrl-C (exit 130, as a shell expects of
an interrupt), until the service ends the stream (exit 0), or until ``--count`` events or the
first ``change`` (``--until-change``) have been printed (exit 0; exit 1 when the stream ends
first). Reconnecting is off unless ``--reconnect N`` asks for it; after a reconnection the
stream does not replay what was missed: run ``hearth wake`` to catch up.
"""

from __future__ import annotations

import json
from pathlib import Path

import httpx2
import typer

from hearth.client import HearthError, VoiceEvent

from .client_config import (
    BASE_URL_OPTION,
    HOME_OPTION,
    client_for,
    errors,
    failure,
    home_dir,
    http_failure,
)


def _line(event: VoiceEvent, as_json: bool) -> str:
    if as_json:
        return json.dumps({"event": event.event, "data": event.data}, separators=(",", ":"))
    return f"{event.event} {json.dumps(event.data, separators=(',', ':'), sort_keys=True)}"


def voice(  # noqa: PLR0917 - typer reads options from the signature
    identity: str | None = typer.Option(
        None,
        "--identity",
        help="The identity (id or DID) to listen for (default: this home's identity).",
        show_default=False,
    ),
    count: int | None = typer.Option(
        None,
        "--count",
        min=1,
        help="Stop after this many events (connected included).",
        show_default=False,
    ),
    until_change: bool = typer.Option(
        False, "--until-change", help="Stop after the first change event."
    ),
    reconnect: int = typer.Option(
        0, "--reconnect", min=0, max=100, help="Reconnect at most this many times (default: never)."
    ),
    as_json: bool = typer.Option(False, "--json", help="One JSON object per line."),
    home: Path | None = HOME_OPTION,
    base_url: str | None = BASE_URL_OPTION,
) -> None:
    """Print the wake's voice: connected, each change of the identity or the project, welcome."""
    client, profile = client_for(home_dir(home), base_url)
    printed = 0
    with client:
        try:
            with client.voice(identity or profile.identity_id, reconnect=reconnect) as stream:
                for event in stream:
                    typer.echo(_line(event, as_json))
                    printed += 1
                    if count is not None and printed >= count:
                        return
                    if until_change and event.event == "change":
                        return
        except KeyboardInterrupt:
            raise typer.Exit(130) from None
        except (HearthError, httpx2.HTTPError) as exc:
            http_failure(exc)
    if count is not None or until_change:
        failure("the stream ended before what was asked for arrived")
    errors.print("the stream ended; run `hearth wake` to catch up", markup=False)
