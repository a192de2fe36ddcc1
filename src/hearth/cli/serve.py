"""``hearth serve``: run the service (uvicorn), migrating the database once before workers start."""

from __future__ import annotations

import asyncio
import ipaddress
import os
from pathlib import Path

import typer


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def serve(  # noqa: PLR0917 - typer reads options from the signature
    host: str = typer.Option("127.0.0.1", help="Address to bind."),
    port: int = typer.Option(8000, help="Port to bind."),
    workers: int = typer.Option(1, min=1, help="Worker processes (share state through Redis)."),
    certfile: Path | None = typer.Option(None, help="TLS certificate (PEM)."),
    keyfile: Path | None = typer.Option(None, help="TLS private key (PEM)."),
    behind_proxy: bool = typer.Option(
        False,
        "--behind-proxy",
        help="TLS ends at a proxy in front; the client address is the one it appends to "
        "X-Forwarded-For (SERVICE_TRUSTED_PROXIES).",
    ),
) -> None:
    """Serve the API. Plain HTTP only on loopback, unless --behind-proxy says TLS ends earlier."""
    # Imported here, not at the top: every other `hearth` command stays quick to start.
    from hearth.server.db import Database  # noqa: PLC0415
    from hearth.server.db.migrate import upgrade  # noqa: PLC0415
    from hearth.server.settings import Settings  # noqa: PLC0415

    settings = Settings()
    certfile = certfile or settings.tls_certfile
    keyfile = keyfile or settings.tls_keyfile
    behind_proxy = behind_proxy or settings.behind_tls_proxy
    if (certfile is None) != (keyfile is None):
        typer.echo("error: --certfile and --keyfile go together", err=True)
        raise typer.Exit(2)
    if certfile is None and not behind_proxy and not _loopback(host):
        typer.echo(
            f"error: refusing to serve plain HTTP on {host}: the service requires TLS. "
            "Give --certfile/--keyfile, or --behind-proxy when a TLS proxy is in front.",
            err=True,
        )
        raise typer.Exit(2)
    if settings.public_base_url is None:
        if behind_proxy or not _loopback(host):
            typer.echo(
                "error: SERVICE_PUBLIC_BASE_URL is required beyond loopback and behind a proxy: "
                "links and the provider record name the service's public address, which is "
                "never taken from a request. Set it to the address clients use, such as "
                "https://hearth.example.org.",
                err=True,
            )
            raise typer.Exit(2)
        from hearth.server.public_address import bound_base_url  # noqa: PLC0415

        # Loopback development: the bound address. Set before uvicorn starts, so that every
        # worker reads it with the rest of its settings.
        os.environ["SERVICE_PUBLIC_BASE_URL"] = bound_base_url(host, port, tls=certfile is not None)
    if settings.is_sqlite:
        path = settings.database_url.split("///", 1)[-1]
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        if workers > 1 and not settings.redis_url:
            typer.echo(
                "warning: several workers without SERVICE_REDIS_URL keep separate limiter "
                "windows per worker",
                err=True,
            )

    async def migrate() -> None:
        db = Database(settings.database_url)
        try:
            await upgrade(db.engine)
        finally:
            await db.dispose()

    asyncio.run(migrate())
    # Migrated once here; workers must not race each other doing it again.
    os.environ["SERVICE_AUTO_MIGRATE"] = "false"
    if behind_proxy:
        os.environ["SERVICE_TRUST_PROXY"] = "true"

    import uvicorn  # noqa: PLC0415

    from hearth.server.metrics_dir import metrics_directory  # noqa: PLC0415
    from hearth.server.serving import uvicorn_options  # noqa: PLC0415

    # Several workers sum their metrics through files in a directory of this run, set
    # before they start and removed when it ends (server/scrape.py).
    with metrics_directory(workers):
        uvicorn.run(
            "hearth.server.app:app_from_env",
            factory=True,
            host=host,
            port=port,
            workers=workers,
            ssl_certfile=str(certfile) if certfile else None,
            ssl_keyfile=str(keyfile) if keyfile else None,
            # Head limits, log format, shutdown bound: shared with the tests' live service.
            **uvicorn_options(settings, own_process=True),
        )
