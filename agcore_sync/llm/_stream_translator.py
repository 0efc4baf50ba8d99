"""The interface between the HTTP stream driver and a provider's wire format.

A :class:`StreamTranslator` is pure: SSE events in, stream events out, no
I/O and no reference to the provider that made it. The driver
(:meth:`HttpProvider._stream <agcore_sync.llm._http_provider.HttpProvider._stream>`)
owns the HTTP side: it posts, reads the body, feeds each SSE event to the
translator, yields what comes out, gives the connection back once
:attr:`StreamTranslator.done` is set, and on a failure yields the usage the
translator has not reported yet (:meth:`StreamTranslator.unreported_usage`)
before it raises, because those tokens were billed.
"""

from __future__ import annotations

import abc
from typing import Any, Dict, List, Optional

from agcore_sync._http import peer_json
from agcore_sync._http.masking import Masker
from agcore_sync._http.sse import SseEvent
from agcore_sync.llm.cost import PricingArg, cost_usd
from agcore_sync.llm.errors import ResponseParseError
from agcore_sync.llm.events import CostUpdate, StreamEvent
from agcore_sync.llm.types import Usage

__all__ = ["StreamTranslator"]


class StreamTranslator(abc.ABC):
    """Turns one response's SSE events into :class:`~agcore_sync.llm.events.StreamEvent` values.

    One translator per response; not thread-safe.

    Args:
        model: the model asked for (used until the server names its own).
        pricing: prices for :class:`~agcore_sync.llm.events.CostUpdate`
            (see :mod:`agcore_sync.llm.cost`).
        masker: hides the API key in every error this translator raises.
    """

    #: Name used in error messages.
    provider_name = "provider"

    def __init__(self, model: str, *, pricing: PricingArg, masker: Masker) -> None:
        #: The model the server named (from its first event), else the one asked for.
        self.model = model
        #: True once the end marker arrived: the body is complete.
        self.done = False
        self._pricing = pricing
        self._masker = masker

    @abc.abstractmethod
    def feed(self, event: SseEvent) -> List[StreamEvent]:
        """Translate one SSE event; the end marker sets :attr:`done`.

        Raises:
            LlmError: an error the server reported in the stream (typed), or
                an event that is not what the API documents
                (:class:`~agcore_sync.llm.errors.ResponseParseError`).
        """

    @abc.abstractmethod
    def unreported_usage(self) -> Optional[Usage]:
        """Return the usage the server reported that no ``CostUpdate`` carried yet, or None."""

    def cost_update(self, usage: Usage) -> CostUpdate:
        """Return the ``CostUpdate`` for ``usage``, priced for :attr:`model`."""
        return CostUpdate(usage, cost_usd(usage, self.model, self._pricing))

    def _decode(self, data: str) -> Dict[str, Any]:
        """Parse one event's data as a JSON object, or raise ``ResponseParseError``."""
        try:
            value = peer_json.loads(data, allow_constants=True)
        except ValueError as exc:
            raise ResponseParseError(f"{self.provider_name} sent a stream chunk that is not JSON ({exc})",
                                     body=self._masker.text(data[:1000])) from None
        if not isinstance(value, dict):
            raise ResponseParseError(f"{self.provider_name} sent a stream chunk that is not a JSON object",
                                     body=self._masker.text(data[:1000]))
        return value
