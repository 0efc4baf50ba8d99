"""FallbackProvider: try providers in order until one answers.

The rules, in the order a call meets them:

1. **Order.** The providers are tried in the order given, each with its own
   model (``request.model`` only fills in for a provider that has none), so
   the history goes to each in its own wire format: a different vendor
   works, as switching a session's provider does.
2. **Circuit.** With ``circuit=`` (a :class:`~agcore_sync.llm.circuit.CircuitBreaker`
   used as a template), each provider has its own breaker; a provider whose
   circuit is open is skipped without a request, its
   :class:`CircuitOpenError` noted as that attempt.
3. **When to fall back.** Only on an error of ``fall_back_on`` (by default
   429, 5xx, connection and timeout errors). Any other error (a 400, a 401,
   a parse error) is raised at once, the same object: it would fail on the
   next provider too, or it is a bug to see.
4. **Streams.** A stream fails over only while no event has reached the
   caller. Once its first event is yielded the stream is committed to that
   provider; a later failure is raised as it is (never a second answer
   spliced after a first one's text).
5. **The answer says who answered.** ``MessageResponse.model`` (and the
   stream's ``MessageStart.model``) is the answering provider's model, so
   usage and cost are counted per provider; with telemetry on, the chat
   span gets ``gen_ai.provider.name`` of that provider and
   ``agcore.fallback.index``, and one ``agcore.fallback`` event per failed
   attempt.
6. **All failed.** :class:`AllProvidersFailedError` lists every attempt in
   its message and its ``.errors``, in order. A single provider whose
   circuit is open raises that :class:`CircuitOpenError` itself.

Thread-safe when its providers are: it holds no per-call state.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, Type

import attrs

from agcore_sync import _check, _instrument
from agcore_sync.llm.circuit import CircuitBreaker
from agcore_sync.llm.cost import DEFAULT_PRICING, Pricing, PricingArg
from agcore_sync.llm.errors import (
    AllProvidersFailedError,
    CircuitOpenError,
    LlmConnectionError,
    LlmError,
    LlmTimeoutError,
    RateLimitError,
    ServerError,
)
from agcore_sync.llm.provider import LlmProvider
from agcore_sync.llm.types import MessageRequest, MessageResponse

if TYPE_CHECKING:  # pragma: no cover - the stream events load with the first stream
    from agcore_sync.llm.events import StreamEvent

__all__ = ["FallbackProvider", "DEFAULT_FALL_BACK_ON"]

logger = _instrument.get_logger("agcore_sync.llm.fallback")

#: The errors a :class:`FallbackProvider` falls back on by default: the
#: provider is busy or down, not the request wrong.
DEFAULT_FALL_BACK_ON: Tuple[Type[BaseException], ...] = (RateLimitError, ServerError, LlmConnectionError,
                                                         LlmTimeoutError)


class FallbackProvider(LlmProvider):
    """Providers tried in order until one answers (see the module docstring for the rules).

    Example::

        provider = FallbackProvider(
            [OpenAIProvider(model="gpt-4o-mini"), AnthropicProvider(model="claude-haiku-4-5")],
            circuit=CircuitBreaker(failure_threshold=5, reset_after=30.0),
        )

    Args:
        providers: the providers, first choice first (at least one).
        fall_back_on: the error classes that move on to the next provider.
        circuit: a breaker whose settings each provider's own breaker copies
            (None: no circuit breaking).

    Attributes:
        providers: the providers, as a tuple.
        circuits: each provider's breaker (same order), or None.
        model: the first provider's model.
        pricing: the providers' prices merged (first provider first), or
            None when none has its own.

    Raises:
        TypeError: an empty provider list, a non-provider, a ``fall_back_on``
            that is not a tuple of exception classes, or a ``circuit`` that
            is not a :class:`CircuitBreaker`.

    .. versionadded:: 0.2
    """

    def __init__(self, providers: Iterable[LlmProvider], *,
                 fall_back_on: Sequence[Type[BaseException]] = DEFAULT_FALL_BACK_ON,
                 circuit: Optional[CircuitBreaker] = None) -> None:
        if isinstance(providers, LlmProvider) or not isinstance(providers, Iterable):
            raise TypeError("FallbackProvider: providers must be a list of LlmProviders, "
                            f"got {type(providers).__name__}")
        providers = tuple(providers)
        if not providers:
            raise TypeError("FallbackProvider: providers must hold at least one LlmProvider, got an empty list")
        for index, provider in enumerate(providers):
            _check.instance("FallbackProvider", f"providers[{index}]", provider, LlmProvider,
                            "an LlmProvider such as OpenAIProvider(...)")
        if isinstance(fall_back_on, type):
            fall_back_on = (fall_back_on,)
        fall_back_on = tuple(fall_back_on)
        if not all(isinstance(cls, type) and issubclass(cls, Exception) for cls in fall_back_on):
            raise TypeError("FallbackProvider: fall_back_on must be a tuple of exception classes, "
                            f"got {fall_back_on!r}")
        _check.optional_instance("FallbackProvider", "circuit", circuit, CircuitBreaker, "a CircuitBreaker")
        self.providers: Tuple[LlmProvider, ...] = providers
        self.fall_back_on: Tuple[Type[BaseException], ...] = fall_back_on
        self.circuits: Optional[Tuple[CircuitBreaker, ...]] = None if circuit is None else tuple(
            circuit.copy(name=_name(i, p)) for i, p in enumerate(providers))
        self.model = providers[0].model
        self.pricing = _merged_pricing(providers)

    def __repr__(self) -> str:
        return f"FallbackProvider({list(self.providers)!r})"

    # -- calls ------------------------------------------------------------------

    def chat(self, request: MessageRequest) -> MessageResponse:
        """Ask each provider in turn; return the first answer.

        Raises:
            AllProvidersFailedError: every provider failed with a ``fall_back_on`` error.
            CircuitOpenError: the only provider's circuit is open.
            LlmError: an error not in ``fall_back_on``, as raised.
        """
        errors: List[LlmError] = []
        for index, provider in enumerate(self.providers):
            breaker = self._breaker(index)
            if not self._admit(breaker, index, errors):
                continue
            try:
                response = provider.chat(self._request_for(provider, request))
            except self.fall_back_on as exc:
                self._failed(breaker, index, exc, errors)
                continue
            except BaseException:
                if breaker is not None:
                    breaker.record_abandoned()
                raise
            if breaker is not None:
                breaker.record_success()
            self._answered(index)
            if not response.model and provider.model:
                response = attrs.evolve(response, model=provider.model)
            return response
        raise self._all_failed(errors)

    def chat_stream(self, request: MessageRequest) -> Iterator[StreamEvent]:
        """Stream from the first provider that gets to its first event.

        Raises:
            AllProvidersFailedError: every provider failed before its first event.
            CircuitOpenError: the only provider's circuit is open.
            LlmError: an error not in ``fall_back_on``, or any error after
                the first event, as raised.
        """
        return self._stream(request)

    def _stream(self, request: MessageRequest) -> Iterator[StreamEvent]:
        errors: List[LlmError] = []
        for index, provider in enumerate(self.providers):
            breaker = self._breaker(index)
            if not self._admit(breaker, index, errors):
                continue
            stream = provider.chat_stream(self._request_for(provider, request))
            try:
                first = next(stream)
            except StopIteration:
                first = None
            except self.fall_back_on as exc:
                _close(stream)
                self._failed(breaker, index, exc, errors)
                continue
            except BaseException:
                _close(stream)
                if breaker is not None:
                    breaker.record_abandoned()
                raise
            # Committed: the first event goes to the caller; no failover from here on.
            if breaker is not None:
                breaker.record_success()
            self._answered(index)
            try:
                if first is not None:
                    yield first
                    yield from stream
            except self.fall_back_on:
                if breaker is not None:
                    breaker.record_failure()
                raise
            finally:
                _close(stream)
            return
        raise self._all_failed(errors)

    def close(self) -> None:
        """Close every provider."""
        for provider in self.providers:
            provider.close()

    # -- steps ------------------------------------------------------------------

    def _breaker(self, index: int) -> Optional[CircuitBreaker]:
        return None if self.circuits is None else self.circuits[index]

    def _admit(self, breaker: Optional[CircuitBreaker], index: int, errors: List[LlmError]) -> bool:
        if breaker is None:
            return True
        try:
            breaker.before_call()
        except CircuitOpenError as exc:
            logger.info("skipping %s: its circuit is %s", _name(index, self.providers[index]), breaker.state)
            errors.append(exc)
            return False
        return True

    def _request_for(self, provider: LlmProvider, request: MessageRequest) -> MessageRequest:
        # Each provider answers with its own model; the request's model only fills a gap.
        if provider.model and request.model is not None and request.model != provider.model:
            return attrs.evolve(request, model=None)
        return request

    def _failed(self, breaker: Optional[CircuitBreaker], index: int, exc: BaseException,
                errors: List[LlmError]) -> None:
        if breaker is not None:
            breaker.record_failure()
        errors.append(exc)  # type: ignore[arg-type]
        last = index == len(self.providers) - 1
        logger.warning("%s failed with %s: %s%s", _name(index, self.providers[index]), type(exc).__name__, exc,
                       "" if last else "; trying the next provider")
        _instrument.on_fallback(exc, index)

    def _answered(self, index: int) -> None:
        _instrument.on_provider_answered(self.providers[index], index)

    def _all_failed(self, errors: List[LlmError]) -> LlmError:
        if len(self.providers) == 1 and len(errors) == 1 and isinstance(errors[0], CircuitOpenError):
            return errors[0]
        lines = "; ".join(f"{_name(i, p)}: {type(e).__name__}: {e}"
                          for i, (p, e) in enumerate(zip(self.providers, errors)))
        return AllProvidersFailedError(f"all {len(self.providers)} providers failed: {lines}", errors=errors)


def _name(index: int, provider: LlmProvider) -> str:
    return f"provider #{index} ({type(provider).__name__}, model {provider.model!r})"


def _close(stream: Iterator[Any]) -> None:
    close = getattr(stream, "close", None)
    if close is not None:
        close()


def _merged_pricing(providers: Sequence[LlmProvider]) -> PricingArg:
    """Return one table holding each provider's own prices (the first provider's win), or None."""
    own = [(p.model, getattr(p, "pricing", None)) for p in providers]
    if all(pricing is None for _, pricing in own):
        return None
    table: Dict[str, Pricing] = dict(DEFAULT_PRICING)
    for model, pricing in reversed(own):
        if isinstance(pricing, Pricing):
            if model:
                table[model] = pricing
        elif pricing is not None:
            table.update(pricing)
    return table
