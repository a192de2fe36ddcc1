"""``hearth bridge --runtime ID``: the user-side bridge of a bridged runtime (docs/bridge.md).

It runs until Ctrl-C (or SIGTERM), reconnecting with backoff. What it needs:

- the runtime's control token (answered once by POST /v1/runtimes): ``--control-token-file``,
  else ``$HEARTH_BRIDGE_CONTROL_TOKEN``, else ``--control-token`` (visible to other users of
  the machine in the process list: prefer the other two);
- the bridge's Ed25519 key whose public half was registered as ``bridge.pubkey``: a PKCS#8 PEM
  file (``hearth keys generate`` writes one), ``--bridge-key``;
- the user's keys, for K_master: ``--mnemonic-file`` (the 24 words), else the sealed key file
  of the home (``hearth register``/``recover`` write it), opened with the passphrase from
  ``--passphrase-file``, ``$HEARTH_PASSPHRASE`` or a prompt.

Exit status: 0 after Ctrl-C/SIGTERM, 1 when the service refuses the bridge for good or the
attempts run out, 2 for a usage error.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
from pathlib import Path

import typer

from hearth.adds import AddsError
from hearth.adds.keys import load_ed25519_private_key
from hearth.client.backup import BackupError, open_backup
from hearth.client.bridge import BridgeConfig, BridgeFatal, BridgeGaveUp, BridgeSidecar, bridge_url
from hearth.client.mnemonic_keys import MnemonicError, derive_keys

from .client_config import (
    HOME_OPTION,
    PASSPHRASE_FILE_OPTION,
    home_dir,
    keys_path,
    load_profile,
    load_sealed_keys,
    read_mnemonic,
    read_passphrase,
    usage_error,
)
from .key_text import decode_key

TOKEN_ENV = "HEARTH_BRIDGE_CONTROL_TOKEN"

app = typer.Typer(
    name="bridge",
    help="Run the user-side bridge of a bridged runtime (K_master stays on this machine).",
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _control_token(token: str | None, token_file: Path | None) -> str:
    if token_file is not None:
        try:
            value = token_file.read_text(encoding="utf-8").strip()
        except OSError as exc:
            usage_error(f"cannot read the control token file {token_file}: {exc.strerror}")
    else:
        value = (os.environ.get(TOKEN_ENV) or token or "").strip()
    if not value:
        usage_error(
            f"no control token: pass --control-token-file PATH (or set ${TOKEN_ENV}); it was "
            "answered once when the runtime was provisioned, or rotate it with POST "
            "/v1/runtimes/{id}/control-token"
        )
    return value


def _k_master(mnemonic_file: Path | None, home: Path, passphrase_file: Path | None) -> bytes:
    if mnemonic_file is not None:
        try:
            return derive_keys(read_mnemonic(mnemonic_file)).strand_master
        except MnemonicError as exc:
            usage_error(f"the mnemonic file does not hold valid recovery words: {exc}")
    path = keys_path(home)
    if not path.exists():
        usage_error(f"no sealed keys at {path}: pass --mnemonic-file or --home")
    sealed, _ = load_sealed_keys(path)
    passphrase = read_passphrase(passphrase_file, confirm=False)
    try:
        return open_backup(sealed.blob_base64, sealed.key_derivation, passphrase).strand_master
    except BackupError as exc:
        usage_error(f"cannot open {path}: {exc}")


@app.command()
def bridge(  # noqa: PLR0917 - typer reads the options from the signature
    runtime: str = typer.Option(..., "--runtime", help="The bridged runtime's id."),
    url: str | None = typer.Option(
        None,
        "--url",
        help="Service address (http(s)://, or the bridge's full ws(s):// URL); default: the "
        "home profile's.",
        show_default=False,
    ),
    control_token: str | None = typer.Option(
        None,
        "--control-token",
        help=f"The control token (prefer --control-token-file or ${TOKEN_ENV}).",
        show_default=False,
    ),
    control_token_file: Path | None = typer.Option(
        None, "--control-token-file", help="Read the control token from this file."
    ),
    bridge_key: Path = typer.Option(
        ..., "--bridge-key", help="The bridge's Ed25519 private key (PKCS#8 PEM)."
    ),
    mnemonic_file: Path | None = typer.Option(
        None,
        "--mnemonic-file",
        help="Derive K_master from the 24 words in this file (default: the home's sealed keys).",
    ),
    home: Path | None = HOME_OPTION,
    passphrase_file: Path | None = PASSPHRASE_FILE_OPTION,
    pin_runtime_key: str | None = typer.Option(
        None,
        "--pin-runtime-key",
        help="Refuse a service that announces another runtime key (base64; the runtime "
        "record's runtime_public_key).",
    ),
    initial_delay: float = typer.Option(0.5, "--initial-delay", min=0.01, help="First backoff, s."),
    max_delay: float = typer.Option(30.0, "--max-delay", min=0.01, help="Longest backoff, s."),
    max_attempts: int | None = typer.Option(
        None, "--max-attempts", min=1, help="Give up after this many failures in a row."
    ),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Log every request's outcome."),
) -> None:
    """Connect to the runtime's bridge and answer its decrypt/encrypt requests until Ctrl-C."""
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    home_path = home_dir(home)
    if url is None:
        profile = load_profile(home_path)
        if profile is None:
            usage_error("no service address: pass --url URL")
        url = profile.base_url
    try:
        target = bridge_url(url, runtime)
    except ValueError as exc:
        usage_error(str(exc))
    token = _control_token(control_token, control_token_file)
    try:
        key = load_ed25519_private_key(bridge_key.read_bytes())
    except OSError as exc:
        usage_error(f"cannot read the bridge key {bridge_key}: {exc.strerror}")
    except (AddsError, ValueError) as exc:
        usage_error(f"{bridge_key} is not an Ed25519 private key (PKCS#8 PEM): {exc}")
    pinned = None
    if pin_runtime_key is not None:
        try:
            pinned = decode_key(pin_runtime_key, what="--pin-runtime-key")
        except ValueError as exc:
            usage_error(str(exc))
    config = BridgeConfig(
        runtime_id=runtime,
        url=target,
        control_token=token,
        bridge_key=key,
        k_master=_k_master(mnemonic_file, home_path, passphrase_file),
        pinned_runtime_key=pinned,
        initial_delay=initial_delay,
        max_delay=max(max_delay, initial_delay),
        max_attempts=max_attempts,
    )
    sidecar = BridgeSidecar(config)
    try:
        asyncio.run(_run(sidecar))
    except (BridgeFatal, BridgeGaveUp) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from None
    except KeyboardInterrupt:  # a second Ctrl-C while stopping
        pass
    typer.echo("bridge stopped", err=True)


async def _run(sidecar: BridgeSidecar) -> None:
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        # Not on every platform (Windows): Ctrl-C then raises KeyboardInterrupt instead.
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(signum, sidecar.stop)
    await sidecar.run()


def main() -> None:
    app()


if __name__ == "__main__":
    main()
