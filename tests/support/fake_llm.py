"""A local fake LLM server speaking Anthropic's Messages API (``POST /v1/messages``) and OpenAI's
Chat Completions API (``POST /v1/chat/completions``), enough for the official SDKs pointed at it
by base URL (``anthropic_base_url``, ``openai_base_url``).

The reply is computed from the request (the model and the last user turn), so a test can tell
which message a stored thought answers. Every request is recorded (vendor, api key, body).
Tests can make it fail (``fail_next``: status and count, in the vendor's error shape) or hold
requests until released (``hold``: a cycle stuck mid-call, for killing its worker).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def reply_text(model: str, last_user: str) -> str:
    """What the fake answers: the model and the last line of the last user turn."""
    last_line = last_user.strip().splitlines()[-1] if last_user.strip() else ""
    return f"[{model}] I heard: {last_line}"


@dataclass
class Recorded:
    vendor: str
    path: str
    api_key: str | None
    body: dict[str, Any]


@dataclass
class FakeLlm:
    host: str = "127.0.0.1"
    port: int = 0
    requests: list[Recorded] = field(default_factory=list)
    _fail: list[int] = field(default_factory=list)  # statuses of the next failing requests
    _hold: bool = False
    arrived: threading.Event = field(default_factory=threading.Event)
    released: threading.Event = field(default_factory=threading.Event)
    delay_s: float = 0.0
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _server: ThreadingHTTPServer | None = None

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def anthropic_base_url(self) -> str:
        return self.base_url  # the SDK appends /v1/messages

    @property
    def openai_base_url(self) -> str:
        return self.base_url + "/v1"  # the SDK appends /chat/completions

    def fail_next(self, status: int, count: int = 1) -> None:
        with self._lock:
            self._fail.extend([status] * count)

    def clear_failures(self) -> None:
        with self._lock:
            self._fail.clear()

    def hold(self) -> None:
        """Hold every request from now on until :meth:`release`; ``arrived`` is set when one
        is being held."""
        self.arrived.clear()
        self.released.clear()
        self._hold = True

    def release(self) -> None:
        self._hold = False
        self.released.set()

    def count(self, vendor: str | None = None) -> int:
        with self._lock:
            return sum(1 for r in self.requests if vendor is None or r.vendor == vendor)

    # -- the server --

    def start(self) -> None:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return  # quiet: pytest runs with warnings as errors, not with logs

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    self._send(400, {"error": "invalid json"})
                    return
                auth = self.headers.get("Authorization") or ""
                bearer = auth.removeprefix("Bearer ") if auth.startswith("Bearer ") else None
                if self.path == "/v1/messages":
                    # The Anthropic SDK sends its key as x-api-key or as a bearer (by version).
                    fake._answer(self, "anthropic", self.headers.get("x-api-key") or bearer, body)
                elif self.path == "/v1/chat/completions":
                    fake._answer(self, "openai", bearer, body)
                else:
                    self._send(404, {"error": f"no route {self.path}"})

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode("utf-8")
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:
                    return  # the client went away (a killed worker)

        self._server = ThreadingHTTPServer((self.host, self.port), Handler)
        self._server.daemon_threads = True
        self.port = int(self._server.server_address[1])
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.release()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def _answer(self, handler: Any, vendor: str, api_key: str | None, body: dict[str, Any]) -> None:
        with self._lock:
            self.requests.append(Recorded(vendor, handler.path, api_key, body))
            status = self._fail.pop(0) if self._fail else None
        if self._hold:
            self.arrived.set()
            self.released.wait(60)
        if self.delay_s:
            time.sleep(self.delay_s)
        if not api_key:
            status = status or 401
        if status is not None:
            handler._send(status, _error(vendor, status))
            return
        model = str(body.get("model"))
        turns = [m for m in body.get("messages", []) if m.get("role") == "user"]
        last = turns[-1]["content"] if turns else ""
        if isinstance(last, list):  # content blocks
            last = "".join(b.get("text", "") for b in last if isinstance(b, dict))
        text = reply_text(model, str(last))
        handler._send(
            200, _anthropic(model, text) if vendor == "anthropic" else _openai(model, text)
        )


def _anthropic(model: str, text: str) -> dict[str, Any]:
    return {
        "id": "msg_fake",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }


def _openai(model: str, text: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text, "refusal": None},
                "finish_reason": "stop",
                "logprobs": None,
            }
        ],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


def _error(vendor: str, status: int) -> dict[str, Any]:
    if vendor == "anthropic":
        return {"type": "error", "error": {"type": "api_error", "message": f"fake {status}"}}
    return {"error": {"message": f"fake {status}", "type": "server_error", "code": None}}


@contextmanager
def fake_llm() -> Iterator[FakeLlm]:
    fake = FakeLlm()
    fake.start()
    try:
        yield fake
    finally:
        fake.stop()


__all__ = ["FakeLlm", "Recorded", "fake_llm", "reply_text"]
