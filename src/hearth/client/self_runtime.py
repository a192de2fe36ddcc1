"""The think-loop of a ``self`` runtime, on the user's machine (docs/runtimes.md, "Self custody").

Custody tier ``self``: K_master, the signing key, every plaintext and the provider's api key
stay in this process. The service sees what the hosted tiers' storage sees (nonce, ciphertext,
signature) and the loop's liveness (heartbeats, taken and completed messages).

One cycle, :meth:`SelfRuntime.step`:

1. heartbeat (when due): ``last_seen_at``; the first one moves the runtime to ``running``;
2. take the identity's next pending message (``POST /v1/runtimes/{id}/inbox/take``); none: idle;
3. read the runtime's strand's recent thoughts and open them here with K_master; if one already
   answers this message (a cycle that stored its thought but could not complete the message),
   complete it without thinking again;
4. build the prompt: the wake (markdown) as the system text, the thoughts as the conversation so
   far, the message last (the hosted cycle's recipe, ``hearth/think-cycle/v1``, so both tiers
   read each other's thoughts alike);
5. call the provider here: Anthropic or OpenAI through their official SDKs with the user's own
   key, or any program that reads the prompt on stdin and writes the reply on stdout;
6. seal the reply under K_master for the strand's next seq, sign the write (the root key, kid
   ``primary``, or a registered device key) and store it;
7. complete the message.

Any failure in 3 to 7 releases the message (it is pending again, and the service appends
``think_cycle_error``), is logged by its stage and error type, and the loop backs off. Logs
never carry keys, words, message bodies, prompts or replies.

The prompt recipe is written here rather than imported from the hosted orchestrator
(``hearth.server.orchestrator.cycle``), which is bound to the server's database and settings:
the client must not need them. The two are kept alike by the tests, which read a self thought
with the same format fields the hosted cycle writes.
"""

from __future__ import annotations

import logging
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

import httpx2

from hearth.proofs import think_cycle
from hearth.proofs.key_types import Ed25519PrivateKey
from hearth.proofs.think_cycle import STRAND_NAME, THOUGHT_FORMAT, Prompt

from .errors import HearthError

if TYPE_CHECKING:  # the SDKs load on first use: importing them cost every hearth command
    # about a second and 75 MB, whether or not it ever talks to a provider
    import anthropic
    import openai
from .runtimes import ROOT_KID, InboxMessage, Strand, ThoughtOpenError
from .sdk import HearthClient

__all__ = [
    "STRAND_NAME",
    "THOUGHT_FORMAT",
    "AnthropicProvider",
    "CommandProvider",
    "CycleFailed",
    "LoopStopped",
    "OpenAIProvider",
    "Prompt",
    "Provider",
    "ProviderError",
    "SelfRuntime",
    "SelfRuntimeConfig",
    "build_prompt",
    "prompt_text",
    "thought_plaintext",
]

log = logging.getLogger("hearth.self_runtime")

_MAX_STRAND_PAGES = 50

# Refusals that no retry cures: the loop stops instead of backing off for ever.
_FATAL_CODES = frozenset(
    {
        "not_self_custody",
        "runtime_deleted",
        "runtime_unbound",
        "invalid_runtime_state",
        "unauthorized",
    }
)

Outcome = Literal["idle", "done", "failed"]


# ---- the prompt ---------------------------------------------------------------------------


def thought_plaintext(message: InboxMessage, reply: str, provider: str, model: str | None) -> bytes:
    """What a cycle stores (sealed), in the format the hosted loop writes too."""
    return think_cycle.thought_plaintext(
        in_reply_to=message.id,
        sender=message.sender,
        message=message.body,
        reply=reply,
        provider=provider,
        model=model,
    )


def build_prompt(wake_markdown: str, history: Sequence[bytes], message: InboxMessage) -> Prompt:
    return think_cycle.build_prompt(wake_markdown, history, message.sender, message.body)


def prompt_text(prompt: Prompt) -> str:
    """The prompt as one text, for a ``--command`` provider's stdin: the system text, then each
    turn under a ``### user`` or ``### assistant`` line; the last turn is the message."""
    parts = [prompt.system.rstrip("\n"), ""]
    for role, text in prompt.turns:
        parts.extend([f"### {role}", text.rstrip("\n"), ""])
    return "\n".join(parts)


