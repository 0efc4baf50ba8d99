"""The base of every content block, and the registry ``from_dict`` dispatches through.

Blocks register themselves by subclassing :class:`ContentBlock`; the text,
tool and thinking blocks live in :mod:`agcore_sync.llm.types`, images and
documents in :mod:`agcore_sync.llm.media`. Both import this module, never
each other's; :mod:`~agcore_sync.llm.media` loads when a program first
uses an image or document (or ``from_dict`` first meets one), so a program
without them does not pay for it.
"""

from __future__ import annotations

import importlib
from typing import Any, ClassVar, Dict

import attrs

__all__ = ["ContentBlock"]

# Block tags whose classes live in a module that is loaded on first use (so
# that a program without images or documents never loads it): tag -> module.
_LAZY_BLOCKS: Dict[str, str] = {
    "image": "agcore_sync.llm.media",
    "document": "agcore_sync.llm.media",
}


class ContentBlock:
    """Base class of the content blocks a :class:`Message` holds.

    ``ContentBlock.from_dict(d)`` dispatches on ``d["type"]`` through the
    registry of known block classes.
    """

    __slots__ = ()

    #: The ``type`` tag written by ``to_dict()``.
    type: ClassVar[str] = ""
    _registry: ClassVar[Dict[str, type]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        ContentBlock._registry[cls.type] = cls

    def to_dict(self) -> Dict[str, Any]:
        """Return a JSON-ready dict with a ``type`` tag."""
        data = attrs.asdict(self, recurse=False)  # type: ignore[arg-type]
        return {"type": self.type, **data}

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> ContentBlock:
        """Build the block that ``data["type"]`` names.

        Raises:
            ValueError: the type tag is missing or unknown.
        """
        tag = data.get("type", "")
        block_cls = ContentBlock._registry.get(tag)
        if block_cls is None and tag in _LAZY_BLOCKS:
            # Defined in a module not loaded yet: loading it registers them.
            importlib.import_module(_LAZY_BLOCKS[tag])
            block_cls = ContentBlock._registry.get(tag)
        if block_cls is None or (cls is not ContentBlock and block_cls is not cls):
            raise ValueError(f"unknown content block type: {data.get('type')!r}")
        fields = {k: v for k, v in data.items() if k != "type"}
        return block_cls(**fields)
