"""The client's address: the socket's peer, or behind trusted proxies what the nearest proxy saw.

A client writes its own ``X-Forwarded-For``; each proxy appends the address it received the
request from. So the entries are believed from the right only, as far as they were written by
proxies we trust: the first entry (from the right) that is not a trusted proxy is the client.
Everything to its left is the client's own claim and is never read.

Rules (docs/service.md, "Running it"):
- Forwarding headers count only when the service is told a proxy is in front
  (``SERVICE_TRUST_PROXY`` or ``SERVICE_BEHIND_TLS_PROXY``), and only on a connection whose peer
  is itself a trusted proxy (``SERVICE_TRUSTED_PROXIES``, default loopback).
- An entry that is not an IP address (empty, ``unknown``, an obfuscated name, garbage) stops the
  walk: no trusted proxy wrote it, so nothing left of it is believed either, and the client is
  the last trusted hop seen. That keys a misbehaving chain on the proxy, never on a claim.
- Addresses are normalised (``::ffff:a.b.c.d`` is ``a.b.c.d``; IPv6 in its short form), so one
  client cannot take several limiter windows by spelling its address differently.
"""

from __future__ import annotations

import functools
import ipaddress
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, TypeAlias

if TYPE_CHECKING:
    from starlette.requests import HTTPConnection

    from .settings import Settings

Address: TypeAlias = ipaddress.IPv4Address | ipaddress.IPv6Address
Network: TypeAlias = ipaddress.IPv4Network | ipaddress.IPv6Network

UNKNOWN = "unknown"  # no peer address at all (a test transport, a unix socket)


def parse_network(entry: str) -> Network:
    """One trusted-proxy entry: an address (a network of one) or a CIDR network.

    Raises ValueError with a message fit for an operator. Host bits set under a prefix
    (``10.0.0.1/8``) are refused rather than guessed at: the two readings trust very different
    sets of peers.
    """
    text = entry.strip()
    try:
        if "/" not in text:
            return ipaddress.ip_network(text)
        interface = ipaddress.ip_interface(text)
    except ValueError:
        raise ValueError(
            f"trusted proxy {entry!r} is not an IP address or a CIDR network"
        ) from None
    if interface.ip != interface.network.network_address:
        raise ValueError(
            f"trusted proxy {entry!r} has host bits set; "
            f"did you mean {interface.network.with_prefixlen}?"
        )
    return interface.network


@functools.cache
def trusted_networks(entries: tuple[str, ...]) -> tuple[Network, ...]:
    """The parsed networks, once per distinct setting (settings are validated at load, so this
    never raises for a loaded Settings)."""
    return tuple(parse_network(entry) for entry in entries)


def parse_address(text: str) -> Address | None:
    """An IP address as it appears in X-Forwarded-For or a socket peer, or None.

    Accepts ``a.b.c.d``, ``a.b.c.d:port``, IPv6, and ``[IPv6]`` or ``[IPv6]:port`` (some proxies
    add the port); an IPv4-mapped IPv6 address is its IPv4 address.
    """
    value = text.strip()
    if value.startswith("["):
        end = value.find("]")
        rest = value[end + 1 :] if end != -1 else ""
        if end == -1 or (rest and not (rest.startswith(":") and rest[1:].isdigit())):
            return None
        value = value[1:end]
    elif value.count(":") == 1:
        host, _, port = value.partition(":")
        if not port.isdigit():
            return None
        value = host
    try:
        address = ipaddress.ip_address(value)
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def normalised(peer: str | None) -> str:
    """A peer address in one spelling (a peer that is not an IP address is kept as it is)."""
    if peer is None:
        return UNKNOWN
    address = parse_address(peer)
    return str(address) if address is not None else peer


def _trusted(address: Address, networks: Iterable[Network]) -> bool:
    return any(address in network for network in networks)


def forwarded_client(
    peer: str | None, forwarded_for: Sequence[str], networks: Sequence[Network]
) -> str:
    """The client's address, given the socket's peer, the X-Forwarded-For header lines in the
    order they arrived (joined, as one list), and the trusted proxy networks.

    Only a trusted peer's header is read; then the entries are walked from the right, trusted
    proxies skipped, and the first untrusted address is the client. A malformed entry ends the
    walk, and so does the left end: the client is then the last trusted hop.
    """
    if peer is None:
        return UNKNOWN
    hop = parse_address(peer)
    if hop is None or not _trusted(hop, networks):
        return normalised(peer)
    entries = [entry for line in forwarded_for for entry in line.split(",")]
    for entry in reversed(entries):
        address = parse_address(entry)
        if address is None:
            break
        if not _trusted(address, networks):
            return str(address)
        hop = address
    return str(hop)


def forwarding_trusted(settings: Settings) -> bool:
    """Whether the service was told a proxy is in front: ``hearth serve --behind-proxy`` sets
    ``SERVICE_TRUST_PROXY``; ``SERVICE_BEHIND_TLS_PROXY`` says the same to an app started any
    other way."""
    return settings.trust_proxy or settings.behind_tls_proxy


def client_address(connection: HTTPConnection, settings: Settings) -> str:
    """The client of a request or WebSocket, by the rules above.

    ``scope["client"]`` must be the socket's peer: the server is run without its own
    forwarded-header handling (uvicorn ``proxy_headers=False``), which would replace it first.
    """
    peer = connection.client.host if connection.client else None
    if not forwarding_trusted(settings):
        return normalised(peer)
    lines = connection.headers.getlist("x-forwarded-for")
    return forwarded_client(peer, lines, trusted_networks(tuple(settings.trusted_proxies)))


__all__ = [
    "UNKNOWN",
    "client_address",
    "forwarded_client",
    "forwarding_trusted",
    "normalised",
    "parse_address",
    "parse_network",
    "trusted_networks",
]
