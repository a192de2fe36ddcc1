"""How one call is written once and run by both clients.

A call is a generator (:data:`Call`): it builds each request it needs, ``yield``\\ s it, receives
the answer, and ``return``\\ s the parsed result. It never does I/O itself, so the same code is
run by :class:`SyncRunner` (``httpx2.Client``, :class:`~hearth.client.HearthClient`) and by
:class:`AsyncRunner` (``httpx2.AsyncClient``, :class:`~hearth.client.AsyncHearthClient`). A call
that needs several requests (a root proof reads the authority first and re-signs once when its
sequence is stale) is still one generator.

``@op`` makes such a generator a method of both clients: on a sync client it returns the result,
on an async client it is a coroutine function. Inside another call, reach the generator itself
with ``Family.method.gen(self, ...)`` and ``yield from`` it. :class:`paged` turns a listing that
takes a ``cursor`` and answers a page (``items``, ``next_cursor``) into an iterator over every
item, sync or async.

Retries: a GET that fails on the way (no connection, the connection dropped, no answer to
read) is sent again, at most :data:`GET_ATTEMPTS` times in all with a short pause: a read is
safe to repeat. Nothing else is ever resent here: a POST, PUT, PATCH or DELETE may spend credits
or change state, and whether the lost one happened is for the caller to find out (wall 2).
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import time
from collections.abc import AsyncIterator, Callable, Coroutine, Generator, Iterator
from typing import Any, Concatenate, Generic, ParamSpec, Protocol, TypeVar, overload

import httpx2

__all__ = ["GET_ATTEMPTS", "AsyncRunner", "Call", "SyncRunner", "op", "paged"]

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)
I_co = TypeVar("I_co", covariant=True)
P = ParamSpec("P")

Call = Generator[httpx2.Request, httpx2.Response, T]

# Three tries of a GET in all, pausing 0.2 s then 0.4 s: enough to ride out a restart of the
# service or a dropped keep-alive connection, short enough that an outage is reported quickly.
GET_ATTEMPTS = 3
_PAUSE = 0.2
# The failures where the request was not answered, so that repeating a read is harmless. A read
# timeout is not among them: the service is slow, not gone, and a retry would triple the wait.
_RETRIED = (
    httpx2.ConnectError,
    httpx2.ConnectTimeout,
    httpx2.ReadError,
    httpx2.WriteError,
    httpx2.RemoteProtocolError,
)


def _public_signature(gen: Callable[..., Any]) -> inspect.Signature:
    """The generator's signature as a caller sees the method: without ``self``, and without the
    generator's return annotation (the clients answer the parsed value or a coroutine of it)."""
    signature = inspect.signature(gen)
    parameters = list(signature.parameters.values())[1:]
    return signature.replace(parameters=parameters, return_annotation=inspect.Signature.empty)


class SyncRunner:
    """Runs calls on an ``httpx2.Client``."""

    _http: httpx2.Client

    def _transmit(self, request: httpx2.Request) -> httpx2.Response:
        attempt = 1
        while True:
            try:
                return self._http.send(request)
            except _RETRIED:
                if request.method != "GET" or attempt >= GET_ATTEMPTS:
                    raise
            time.sleep(_PAUSE * attempt)
            attempt += 1

    def _run(self, call: Call[T]) -> T:
        try:
            request = next(call)
            while True:
                request = call.send(self._transmit(request))
        except StopIteration as done:
            result: T = done.value
            return result
        finally:
            call.close()


class AsyncRunner:
    """Runs calls on an ``httpx2.AsyncClient``."""

    _http: httpx2.AsyncClient

    async def _transmit(self, request: httpx2.Request) -> httpx2.Response:
        attempt = 1
        while True:
            try:
                return await self._http.send(request)
            except _RETRIED:
                if request.method != "GET" or attempt >= GET_ATTEMPTS:
                    raise
            await asyncio.sleep(_PAUSE * attempt)
            attempt += 1

    async def _run(self, call: Call[T]) -> T:
        try:
            request = next(call)
            while True:
                request = call.send(await self._transmit(request))
        except StopIteration as done:
            result: T = done.value
            return result
        finally:
            call.close()


