"""The hosted loop's LLM providers, through their official SDKs (docs/orchestrator.md, "LLM").

Only the two hosted providers (``services.runtimes.HOSTED_PROVIDERS``): Anthropic's Messages API
(``anthropic.AsyncAnthropic``) and OpenAI's Chat Completions API (``openai.AsyncOpenAI``). The
base URL of each comes from settings (``llm_anthropic_base_url``, ``llm_openai_base_url``;
unset, the SDK's own default), which is how tests point them at a local fake server. The api
key comes from the project's vault (the secret named by the runtime's ``llm.vault_key``).

Clients are cached per (provider, key digest): an SDK client owns a connection pool, and a
worker running many cycles against one provider reuses it. Errors are :class:`ProviderError`
with a reason that names the provider, the HTTP status and the SDK's error type, never the key.
"""

from __future__ import annotations

import hashlib
from typing import Any

import anthropic
import openai

from hearth.proofs.think_cycle import Prompt

from ..settings import Settings

PROVIDERS = ("anthropic", "openai")


class ProviderError(Exception):
    """The provider did not answer a usable reply."""


class Providers:
    """SDK clients of one worker, and one call per think cycle."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._clients: dict[tuple[str, str], Any] = {}

    def _client(self, provider: str, api_key: str) -> Any:
        slot = (provider, hashlib.sha256(api_key.encode("utf-8")).hexdigest())
        client = self._clients.get(slot)
        if client is not None:
            return client
        s = self.settings
        if provider == "anthropic":
            client = anthropic.AsyncAnthropic(
                api_key=api_key,
                base_url=s.llm_anthropic_base_url,
                timeout=s.llm_timeout_seconds,
                max_retries=s.llm_max_retries,
            )
        elif provider == "openai":
            client = openai.AsyncOpenAI(
                api_key=api_key,
                base_url=s.llm_openai_base_url,
                timeout=s.llm_timeout_seconds,
                max_retries=s.llm_max_retries,
            )
        else:
            raise ProviderError(f"{provider!r} is not a hosted provider ({', '.join(PROVIDERS)})")
        self._clients[slot] = client
        return client

    async def complete(self, provider: str, model: str, api_key: str, prompt: Prompt) -> str:
        """The model's reply text to ``prompt``."""
        client = self._client(provider, api_key)
        try:
            if provider == "anthropic":
                return await _anthropic(client, model, prompt, self.settings.llm_max_tokens)
            return await _openai(client, model, prompt, self.settings.llm_max_tokens)
        except (anthropic.APIStatusError, openai.APIStatusError) as exc:
            raise ProviderError(
                f"{provider} answered HTTP {exc.status_code} ({type(exc).__name__})"
            ) from None
        except (anthropic.APIError, openai.APIError) as exc:
            raise ProviderError(f"{provider} could not be reached ({type(exc).__name__})") from None

    async def aclose(self) -> None:
        clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            await client.close()


async def _anthropic(
    client: anthropic.AsyncAnthropic, model: str, prompt: Prompt, max_tokens: int
) -> str:
    message = await client.messages.create(
        model=model,
        max_tokens=max_tokens,
        system=prompt.system,
        messages=[{"role": role, "content": text} for role, text in prompt.turns],  # type: ignore[misc]
    )
    text = "".join(block.text for block in message.content if block.type == "text")
    if not text:
        raise ProviderError("anthropic answered no text")
    return text


async def _openai(client: openai.AsyncOpenAI, model: str, prompt: Prompt, max_tokens: int) -> str:
    messages: list[Any] = [{"role": "system", "content": prompt.system}]
    messages.extend({"role": role, "content": text} for role, text in prompt.turns)
    completion = await client.chat.completions.create(
        model=model, messages=messages, max_completion_tokens=max_tokens
    )
    if not completion.choices or not completion.choices[0].message.content:
        raise ProviderError("openai answered no text")
    return completion.choices[0].message.content


__all__ = ["PROVIDERS", "Prompt", "ProviderError", "Providers"]
