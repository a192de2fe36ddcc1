"""``hearth serve``: run the service (uvicorn), migrating the database once before workers start."""

from __future__ import annotations

import asyncio
import ipaddress
import os
from pathlib import Path

import typer

GRACEFUL_SHUTDOWN_S = 5  # how long a stopping server waits for open responses (voice streams)


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
        False, "--behind-proxy", help="TLS ends at a proxy in front; trust its X-Forwarded-*."
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

    uvicorn.run(
        "hearth.server.app:app_from_env",
        factory=True,
        host=host,
        port=port,
        workers=workers,
        ssl_certfile=str(certfile) if certfile else None,
        ssl_keyfile=str(keyfile) if keyfile else None,
        proxy_headers=behind_proxy,
        access_log=False,
        log_level=settings.log_level,
        # Voice streams never end by themselves: without a bound, one open stream would keep
        # a stopping server waiting for ever.
        timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_S,
    )