class op(Generic[P, T_co]):
    """A call method of both clients (see the module's docstring)."""

    def __init__(self, gen: Callable[Concatenate[Any, P], Call[T_co]]) -> None:
        self.gen = gen
        self.__doc__ = gen.__doc__
        self.signature = _public_signature(gen)

    # Called through the class, as a plain method is: ``HearthClient.memory(client, id)``.
    @overload
    def __call__(
        self, obj: AsyncRunner, /, *args: P.args, **kwargs: P.kwargs
    ) -> Coroutine[Any, Any, T_co]: ...

    @overload
    def __call__(self, obj: SyncRunner, /, *args: P.args, **kwargs: P.kwargs) -> T_co: ...

    def __call__(self, obj: object, /, *args: Any, **kwargs: Any) -> Any:
        # ``obj`` is either runner; __get__ tells them apart at run time, as its overloads do.
        bound: Callable[..., Any] = self.__get__(obj, type(obj))  # type: ignore[call-overload]
        return bound(*args, **kwargs)

    @overload
    def __get__(self, obj: None, owner: type) -> op[P, T_co]: ...

    @overload
    def __get__(self, obj: AsyncRunner, owner: type) -> Callable[P, Coroutine[Any, Any, T_co]]: ...

    @overload
    def __get__(self, obj: SyncRunner, owner: type) -> Callable[P, T_co]: ...

    def __get__(self, obj: object, owner: type) -> Any:
        if obj is None:
            return self
        gen = self.gen
        if isinstance(obj, AsyncRunner):
            runner = obj

            async def run_async(*args: Any, **kwargs: Any) -> Any:
                return await runner._run(gen(runner, *args, **kwargs))

            bound: Callable[..., Any] = run_async
        elif isinstance(obj, SyncRunner):
            sync_runner = obj

            def run_sync(*args: Any, **kwargs: Any) -> Any:
                return sync_runner._run(gen(sync_runner, *args, **kwargs))

            bound = run_sync
        else:
            raise TypeError(f"{type(obj).__name__} runs no calls")
        functools.update_wrapper(bound, gen)
        bound.__signature__ = self.signature  # type: ignore[attr-defined]
        return bound


class _Page(Protocol[I_co]):
    @property
    def items(self) -> tuple[I_co, ...]: ...


class paged(Generic[P, I_co]):
    """Every item of a cursor-paged listing, page after page: ``for item in
    client.iter_memories(tier="episodic")`` (``async for`` on the async client). The arguments are
    the listing's; ``cursor`` starts from a page already known, ``limit`` is the page size.

    ``cursor`` names the listing's cursor parameter and ``following`` the page's field holding
    the next one (None or empty: the last page); thoughts page by ``after_seq``."""

    def __init__(
        self,
        listing: op[P, _Page[I_co]],
        *,
        cursor: str = "cursor",
        following: str = "next_cursor",
    ) -> None:
        self.listing = listing
        self.cursor = cursor
        self.following = following
        self.signature = listing.signature
        self.name = "iter"

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def _named(self, bound: Callable[..., Any]) -> Callable[..., Any]:
        functools.update_wrapper(bound, self.listing.gen)
        bound.__name__ = bound.__qualname__ = self.name
        bound.__doc__ = f"Every item of :meth:`{self.listing.gen.__name__}`, page after page."
        bound.__signature__ = self.signature  # type: ignore[attr-defined]
        return bound

    def pages(
        self, runner: object, args: Any, kwargs: Any
    ) -> Generator[Call[_Page[I_co]], _Page[I_co], None]:
        """The call for each page in turn; the caller runs it and sends the page back in."""
        while True:
            page: _Page[I_co] = yield self.listing.gen(runner, *args, **kwargs)
            following = getattr(page, self.following)
            # An empty page ends the walk even if it names another: a service that answered
            # a cursor forever would otherwise keep the caller looping.
            if following is None or following == "" or not page.items:
                return
            kwargs[self.cursor] = following

    @overload
    def __get__(self, obj: None, owner: type) -> paged[P, I_co]: ...

    @overload
    def __get__(self, obj: AsyncRunner, owner: type) -> Callable[P, AsyncIterator[I_co]]: ...

    @overload
    def __get__(self, obj: SyncRunner, owner: type) -> Callable[P, Iterator[I_co]]: ...

    def __get__(self, obj: object, owner: type) -> Any:
        if obj is None:
            return self
        if isinstance(obj, AsyncRunner):
            runner = obj

            async def iterate_async(*args: Any, **kwargs: Any) -> AsyncIterator[I_co]:
                steps = self.pages(runner, args, dict(kwargs))
                call = next(steps)
                while True:
                    page = await runner._run(call)
                    for item in page.items:
                        yield item
                    try:
                        call = steps.send(page)
                    except StopIteration:
                        return

            bound: Callable[..., Any] = iterate_async
        elif isinstance(obj, SyncRunner):
            sync_runner = obj

            def iterate(*args: Any, **kwargs: Any) -> Iterator[I_co]:
                steps = self.pages(sync_runner, args, dict(kwargs))
                call = next(steps)
                while True:
                    page = sync_runner._run(call)
                    yield from page.items
                    try:
                        call = steps.send(page)
                    except StopIteration:
                        return

            bound = iterate
        else:
            raise TypeError(f"{type(obj).__name__} runs no calls")
        return self._named(bound)
