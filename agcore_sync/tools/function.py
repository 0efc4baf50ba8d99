"""FunctionTool and the ``@tool`` decorator: a plain Python function as a tool.

Everything is worked out once, when the function is decorated: the JSON
Schema from its type hints (see ``agcore_sync.tools._schema`` for the
table of hints), the descriptions from its docstring, and the converters that
turn JSON arguments back into Enum members and attrs instances. A mistake
there (``*args``, a missing annotation, a type JSON cannot carry) raises
:class:`TypeError` at once, naming the function and the parameter: it is the
developer's to fix, not the model's, so it is no :class:`ToolError`.
"""

from __future__ import annotations

import collections.abc
import inspect
import re
import sys
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Tuple, TypeVar, Union, overload

import attrs

from agcore_sync import _instrument
from agcore_sync._values import value_methods
from agcore_sync.llm._docstring import parse_docstring
from agcore_sync.llm._schema_from_type import SchemaBuilder, with_details
from agcore_sync.tools.base import BaseTool
from agcore_sync.tools.permission import Permission

__all__ = ["FunctionTool", "tool"]

logger = _instrument.get_logger(__name__)

_F = TypeVar("_F", bound=Callable[..., Any])

#: Tool names both OpenAI and Anthropic accept.
_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


class FunctionTool(BaseTool):
    """A Python function exposed as a tool; usually made by :func:`tool`.

    The tool is still the function: calling it calls the function.
    :meth:`execute` takes the model's JSON arguments, turns Enum and attrs
    values (nested ones too) into their Python types and calls the function
    with keyword arguments (positional-only parameters positionally).

    Example::

        >>> @tool
        ... def add(a: int, b: int = 0) -> int:
        ...     '''Add two integers.
        ...
        ...     Args:
        ...         a: the first term.
        ...         b: the second term.
        ...     '''
        ...     return a + b
        >>> add.name, add.description
        ('add', 'Add two integers.')
        >>> add.parameters["properties"]["b"]
        {'type': 'integer', 'description': 'the second term.', 'default': 0}
        >>> add.parameters["required"]
        ['a']
        >>> add.execute({"a": 2, "b": 3}), add(2, 3)
        (5, 5)

    Args:
        func: the function. Every parameter needs a type annotation the
            schema can express; ``*args`` and ``**kwargs`` are refused.
        name: the tool's name; the function's ``__name__`` by default.
        description: what the model is told the tool does; the docstring's
            first paragraph by default.
        permissions: what the tool needs: :class:`Permission` values or
            their names (one alone, or several), kept in
            ``required_permissions`` as a tuple of Permission.
        localns: extra names for resolving string annotations; :func:`tool`
            passes its caller's locals, so classes local to a function work.
        requires_approval: every call waits for a human's decision (see
            :class:`~agcore_sync.tools.base.BaseTool`).

    Raises:
        TypeError: a parameter is ``*args``/``**kwargs``, has no annotation,
            or has a type JSON Schema cannot express; or a permission is
            neither a Permission nor a str.
        ValueError: the name is not 1 to 64 letters, digits, ``_`` or ``-``.

    .. versionadded:: 0.1
    """

    def __init__(
        self,
        func: Callable[..., Any],
        *,
        name: Optional[str] = None,
        description: Optional[str] = None,
        permissions: Union[Permission, str, Iterable[Union[Permission, str]]] = (),
        localns: Optional[Mapping[str, Any]] = None,
        requires_approval: bool = False,
    ) -> None:
        qualname = getattr(func, "__qualname__", repr(func))
        self.name = name if name is not None else getattr(func, "__name__", "")
        if not _NAME.match(self.name):
            raise ValueError(
                f"@tool cannot name a tool {self.name!r} (from {qualname}): use 1 to 64 letters, digits, '_' or '-'"
            )
        doc = parse_docstring(inspect.getdoc(func))
        self.description = description if description is not None else doc.summary
        if not self.description:
            logger.warning('tool "%s" (%s) has no docstring and no description=: the model gets an empty '
                           "description and must guess what it does", self.name, qualname)
        if isinstance(permissions, str) or not isinstance(permissions, collections.abc.Iterable):
            permissions = (permissions,)
        self.required_permissions: Tuple[Permission, ...] = tuple(Permission.of(p) for p in permissions)
        if not isinstance(requires_approval, bool):
            raise TypeError(f"@tool requires_approval must be True or False, not {requires_approval!r} ({qualname})")
        self.requires_approval = requires_approval
        #: The wrapped function.
        self.func = func
        # Look like the function to introspection (help(), inspect.signature, logging).
        self.__wrapped__ = func
        self.__doc__ = getattr(func, "__doc__", None)
        self.__name__ = getattr(func, "__name__", self.name)
        self.__qualname__ = qualname
        self._plan = _plan(func, qualname, doc.params, SchemaBuilder(localns))
        self.parameters: Dict[str, Any] = self._plan.schema

    def execute(self, args: Dict[str, Any]) -> Any:
        """Call the function with ``args`` (the model's JSON object, already validated).

        Args:
            args: argument name to JSON value.

        Returns:
            What the function returns.
        """
        plan = self._plan
        if not plan.converters and not plan.positional:
            return self.func(**args)
        kwargs = dict(args)
        for key, convert in plan.converters:
            if key in kwargs:
                kwargs[key] = convert(kwargs[key])
        positional: List[Any] = []
        for key, default in plan.positional:
            if key in kwargs:
                positional.append(kwargs.pop(key))
            elif default is not inspect.Parameter.empty:
                positional.append(default)  # a later positional-only argument may follow
            else:
                break  # missing: the function raises its own TypeError
        return self.func(*positional, **kwargs)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the function directly, exactly as if it were not a tool."""
        return self.func(*args, **kwargs)

    def __repr__(self) -> str:
        return f"FunctionTool(name={self.name!r}, func={getattr(self.func, '__qualname__', self.func)!r})"


@attrs.frozen
@value_methods
class _Plan:
    """How to call one function: its schema, converters and positional-only parameters."""

    schema: Dict[str, Any]
    converters: Tuple[Tuple[str, Callable[[Any], Any]], ...]
    positional: Tuple[Tuple[str, Any], ...]


def _plan(func: Callable[..., Any], qualname: str, docs: Mapping[str, str], builder: SchemaBuilder) -> _Plan:
    try:
        signature = inspect.signature(func)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"@tool cannot read the signature of {qualname}: {exc}") from exc
    hints = builder.hints(func, f"function {qualname}")
    properties: Dict[str, Any] = {}
    required: List[str] = []
    converters: List[Tuple[str, Callable[[Any], Any]]] = []
    positional: List[Tuple[str, Any]] = []
    for param in signature.parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            star = "*" if param.kind is param.VAR_POSITIONAL else "**"
            raise TypeError(
                f"@tool cannot use parameter {star}{param.name} of {qualname}: the model sends one JSON object, "
                "so declare each argument as a named parameter"
            )
        if param.name not in hints:
            hint = " (for a method, decorate the bound method: tool(obj.method))" if param.name == "self" else ""
            raise TypeError(f"@tool needs a type annotation on parameter {param.name!r} of {qualname}{hint}")
        where = f"parameter {param.name!r} of {qualname}"
        default = attrs.NOTHING if param.default is param.empty else param.default
        built = builder.build(hints[param.name], where)
        properties[param.name], convert = with_details(*built, docs.get(param.name), default)
        if param.default is param.empty:
            required.append(param.name)
        if convert is not None:
            converters.append((param.name, convert))
        if param.kind is param.POSITIONAL_ONLY:
            positional.append((param.name, param.default))
    schema = {"type": "object", "properties": properties, "required": required, "additionalProperties": False}
    return _Plan(schema, tuple(converters), tuple(positional))


@overload
def tool(func: _F) -> FunctionTool: ...


@overload
def tool(
    func: None = None,
    *,
    name: Optional[str] = None,
    description: Optional[str] = None,
    permissions: Union[Permission, str, Iterable[Union[Permission, str]]] = (),
    requires_approval: bool = False,
) -> Callable[[_F], FunctionTool]: ...


def tool(
    func: Optional[Callable[..., Any]] = None,
    *,
    name: Optional[str] = None,
    description: Optional[str] = None,
    permissions: Union[Permission, str, Iterable[Union[Permission, str]]] = (),
    requires_approval: bool = False,
) -> Any:
    """Turn a function into a :class:`FunctionTool`; use bare or with arguments.

    ``@tool`` and ``@tool(name=..., description=..., permissions=(...),
    requires_approval=True)`` both work. Annotations are resolved with the caller's locals too, so
    ``from __future__ import annotations`` and classes defined in the same
    function are fine.

    Args:
        func: the function (given when used bare).
        name: the tool's name; the function's name by default.
        description: the tool's description; the docstring summary by default.
        permissions: the permissions the tool needs.
        requires_approval: every call waits for a human's decision: a
            session's turn pauses until :meth:`AgentSession.resume_turn
            <agcore_sync.agent.session.AgentSession.resume_turn>`.

    Returns:
        The tool, or (with arguments) a decorator that makes it.

    Raises:
        TypeError: see :class:`FunctionTool`; raised at decoration time.
    """
    caller = sys._getframe(1)
    localns = dict(caller.f_locals) if caller.f_code.co_name != "<module>" else None
    del caller  # keep no frame alive

    def decorate(inner: Callable[..., Any]) -> FunctionTool:
        return FunctionTool(inner, name=name, description=description, permissions=permissions, localns=localns,
                            requires_approval=requires_approval)

    return decorate if func is None else decorate(func)
