"""The base of every content block, and the registry ``from_dict`` dispatches through.

Blocks register themselves by subclassing :class:`ContentBlock`; the text,
tool and thinking blocks live in :mod:`agcore_sync.llm.types`, images and
documents in :mod:`agcore_sync.llm.media`. Both import this module, never
each other's.
"""

from __future__ import annotations

from typing import Any, ClassVar, Dict

import attrs

__all__ = ["ContentBlock"]


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
        block_cls = ContentBlock._registry.get(data.get("type", ""))
        if block_cls is None or (cls is not ContentBlock and block_cls is not cls):
            raise ValueError(f"unknown content block type: {data.get('type')!r}")
        fields = {k: v for k, v in data.items() if k != "type"}
        return block_cls(**fields)
