"""The service's public address: from configuration, never from a request.

Links in bodies (package manifests, scaffolds), the provider record's endpoint and id, and
receipts are built on ``SERVICE_PUBLIC_BASE_URL``. A request's ``Host`` (and any forwarded
host or scheme) is written by the client, so it is never read. ``hearth serve`` requires the
setting beyond loopback and behind a proxy, and on loopback sets it to the bound address before
the server starts. An app started another way (an embedder, a test) without it builds links on
the address of the socket the request arrived on (ASGI ``scope["server"]``, the server's own
``getsockname``, not anything the client sent); it publishes no provider record, which is
signed outside any request (services/provider_record.py).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from typing import Any

from .errors import ApiError
from .settings import Settings


def bound_base_url(host: str, port: int, *, tls: bool) -> str:
    """``http(s)://host:port`` for a bound address (IPv6 in brackets)."""
    try:
        literal = ipaddress.ip_address(host)
    except ValueError:
        literal = None
    name = f"[{host}]" if isinstance(literal, ipaddress.IPv6Address) else host
    return f"{'https' if tls else 'http'}://{name}:{port}"


def public_base_url(settings: Settings, scope: Mapping[str, Any]) -> str:
    """The configured address, else the socket the request came in on (see above)."""
    if settings.public_base_url:
        return settings.public_base_url
    server = scope.get("server")
    if not server or server[1] is None:  # a unix socket: no address to give out
        raise ApiError(
            503,
            "public_address_unset",
            "The service's public address is not configured.",
            hint="The operator sets SERVICE_PUBLIC_BASE_URL.",
        )
    # The scheme is the server's (TLS on this socket or not): no forwarded-header handling
    # runs in front of the app to rewrite it.
    tls = scope.get("scheme") in {"https", "wss"}
    return bound_base_url(str(server[0]), int(server[1]), tls=tls)


__all__ = ["bound_base_url", "public_base_url"]
