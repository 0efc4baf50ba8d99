"""The provider interface: what every model backend implements.

Its errors live in :mod:`agcore_sync.llm.errors`.
"""

from __future__ import annotations

import abc
from typing import TYPE_CHECKING, Iterator, Optional

from agcore_sync.llm.types import MessageRequest, MessageResponse

if TYPE_CHECKING:  # pragma: no cover - the stream events load with the first stream
    from agcore_sync.llm.events import StreamEvent

__all__ = ["LlmProvider"]


class LlmProvider(abc.ABC):
    """A language model behind some API.

    Implementations translate :class:`MessageRequest` to their wire format and
    the answer back. They raise only :class:`LlmError` subclasses; no
    ``requests`` or ``OSError`` exception escapes.

    Attributes:
        model: the default model name, used when a request's ``model`` is None.
    """

    model: Optional[str] = None

    @abc.abstractmethod
    def chat(self, request: MessageRequest) -> MessageResponse:
        """Send ``request`` and return the whole response.

        Raises:
            LlmError: any failure, typed.
        """

    @abc.abstractmethod
    def chat_stream(self, request: MessageRequest) -> Iterator[StreamEvent]:
        """Send ``request`` and yield events as their bytes arrive.

        The result is a generator: closing it closes the HTTP response.

        Raises:
            LlmError: from the iterator, at the point of failure.
        """

    def close(self) -> None:  # noqa: B027 - optional hook, not abstract
        """Release pooled connections; the default does nothing."""