# ---- providers ------------------------------------------------------------------------------


class ProviderError(Exception):
    """The provider gave no usable reply; the text names the provider and the error's type or
    status, never the key or the prompt."""


class Provider(Protocol):
    """What the loop calls: ``complete``; ``name`` and ``model`` are recorded in the thought."""

    @property
    def name(self) -> str: ...

    @property
    def model(self) -> str | None: ...

    def complete(self, prompt: Prompt) -> str: ...


@dataclass
class AnthropicProvider:
    """Anthropic's Messages API through the official SDK, with the user's own key."""

    model: str
    api_key: str = field(repr=False)
    base_url: str | None = None
    timeout: float = 60.0
    max_retries: int = 2
    max_tokens: int = 1024
    name: str = "anthropic"
    _client: anthropic.Anthropic | None = field(default=None, repr=False)

    def complete(self, prompt: Prompt) -> str:
        import anthropic  # noqa: PLC0415 - on first use (see the imports above)

        if self._client is None:
            self._client = anthropic.Anthropic(
                api_key=self.api_key,
                base_url=self.base_url,
                timeout=self.timeout,
                max_retries=self.max_retries,
            )
        try:
            answer = self._client.messages.create(
                model=self.model,
                max_tokens=self.max_tokens,
                system=prompt.system,
                messages=[{"role": role, "content": text} for role, text in prompt.turns],  # type: ignore[misc]
            )
        except anthropic.APIStatusError as exc:
            raise ProviderError(
                f"anthropic answered HTTP {exc.status_code} ({type(exc).__name__})"
            ) from None
        except anthropic.APIError as exc:
            raise ProviderError(f"anthropic could not be reached ({type(exc).__name__})") from None
        text = "".join(block.text for block in answer.content if block.type == "text")
        if not text:
            raise ProviderError("anthropic answered no text")
        return text

    def close(self) -> None:
        if self._client is not None:
            self._client.close()


@dataclass
class OpenAIProvider:
    """OpenAI's Chat Completions API through the official SDK, with the user's own key."""

    model: str
    api_key: str = field(repr=False)
    base_url: str | None = None
    timeout: float = 60.0
    max_retries: int = 2
    max_tokens: int = 1024
    name: str = "openai"
    _client: openai.OpenAI | None = field(default=None, repr=False)

    def complete(self, prompt: Prompt) -> str:
        import openai  # noqa: PLC0415 - on first use (see the imports above)

        if self._client is None:
            self._client = openai.OpenAI(
                api_key=self.api_key,
                base_url=self.base_url,
                timeout=self.timeout,
                max_retries=self.max_retries,
            )
        messages: list[Any] = [{"role": "system", "content": prompt.system}]
        messages.extend({"role": role, "content": text} for role, text in prompt.turns)
        try:
            completion = self._client.chat.completions.create(
                model=self.model, messages=messages, max_completion_tokens=self.max_tokens
            )
        except openai.APIStatusError as exc:
            raise ProviderError(
                f"openai answered HTTP {exc.status_code} ({type(exc).__name__})"
            ) from None
        except openai.APIError as exc:
            raise ProviderError(f"openai could not be reached ({type(exc).__name__})") from None
        if not completion.choices or not completion.choices[0].message.content:
            raise ProviderError("openai answered no text")
        return completion.choices[0].message.content

    def close(self) -> None:
        if self._client is not None:
            self._client.close()


