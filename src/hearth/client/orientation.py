"""The service's public face and its operations routes, as calls: the porch, the canon, the
orientation documents (welcome, youspeak, mathos, self, safety, about), the wake of a caller
with no project yet, liveness and readiness, metrics, and package discovery. None needs a
bearer. The documents are answered as the JSON objects the service sends (their fields are
the service's own documentation: docs/orientation.md); metrics as Prometheus text; a package
artifact as its bytes. ``OrientationCalls`` is a mixin of both clients (``calls.py``)."""

from __future__ import annotations

from typing import Any

from .calls import Call, op
from .common import Transport, segment

__all__ = ["OrientationCalls"]


def _document(t: Transport, path: str) -> Call[dict[str, Any]]:
    return (yield from t._json("GET", path, authenticated=False))


class OrientationCalls:
    """Public orientation, operations and package discovery."""

    # -- orientation --

    @op
    def porch(self: Transport) -> Call[dict[str, Any]]:
        """``GET /public/porch``: the same orientation for everyone."""
        return (yield from _document(self, "/public/porch"))

    @op
    def safety(self: Transport) -> Call[dict[str, Any]]:
        """``GET /public/safety``: what the service never does and cannot promise."""
        return (yield from _document(self, "/public/safety"))

    @op
    def public_self(self: Transport) -> Call[dict[str, Any]]:
        """``GET /public/self``: the service describing itself (versions, contexts, custody)."""
        return (yield from _document(self, "/public/self"))

    @op
    def service_self(self: Transport) -> Call[dict[str, Any]]:
        """``GET /v1/self``: the versioned address of the same self-description."""
        return (yield from _document(self, "/v1/self"))

    @op
    def about(self: Transport) -> Call[dict[str, Any]]:
        """``GET /about``: the capability summary."""
        return (yield from _document(self, "/about"))

    @op
    def federation_about(self: Transport) -> Call[dict[str, Any]]:
        """``GET /federation/about``: whether federation is on."""
        return (yield from _document(self, "/federation/about"))

    @op
    def canon(self: Transport) -> Call[dict[str, Any]]:
        """``GET /v1/canon``: the published commitments (walls, promises, chronicle kinds)."""
        return (yield from _document(self, "/v1/canon"))

    @op
    def welcome(self: Transport) -> Call[dict[str, Any]]:
        """``GET /v1/welcome``: the standing invitation."""
        return (yield from _document(self, "/v1/welcome"))

    @op
    def youspeak(self: Transport) -> Call[dict[str, Any]]:
        """``GET /v1/youspeak``: the vocabulary, one line per term."""
        return (yield from _document(self, "/v1/youspeak"))

    @op
    def mathos(self: Transport) -> Call[dict[str, Any]]:
        """``GET /v1/mathos``: every signing recipe, field by field."""
        return (yield from _document(self, "/v1/mathos"))

    @op
    def mathos_catalog(self: Transport) -> Call[dict[str, Any]]:
        """``GET /v1/mathos/catalog``: the recipes in brief."""
        return (yield from _document(self, "/v1/mathos/catalog"))

    @op
    def mathos_public_key(self: Transport) -> Call[dict[str, Any]]:
        """``GET /v1/mathos/public-key``: the service's Ed25519 public key (a 503 refusal, as
        :class:`~hearth.client.HearthError`, until the operator configures one)."""
        return (yield from _document(self, "/v1/mathos/public-key"))

    @op
    def platform_wake(self: Transport) -> Call[dict[str, Any]]:
        """``GET /v1/platform/wake``: the wake for a caller with no project yet."""
        return (yield from _document(self, "/v1/platform/wake"))

    # -- operations --

    @op
    def healthz(self: Transport) -> Call[dict[str, Any]]:
        """``GET /healthz``: liveness (the process answers)."""
        return (yield from _document(self, "/healthz"))

    @op
    def readyz(self: Transport) -> Call[dict[str, Any]]:
        """``GET /readyz``: readiness; a service that is not ready answers 503, raised as
        :class:`~hearth.client.HearthError`."""
        return (yield from _document(self, "/readyz"))

    @op
    def metrics(self: Transport) -> Call[str]:
        """``GET /metrics``: the Prometheus exposition text."""
        return (yield from self._send("GET", "/metrics", authenticated=False)).text

    # -- package discovery --

    @op
    def love_packages(self: Transport) -> Call[dict[str, Any]]:
        """``GET /.well-known/love-packages``: where the package index is."""
        return (yield from _document(self, "/.well-known/love-packages"))

    @op
    def package_index(self: Transport) -> Call[dict[str, Any]]:
        """``GET /.well-known/love-packages/index.json``: the packages offered."""
        return (yield from _document(self, "/.well-known/love-packages/index.json"))

    @op
    def package_manifest(self: Transport, name: str, version: str) -> Call[dict[str, Any]]:
        """A package's manifest: its artifact's size and SHA-256 (check a download with it)."""
        path = f"/.well-known/love-packages/{segment(name)}/{segment(version)}/manifest.json"
        return (yield from _document(self, path))

    @op
    def package_download(self: Transport, filename: str) -> Call[bytes]:
        """``GET /packages/{filename}``: a package artifact's bytes, as served."""
        headers = {"Accept": "application/octet-stream"}
        path = f"/packages/{segment(filename)}"
        return (yield from self._send("GET", path, authenticated=False, headers=headers)).content
