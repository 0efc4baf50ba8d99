"""The one error of the prompt layer.

Tree (under :class:`~agcore_sync.errors.AgcoreError`)::

    PromptError     a template, builder or bundle cannot be built or rendered

Every ``PromptError`` is a developer mistake (a bad template, a missing value,
a malformed bundle file), never a run failure: nothing was sent to a model.
Its facts are attributes, so callers never parse the message.
"""

from __future__ import annotations

from typing import Iterable, Optional, Tuple

from agcore_sync.errors import AgcoreError

__all__ = ["PromptError"]


class PromptError(AgcoreError):
    """A prompt template, builder or bundle is invalid or cannot be rendered.

    Args:
        message: what failed and what to do next.
        missing: variables that had no value at render time.
        unknown: values given for names the template does not use.
        path: for a bundle, the JSON path of the bad field (for example
            ``"templates.greeting.text"``; ``""`` is the whole document).
        source: for a bundle loaded from a file, the file's path.
        template: for a bundle, the name of the template concerned.

    Attributes:
        message: the message given.
        missing: a tuple of names, in the template's order (empty if none).
        unknown: a tuple of names, in the order given (empty if none).
        path: the JSON path, or None when the error is not about a field.
        source: the file, or None.
        template: the bundle template's name, or None.

    .. versionadded:: 0.1
    """

    def __init__(
        self,
        message: str,
        *,
        missing: Iterable[str] = (),
        unknown: Iterable[str] = (),
        path: Optional[str] = None,
        source: Optional[str] = None,
        template: Optional[str] = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.missing: Tuple[str, ...] = tuple(missing)
        self.unknown: Tuple[str, ...] = tuple(unknown)
        self.path = path
        self.source = source
        self.template = template