@dataclass
class CommandProvider:
    """Any provider: a program given the prompt (:func:`prompt_text`) on stdin, whose stdout
    is the reply. A non-zero exit, a timeout or an empty reply is a failure; its stderr is not
    logged (it may quote the prompt)."""

    argv: Sequence[str]
    timeout: float = 300.0
    model: str | None = None
    name: str = "command"

    def complete(self, prompt: Prompt) -> str:
        program = self.argv[0] if self.argv else ""
        try:
            done = subprocess.run(
                list(self.argv),
                input=prompt_text(prompt).encode("utf-8"),
                capture_output=True,
                timeout=self.timeout,
                check=False,
            )
        except FileNotFoundError:
            raise ProviderError(f"the command {program!r} was not found") from None
        except subprocess.TimeoutExpired:
            raise ProviderError(f"the command timed out after {self.timeout:g} s") from None
        except OSError as exc:
            raise ProviderError(f"the command could not run ({type(exc).__name__})") from None
        if done.returncode != 0:
            raise ProviderError(f"the command exited with status {done.returncode}")
        reply = done.stdout.decode("utf-8", errors="replace").strip()
        if not reply:
            raise ProviderError("the command wrote no reply")
        return reply

    def close(self) -> None:
        return


# ---- the loop -------------------------------------------------------------------------------


class CycleFailed(Exception):
    """A cycle that did not complete: ``stage`` (``read``, ``custody``, ``provider``, ``store``,
    ``complete``) and a reason that carries no secret and no plaintext."""

    def __init__(self, stage: str, reason: str) -> None:
        super().__init__(f"{stage}: {reason}")
        self.stage = stage
        self.reason = reason


class LoopStopped(Exception):
    """The service refused the loop for good (the runtime is gone, not self, in error, not
    bound to an identity, or the bearer is refused): retrying cannot help."""


def _reason(exc: BaseException) -> str:
    """An error, worded for a log line: the service's code and status, or the type only."""
    if isinstance(exc, HearthError):
        return f"{exc.error} (HTTP {exc.status})"
    if isinstance(exc, ProviderError):
        return str(exc)
    return type(exc).__name__


def _fatal(exc: HearthError) -> bool:
    return exc.status in {401, 403, 404} or exc.error in _FATAL_CODES


@dataclass
class SelfRuntimeConfig:
    runtime_id: str
    k_master: bytes = field(repr=False)
    signing_key: Ed25519PrivateKey = field(repr=False)
    signing_key_id: str = ROOT_KID
    recent: int = 20
    poll_seconds: float = 2.0
    heartbeat_seconds: float = 30.0
    initial_backoff: float = 1.0
    max_backoff: float = 60.0


