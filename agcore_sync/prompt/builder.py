"""PromptBuilder: a system prompt assembled from titled sections.

A builder holds sections in the order they were first added and renders
them as markdown-style blocks::

    ## Role
    You are a careful research assistant.

    ## Instructions
    - Cite a source for every claim.
    - Say so when you do not know.

    ## Tools
    - search(query, limit?): Search the web.

Each section is ``## <title>``, a newline and its body; sections are
separated by one blank line; the result has no leading or trailing
whitespace. A section whose body is empty (after stripping whitespace) is
left out, and so is its title. Plain str content is used as is (braces
included); :class:`~agcore_sync.prompt.template.PromptTemplate` content is
rendered at :meth:`PromptBuilder.render` time.

This module does no I/O.
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from agcore_sync.llm.types import ToolDef
from agcore_sync.prompt.errors import PromptError
from agcore_sync.prompt.template import PromptTemplate, _merge, _quoted

__all__ = ["PromptBuilder", "Text", "Example"]

#: Content of a section: literal text, or a template rendered with the builder.
Text = Union[str, PromptTemplate]

#: An example: a text, or an ``(input, output)`` pair shown as ``Input:`` / ``Output:`` lines.
Example = Union[Text, Tuple[Text, Text]]

_HEADING = "## "

# Section kinds: how the parts are rendered.
_TEXT = "text"  # one Text, replaced by each call
_LIST = "list"  # Text items, one "- item" line each, extended by each call
_EXAMPLES = "examples"  # Example items, numbered "### Example n" blocks, extended by each call
_TOOLS = "tools"  # a registry (read at render time) or a tuple of ToolDef


class _Section:
    __slots__ = ("title", "kind", "parts")

    def __init__(self, title: str, kind: str, parts: List[Any]) -> None:
        self.title = title
        self.kind = kind
        self.parts = parts


class PromptBuilder:
    """Build a system prompt from ordered, titled sections.

    Sections appear in the order they were first added. Calling a method
    again for the same section keeps its place: text sections (:meth:`role`,
    :meth:`context`, :meth:`tool_guidance`, :meth:`output_format`,
    :meth:`section`, :meth:`tools`) are replaced, list sections
    (:meth:`instructions`, :meth:`examples`) grow. Sections are identified by
    title, so ``section("Role", ...)`` is the same section as ``role(...)``.
    Every method returns the builder, so calls chain.

    A builder can be passed as ``system_prompt`` to
    :class:`~agcore_sync.loop.cycle.LlmCycle` or
    :class:`~agcore_sync.agent.session.AgentSession`, which call
    :meth:`render` once, with no values: every template in it must be bound.

    Example::

        >>> address = PromptTemplate("Address the user as {name}.", name="Ada")
        >>> prompt = (PromptBuilder()
        ...           .role("You are a terse assistant.")
        ...           .context("")
        ...           .instructions("Answer in one sentence.", address))
        >>> print(prompt.render())
        ## Role
        You are a terse assistant.
        <BLANKLINE>
        ## Instructions
        - Answer in one sentence.
        - Address the user as Ada.

    A builder is mutable and not thread-safe; :meth:`copy` makes an
    independent one to vary.

    .. versionadded:: 0.1
    """

    def __init__(self) -> None:
        self._sections: List[_Section] = []

    def __repr__(self) -> str:
        return f"PromptBuilder(sections={[s.title for s in self._sections]!r})"

    # -- sections ---------------------------------------------------------

    def role(self, text: Text) -> PromptBuilder:
        """Set the "Role" section: who the model is.

        Returns:
            The builder.
        """
        return self._set("Role", _TEXT, [_text(text, "role")])

    def context(self, text: Text) -> PromptBuilder:
        """Set the "Context" section: what the model should know.

        Returns:
            The builder.
        """
        return self._set("Context", _TEXT, [_text(text, "context")])

    def instructions(self, *items: Text) -> PromptBuilder:
        """Add items to the "Instructions" section, one ``- item`` line each.

        Returns:
            The builder.
        """
        return self._extend("Instructions", _LIST, [_text(item, "an instruction") for item in items])

    def tool_guidance(self, text: Text) -> PromptBuilder:
        """Set the "Tool guidance" section: when and how to use the tools.

        Returns:
            The builder.
        """
        return self._set("Tool guidance", _TEXT, [_text(text, "tool guidance")])

    def examples(self, *examples: Example) -> PromptBuilder:
        """Add examples to the "Examples" section.

        Each example is a text, or an ``(input, output)`` pair rendered as
        ``Input: ...`` and ``Output: ...`` lines. Examples are numbered
        ``### Example 1``, ``### Example 2``... in the order added.

        Returns:
            The builder.
        """
        return self._extend("Examples", _EXAMPLES, [_example(example) for example in examples])

    def output_format(self, text: Text) -> PromptBuilder:
        """Set the "Output format" section: the shape of the answer.

        Returns:
            The builder.
        """
        return self._set("Output format", _TEXT, [_text(text, "output format")])

    def section(self, title: str, text: Text) -> PromptBuilder:
        """Set a section with any title (a custom section, or a standard one by its title).

        Args:
            title: the heading, one non-empty line.
            text: the body.

        Returns:
            The builder.

        Raises:
            ValueError: the title is empty or spans several lines.
        """
        return self._set(_title(title), _TEXT, [_text(text, "a section")])

    def tools(self, registry: Any, *, title: str = "Tools") -> PromptBuilder:
        """List tools in a section, one ``- name(arg, optional?): description`` line each.

        Argument names come from the tool's JSON Schema ``properties``, in
        order; an argument not in ``required`` is marked with ``?``.

        Args:
            registry: a :class:`~agcore_sync.tools.registry.ToolRegistry`
                (anything with ``definitions()``), read at :meth:`render`
                time so tools registered later are listed; or an iterable of
                :class:`~agcore_sync.llm.types.ToolDef` or tools (objects
                with ``definition()``), read now.
            title: the section's heading.

        Returns:
            The builder.

        Raises:
            TypeError: ``registry`` is none of these.
        """
        if not callable(getattr(registry, "definitions", None)):
            if not isinstance(registry, Iterable):
                raise TypeError(f"tools() takes a ToolRegistry or an iterable of ToolDef, "
                                f"not {type(registry).__name__}")
            registry = tuple(_tool_def(item) for item in registry)
        return self._set(_title(title), _TOOLS, [registry])

    # -- rendering --------------------------------------------------------

    @property
    def variables(self) -> Tuple[str, ...]:
        """The unbound variables of every template in the builder, in order of first use."""
        names: Dict[str, None] = {}
        for template in self._templates():
            names.update(dict.fromkeys(template.unbound))
        return tuple(names)

    def render(self, values: Optional[Mapping[str, Any]] = None, /, **kwargs: Any) -> str:
        """Return the system prompt text (see the module docstring for the format).

        Args:
            values: a mapping of values for the templates in the builder;
                keyword values win. Each template takes the values it uses
                (they override its bound ones).
            kwargs: values by name.

        Returns:
            The prompt; ``""`` when every section is empty.

        Raises:
            PromptError: templates have unbound variables with no value
                (``missing`` lists every one, across all sections), or a
                value is used by no template (``unknown``); or a template
                fails to render.
        """
        given = _merge(values, kwargs)
        templates = list(self._templates())
        used: Dict[str, None] = {}
        missing: Dict[str, None] = {}
        for template in templates:
            used.update(dict.fromkeys(template.variables))
            missing.update(dict.fromkeys(name for name in template.unbound if name not in given))
        unknown = tuple(name for name in given if name not in used)
        if missing or unknown:
            problems = []
            if missing:
                problems.append(f"no value for {_quoted(missing)} (pass them to render() or bind them in the "
                                f"templates)")
            if unknown:
                problems.append(f"{_quoted(unknown)} is used by no template in the builder")
            raise PromptError("prompt builder: " + "; ".join(problems), missing=tuple(missing), unknown=unknown)
        blocks = []
        for section in self._sections:
            body = _render_body(section, given)
            if body:
                blocks.append(f"{_HEADING}{section.title}\n{body}")
        return "\n\n".join(blocks)

    def copy(self) -> PromptBuilder:
        """Return an independent builder with the same sections."""
        new = PromptBuilder()
        new._sections = [_Section(s.title, s.kind, list(s.parts)) for s in self._sections]
        return new

    # -- internals --------------------------------------------------------

    def _find(self, title: str) -> Optional[_Section]:
        for section in self._sections:
            if section.title == title:
                return section
        return None

    def _set(self, title: str, kind: str, parts: List[Any]) -> PromptBuilder:
        section = self._find(title)
        if section is None:
            self._sections.append(_Section(title, kind, parts))
        else:
            section.kind, section.parts = kind, parts
        return self

    def _extend(self, title: str, kind: str, parts: List[Any]) -> PromptBuilder:
        section = self._find(title)
        if section is not None and section.kind == kind:
            section.parts.extend(parts)
            return self
        return self._set(title, kind, parts)

    def _templates(self) -> Iterable[PromptTemplate]:
        for section in self._sections:
            for part in section.parts:
                pieces = part if isinstance(part, tuple) and section.kind == _EXAMPLES else (part,)
                for piece in pieces:
                    if isinstance(piece, PromptTemplate):
                        yield piece


def _title(title: Any) -> str:
    if not isinstance(title, str):
        raise TypeError(f"a section title must be a str, not {type(title).__name__}")
    title = title.strip()
    if not title or "\n" in title:
        raise ValueError(f"a section title must be one non-empty line, got {title!r}")
    return title


def _text(text: Any, what: str) -> Text:
    if not isinstance(text, (str, PromptTemplate)):
        raise TypeError(f"{what} must be a str or a PromptTemplate, not {type(text).__name__}")
    return text


def _example(example: Any) -> Any:
    if isinstance(example, tuple):
        if len(example) != 2:
            raise TypeError(f"an example pair must be (input, output), got {len(example)} items")
        return (_text(example[0], "an example input"), _text(example[1], "an example output"))
    return _text(example, "an example")


def _tool_def(item: Any) -> ToolDef:
    if isinstance(item, ToolDef):
        return item
    definition = getattr(item, "definition", None)
    if callable(definition):
        return definition()
    raise TypeError(f"tools() takes ToolDef values or tools, not {type(item).__name__}")


def _fill(text: Text, given: Mapping[str, Any]) -> str:
    if isinstance(text, PromptTemplate):
        text = text.render(given, allow_extra=True)
    return text.strip()


def _render_body(section: _Section, given: Mapping[str, Any]) -> str:
    if section.kind == _TEXT:
        return _fill(section.parts[0], given)
    if section.kind == _LIST:
        items = (_fill(item, given) for item in section.parts)
        return "\n".join(f"- {item}" for item in items if item)
    if section.kind == _EXAMPLES:
        blocks = []
        for example in section.parts:
            if isinstance(example, tuple):
                text = f"Input: {_fill(example[0], given)}\nOutput: {_fill(example[1], given)}"
            else:
                text = _fill(example, given)
            if text:
                blocks.append(f"### Example {len(blocks) + 1}\n{text}")
        return "\n\n".join(blocks)
    source = section.parts[0]
    definitions: Sequence[ToolDef] = source if isinstance(source, tuple) else source.definitions()
    return "\n".join(_tool_line(definition) for definition in definitions)


def _tool_line(definition: ToolDef) -> str:
    schema = definition.parameters if isinstance(definition.parameters, Mapping) else {}
    properties = schema.get("properties") or {}
    required = set(schema.get("required") or ())
    arguments = ", ".join(name if name in required else f"{name}?" for name in properties)
    line = f"- {definition.name}({arguments})"
    description = " ".join((definition.description or "").split())
    return f"{line}: {description}" if description else line
