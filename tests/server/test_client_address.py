"""The client address behind trusted proxies: the rule as a pure function (a table of cases),
the setting that lists the proxies, and the limiter on a live service keyed by what the trusted
proxy saw, never by what the client wrote (issue 14, item 1)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pydantic import ValidationError

from hearth.server.client_address import forwarded_client, parse_network, trusted_networks
from hearth.server.settings import Settings
from tests.support.agents import Agent
from tests.support.live import Live, live_on

LOOPBACK = trusted_networks(("127.0.0.1/32", "::1/128"))
TWO_TIERS = trusted_networks(("127.0.0.1/32", "10.0.0.0/8", "2001:db8:cafe::/48"))

# (peer, X-Forwarded-For lines, trusted networks, the client)
CASES = [
    # The audit: the client wrote the left entry, the proxy on loopback appended the right one.
    ("127.0.0.1", ["198.51.100.7, 203.0.113.7"], LOOPBACK, "203.0.113.7"),
    ("127.0.0.1", ["203.0.113.7"], LOOPBACK, "203.0.113.7"),
    # A peer that is not a trusted proxy: its header is the client's own, never read.
    ("203.0.113.9", ["198.51.100.1"], LOOPBACK, "203.0.113.9"),
    ("10.1.2.3", ["198.51.100.1"], LOOPBACK, "10.1.2.3"),
    # Several header lines are one list, in the order they arrived.
    ("127.0.0.1", ["198.51.100.1", "203.0.113.7"], LOOPBACK, "203.0.113.7"),
    ("127.0.0.1", ["198.51.100.1, 203.0.113.5", "10.0.0.2"], TWO_TIERS, "203.0.113.5"),
    # Chains of trusted proxies are skipped from the right.
    ("127.0.0.1", ["198.51.100.1, 203.0.113.5, 10.9.9.9, 10.0.0.1"], TWO_TIERS, "203.0.113.5"),
    ("127.0.0.1", ["203.0.113.5, 2001:db8:cafe::7"], TWO_TIERS, "203.0.113.5"),
    # Every entry trusted: the client is the leftmost hop, itself inside the trusted networks.
    ("127.0.0.1", ["10.0.0.5, 10.0.0.1"], TWO_TIERS, "10.0.0.5"),
    # Without the header, or with nothing in it, the trusted peer is the client.
    ("127.0.0.1", [], LOOPBACK, "127.0.0.1"),
    ("127.0.0.1", [""], LOOPBACK, "127.0.0.1"),
    ("127.0.0.1", ["  "], LOOPBACK, "127.0.0.1"),
    # A malformed entry stops the walk: the last trusted hop is the client.
    ("127.0.0.1", ["198.51.100.1, unknown"], LOOPBACK, "127.0.0.1"),
    ("127.0.0.1", ["198.51.100.1, 10.0.0.1, garbage, 10.0.0.2"], TWO_TIERS, "10.0.0.2"),
    ("127.0.0.1", ["198.51.100.1,,10.0.0.2"], TWO_TIERS, "10.0.0.2"),
    ("127.0.0.1", ["203.0.113.7, _hidden"], LOOPBACK, "127.0.0.1"),
    ("127.0.0.1", ["203.0.113.7, 203.0.113.8:notaport"], LOOPBACK, "127.0.0.1"),
    ("127.0.0.1", ["[2001:db8::1"], LOOPBACK, "127.0.0.1"),
    # Ports some proxies add, and IPv6 in brackets, are the same address.
    ("127.0.0.1", ["203.0.113.7:4711"], LOOPBACK, "203.0.113.7"),
    ("127.0.0.1", ["[2001:db8::1]:443"], LOOPBACK, "2001:db8::1"),
    ("127.0.0.1", ["[2001:db8::1]"], LOOPBACK, "2001:db8::1"),
    # One address, one spelling: mapped IPv4 and long IPv6 forms are normalised.
    ("::ffff:127.0.0.1", ["::ffff:203.0.113.7"], LOOPBACK, "203.0.113.7"),
    ("::1", ["2001:0db8:0000:0000:0000:0000:0000:0001"], LOOPBACK, "2001:db8::1"),
    ("::ffff:203.0.113.9", ["198.51.100.1"], LOOPBACK, "203.0.113.9"),
    # No trusted proxy at all: the peer, whatever the header says.
    ("127.0.0.1", ["203.0.113.7"], (), "127.0.0.1"),
    # No peer address (a test transport): "unknown", never the header.
    (None, ["203.0.113.7"], LOOPBACK, "unknown"),
    ("testclient", ["203.0.113.7"], LOOPBACK, "testclient"),
]


@pytest.mark.parametrize(("peer", "lines", "networks", "client"), CASES)
def test_the_client_is_what_the_nearest_untrusted_hop_was_seen_as(
    peer: str | None, lines: list[str], networks: tuple[object, ...], client: str
) -> None:
    assert forwarded_client(peer, lines, networks) == client  # type: ignore[arg-type]


def test_trusted_proxies_are_addresses_or_networks() -> None:
    assert str(parse_network(" 192.0.2.1 ")) == "192.0.2.1/32"
    assert str(parse_network("10.0.0.0/8")) == "10.0.0.0/8"
    assert str(parse_network("2001:db8::/32")) == "2001:db8::/32"
    with pytest.raises(ValueError, match=re.escape("did you mean 10.0.0.0/8")):
        parse_network("10.0.0.1/8")
    with pytest.raises(ValueError, match="not an IP address or a CIDR network"):
        parse_network("proxy.internal")


def test_the_setting_reads_a_comma_list_or_json_and_refuses_a_bad_entry(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert Settings().trusted_proxies == ["127.0.0.1/32", "::1/128"]
    monkeypatch.setenv("SERVICE_TRUSTED_PROXIES", "10.0.0.0/8, 192.0.2.1 ,::1")
    assert Settings().trusted_proxies == ["10.0.0.0/8", "192.0.2.1/32", "::1/128"]
    monkeypatch.setenv("SERVICE_TRUSTED_PROXIES", '["10.0.0.0/8", "192.0.2.1"]')
    assert Settings().trusted_proxies == ["10.0.0.0/8", "192.0.2.1/32"]
    monkeypatch.setenv("SERVICE_TRUSTED_PROXIES", "")
    assert Settings().trusted_proxies == []
    for bad, said in [
        ("10.0.0.0/8, proxy.internal", "'proxy.internal' is not an IP address"),
        ("10.0.0.1/8", "did you mean 10.0.0.0/8"),
        ('["10.0.0.0/8"', "not a JSON array"),
    ]:
        monkeypatch.setenv("SERVICE_TRUSTED_PROXIES", bad)
        with pytest.raises(ValidationError, match=re.escape(said)):
            Settings()


def test_the_public_base_url_must_be_an_address() -> None:
    assert Settings(public_base_url="https://h.example:8443/base/").public_base_url == (
        "https://h.example:8443/base"
    )
    for bad in ["h.example", "ftp://h.example", "https://", "https://u:p@h.example", "http://h/?a"]:
        with pytest.raises(ValidationError, match="public_base_url must be an http"):
            Settings(public_base_url=bad)


# --- the limiter on a live service ------------------------------------------------------------


def registrations(live: Live, forwarded: list[str]) -> list[int]:
    """The status of one self-service registration per X-Forwarded-For value, in order."""
    with live.client() as client:
        return [
            client.post(
                "/v1/register/agent",
                json=Agent.new().registration(),
                headers={"X-Forwarded-For": value},
            ).status_code
            for value in forwarded
        ]


PROXY_SETTINGS = [{"trust_proxy": True}, {"behind_tls_proxy": True}]


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
@pytest.mark.parametrize("proxy", PROXY_SETTINGS, ids=["trust_proxy", "behind_tls_proxy"])
def test_a_client_cannot_choose_its_limiter_window(
    kind: str, proxy: dict[str, bool], tmp_path: Path
) -> None:
    """The audit's request: 12 registrations, each claiming another address left of the one
    the (loopback) proxy appended. The limit is 5: five pass, seven are refused. Clients the
    proxy saw as different addresses each have their own window."""
    with live_on(kind, tmp_path, self_service_limit=5, **proxy) as live:
        claimed = registrations(live, [f"198.51.100.{i}, 203.0.113.7" for i in range(12)])
        others = registrations(live, [f"198.51.100.1, 203.0.113.{i}" for i in (8, 9, 8)])
        hops = ["127.0.0.1", "::1", "::ffff:127.0.0.1"] * 2  # one client behind two proxies
        chained = registrations(
            live, [f"198.51.100.{i}, 203.0.113.10, {h}" for i, h in enumerate(hops)]
        )
    assert claimed == [201] * 5 + [429] * 7
    assert others == [201, 201, 201]
    assert chained == [201] * 5 + [429]


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_without_a_proxy_forwarding_headers_are_ignored(kind: str, tmp_path: Path) -> None:
    with live_on(kind, tmp_path, self_service_limit=5) as live:
        statuses = registrations(live, [f"203.0.113.{i}" for i in range(7)])
    assert statuses == [201] * 5 + [429] * 2