class SelfRuntime:
    """The user-side loop of one self runtime."""

    def __init__(
        self,
        client: HearthClient,
        config: SelfRuntimeConfig,
        provider: Provider,
        *,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.client = client
        self.config = config
        self.provider = provider
        self._sleep = sleep
        self._clock = clock
        self._next_heartbeat = 0.0
        self._strand: Strand | None = None
        self._identity_id: str | None = None
        self.processed = 0
        self.failed = 0

    # -- service calls, with the refusals that end the loop --

    def heartbeat(self) -> None:
        try:
            runtime = self.client.runtime_heartbeat(self.config.runtime_id)
        except HearthError as exc:
            if _fatal(exc):
                raise LoopStopped(f"heartbeat refused: {_reason(exc)}: {exc.message}") from None
            raise
        self._identity_id = runtime.identity_id
        self._next_heartbeat = self._clock() + self.config.heartbeat_seconds
        log.info("heartbeat status=%s", runtime.status)

    def _take(self) -> InboxMessage | None:
        try:
            return self.client.runtime_take(self.config.runtime_id)
        except HearthError as exc:
            if _fatal(exc):
                raise LoopStopped(f"take refused: {_reason(exc)}: {exc.message}") from None
            raise

    def _runtime_strand(self) -> Strand:
        """The runtime's strand: its oldest bound one (as the hosted loop chooses), made on the
        first cycle."""
        if self._strand is not None:
            return self._strand
        oldest: Strand | None = None
        cursor: str | None = None
        for _ in range(_MAX_STRAND_PAGES):
            page = self.client.strands(runtime_id=self.config.runtime_id, cursor=cursor, limit=200)
            if page.items:
                oldest = page.items[-1]
            cursor = page.next_cursor
            if cursor is None:
                break
        if oldest is None:
            assert self._identity_id is not None
            oldest = self.client.strand_create(
                self._identity_id, STRAND_NAME, runtime_id=self.config.runtime_id
            )
        self._strand = oldest
        return oldest

    # -- one cycle --

    def step(self) -> Outcome:
        """Heartbeat when due, then think about at most one message."""
        if self._identity_id is None or self._clock() >= self._next_heartbeat:
            self.heartbeat()
        message = self._take()
        if message is None:
            return "idle"
        started = self._clock()
        try:
            seq = self._think(message)
        except BaseException as exc:
            # Ctrl-C included: the message goes back before anything else happens.
            self._release(message)
            self.failed += 1
            if isinstance(exc, CycleFailed):
                log.warning(
                    "cycle failed message=%s stage=%s reason=%s",
                    message.id,
                    exc.stage,
                    exc.reason,
                )
                return "failed"
            if isinstance(exc, Exception):
                log.warning("cycle failed message=%s reason=%s", message.id, _reason(exc))
                return "failed"
            raise
        self.processed += 1
        log.info(
            "cycle done message=%s seq=%s ms=%.1f",
            message.id,
            seq,
            (self._clock() - started) * 1000,
        )
        return "done"

    def _release(self, message: InboxMessage) -> None:
        try:
            self.client.runtime_release(self.config.runtime_id, message.id)
        except (HearthError, httpx2.HTTPError) as exc:
            # The message stays taken by this runtime; a loop that cannot reach the service
            # cannot give it back. It is logged so that the user can release it later.
            log.error("release failed message=%s reason=%s", message.id, _reason(exc))

    def _think(self, message: InboxMessage) -> int:
        cfg = self.config
        try:
            strand = self._runtime_strand()
            recent = self.client.recent_thoughts(strand.id, k_master=cfg.k_master, count=cfg.recent)
            wake = self.client.wake("md", identity_id=message.identity_id)
        except ThoughtOpenError:
            raise CycleFailed("custody", "a recent thought does not open with K_master") from None
        except (HearthError, httpx2.HTTPError) as exc:
            raise CycleFailed("read", _reason(exc)) from None
        history = [t.plaintext for t in recent if t.plaintext is not None]
        for thought in recent:
            parsed = (
                think_cycle.parse_thought(thought.plaintext)
                if thought.plaintext is not None
                else None
            )
            if parsed is not None and parsed.get("in_reply_to") == message.id:
                # Stored by an earlier cycle that could not complete the message: done already.
                self._complete(message)
                return thought.seq
        prompt = build_prompt(wake, history, message)
        try:
            reply = self.provider.complete(prompt)
        except ProviderError as exc:
            raise CycleFailed("provider", str(exc)) from None
        plaintext = thought_plaintext(message, reply, self.provider.name, self.provider.model)
        try:
            written = self.client.thought_write(
                strand.id,
                plaintext,
                k_master=cfg.k_master,
                signing_key=cfg.signing_key,
                signing_key_id=cfg.signing_key_id,
            )
        except (HearthError, httpx2.HTTPError) as exc:
            raise CycleFailed("store", _reason(exc)) from None
        self._complete(message)
        return written.seq

    def _complete(self, message: InboxMessage) -> None:
        try:
            self.client.runtime_complete(self.config.runtime_id, message.id)
        except (HearthError, httpx2.HTTPError) as exc:
            # The thought is stored: the next cycle that takes this message finds it answered
            # among the recent thoughts and completes it without thinking again.
            raise CycleFailed("complete", _reason(exc)) from None

    # -- the loop --

    def run(self, *, once: bool = False) -> int:
        """Cycles until Ctrl-C (KeyboardInterrupt, which propagates) or :class:`LoopStopped`;
        with ``once``, a single cycle. Returns the number of failed cycles."""
        backoff = self.config.initial_backoff
        while True:
            try:
                outcome = self.step()
            except (HearthError, httpx2.HTTPError) as exc:
                # The heartbeat or the take failed (service unreachable, a 5xx): nothing taken.
                log.warning("service call failed reason=%s", _reason(exc))
                self.failed += 1
                outcome = "failed"
            if once:
                return self.failed
            if outcome == "failed":
                self._sleep(backoff)
                backoff = min(backoff * 2, self.config.max_backoff)
                continue
            backoff = self.config.initial_backoff
            if outcome == "idle":
                self._sleep(self.config.poll_seconds)
