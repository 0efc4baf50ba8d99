"""The resources, resource templates and prompts an :class:`McpServer` offers, as registered by its decorators."""

from __future__ import annotations

import inspect
import re
from typing import Any, Callable, Dict, List, Optional

import attrs

from agcore_sync.llm._docstring import parse_docstring

__all__ = ["ResourceDef", "PromptDef", "resource_def", "prompt_def"]

_VARIABLE = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


@attrs.frozen(kw_only=True)
class ResourceDef:
    """A resource (``pattern`` None) or a resource template, and the function that reads it."""

    uri: str
    name: str
    description: Optional[str]
    mime_type: Optional[str]
    func: Callable[..., Any]
    pattern: Optional[re.Pattern[str]] = None

    @property
    def is_template(self) -> bool:
        """True for a template (a ``{var}`` in the uri)."""
        return self.pattern is not None

    def listing(self) -> Dict[str, Any]:
        """Return the entry of ``resources/list`` or ``resources/templates/list``."""
        entry: Dict[str, Any] = {"uriTemplate" if self.is_template else "uri": self.uri, "name": self.name}
        if self.description:
            entry["description"] = self.description
        if self.mime_type:
            entry["mimeType"] = self.mime_type
        return entry

    def match(self, uri: str) -> Optional[Dict[str, str]]:
        """Return the template's variables for ``uri``, or None if it does not match."""
        if self.pattern is None:
            return {} if uri == self.uri else None
        found = self.pattern.fullmatch(uri)
        return found.groupdict() if found else None


def resource_def(uri: str, func: Callable[..., Any], name: Optional[str], description: Optional[str],
                 mime_type: Optional[str]) -> ResourceDef:
    """Describe ``func`` as the resource (or template) at ``uri``.

    Raises:
        TypeError: ``uri`` is not a non-empty str.
    """
    if not isinstance(uri, str) or not uri:
        raise TypeError(f"McpServer.resource: uri must be a non-empty str, got {uri!r}")
    doc = parse_docstring(inspect.getdoc(func))
    pattern = None
    if _VARIABLE.search(uri):
        parts, last = [], 0
        for found in _VARIABLE.finditer(uri):
            parts.append(re.escape(uri[last:found.start()]))
            parts.append(f"(?P<{found.group(1)}>[^/]+)")
            last = found.end()
        parts.append(re.escape(uri[last:]))
        pattern = re.compile("".join(parts))
    return ResourceDef(uri=uri, name=name or getattr(func, "__name__", uri), description=description or doc.summary
                       or None, mime_type=mime_type, func=func, pattern=pattern)


@attrs.frozen(kw_only=True)
class PromptDef:
    """A prompt: its name, description, arguments and the function that renders it."""

    name: str
    description: Optional[str]
    arguments: List[Dict[str, Any]]
    func: Callable[..., Any]

    def listing(self) -> Dict[str, Any]:
        """Return the entry of ``prompts/list``."""
        entry: Dict[str, Any] = {"name": self.name, "arguments": self.arguments}
        if self.description:
            entry["description"] = self.description
        return entry

    def missing(self, arguments: Dict[str, Any]) -> List[str]:
        """Return the required arguments ``arguments`` lacks."""
        return [a["name"] for a in self.arguments if a.get("required") and a["name"] not in arguments]

    def unknown(self, arguments: Dict[str, Any]) -> List[str]:
        """Return the names in ``arguments`` the prompt does not take."""
        known = {a["name"] for a in self.arguments}
        return [key for key in arguments if key not in known]


def prompt_def(func: Callable[..., Any], name: Optional[str], description: Optional[str]) -> PromptDef:
    """Describe ``func`` as a prompt: each parameter an argument, required unless it has a default."""
    doc = parse_docstring(inspect.getdoc(func))
    arguments = []
    for param in inspect.signature(func).parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise TypeError(f"McpServer.prompt: {func.__qualname__} cannot take *args or **kwargs")
        argument: Dict[str, Any] = {"name": param.name, "required": param.default is param.empty}
        if doc.params.get(param.name):
            argument["description"] = doc.params[param.name]
        arguments.append(argument)
    return PromptDef(name=name or func.__name__, description=description or doc.summary or None,
                     arguments=arguments, func=func)
