"""Permissions a tool declares, and the checker that allows or denies them.

A tool lists what it needs in ``required_permissions``; a
:class:`PermissionChecker` decides, before the tool runs, whether every one of
them is allowed. The decision for one permission ``p`` follows the seed's four
rules, in order:

1. ``p`` is in ``denied``: deny (denied wins over allowed);
2. ``p`` is in ``allowed``: allow;
3. ``allowed`` is not empty: deny (whitelist mode);
4. otherwise ``allow_unspecified`` decides.

A tool runs only if every permission it declares is allowed. A tool that
declares none runs only if ``allow_unspecified`` is True (this rule is ours;
the seed does not say).

This module is pure: no I/O, no threads, no state beyond its frozen values.
"""

from __future__ import annotations

from typing import ClassVar, FrozenSet, Iterable, Optional, Union

import attrs

from agcore_sync._values import value_methods
from agcore_sync.tools.error import PermissionDeniedError

__all__ = ["Permission", "PermissionConfig", "PermissionChecker"]


def _check_name(instance: object, attribute: attrs.Attribute, value: object) -> None:
    if not isinstance(value, str):
        raise TypeError(f"a permission name must be a str, got {type(value).__name__}")
    if not value or value != value.strip():
        raise ValueError(f"a permission name must be non-empty, without surrounding spaces: {value!r}")


@attrs.frozen(repr=False, order=True)
class Permission:
    """A permission a tool may need, identified by its name.

    The built-in permissions are class attributes: :attr:`READ`,
    :attr:`WRITE`, :attr:`DELETE`, :attr:`NETWORK`, :attr:`SHELL` and
    :attr:`FILE_SYSTEM`, named ``"read"``, ``"write"``, ``"delete"``,
    ``"network"``, ``"shell"`` and ``"file_system"``. Others come from
    :meth:`custom`, by convention namespaced (``"db:migrate"``).

    Permissions compare and hash by name (case-sensitive), so
    ``Permission.custom("read") == Permission.READ``.

    Args:
        name: the permission's name; a non-empty string without surrounding
            spaces.
    """

    name: str = attrs.field(validator=_check_name)

    #: Read files, query databases and the like.
    READ: ClassVar[Permission]
    #: Create or change files, insert data and the like.
    WRITE: ClassVar[Permission]
    #: Delete files, records and the like.
    DELETE: ClassVar[Permission]
    #: Network access (HTTP requests and the like).
    NETWORK: ClassVar[Permission]
    #: Run shell commands.
    SHELL: ClassVar[Permission]
    #: File-system operations other than read, write and delete.
    FILE_SYSTEM: ClassVar[Permission]

    @classmethod
    def custom(cls, name: str) -> Permission:
        """Return the permission called ``name``.

        Args:
            name: a non-empty name, by convention ``"namespace:name"``.

        Raises:
            TypeError: ``name`` is not a str.
            ValueError: ``name`` is empty or has surrounding spaces.
        """
        return cls(name)

    @classmethod
    def of(cls, value: Union[Permission, str]) -> Permission:
        """Return ``value`` as a :class:`Permission` (a str is a name).

        Raises:
            TypeError: ``value`` is neither a Permission nor a str.
            ValueError: ``value`` is an empty name.
        """
        if isinstance(value, Permission):
            return value
        if isinstance(value, str):
            return cls(value)
        raise TypeError(f"expected a Permission or a permission name, got {type(value).__name__}")

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        if _BUILTIN.get(self.name) == self:
            return f"Permission.{self.name.upper()}"
        return f"Permission.custom({self.name!r})"


Permission.READ = Permission("read")
Permission.WRITE = Permission("write")
Permission.DELETE = Permission("delete")
Permission.NETWORK = Permission("network")
Permission.SHELL = Permission("shell")
Permission.FILE_SYSTEM = Permission("file_system")

_BUILTIN = {
    p.name: p
    for p in (
        Permission.READ,
        Permission.WRITE,
        Permission.DELETE,
        Permission.NETWORK,
        Permission.SHELL,
        Permission.FILE_SYSTEM,
    )
}

PermissionLike = Union[Permission, str]


def _permission_set(values: Union[PermissionLike, Iterable[PermissionLike]]) -> FrozenSet[Permission]:
    # A lone name would otherwise be iterated character by character.
    if isinstance(values, (str, Permission)):
        values = (values,)
    return frozenset(Permission.of(v) for v in values)


@attrs.frozen
@value_methods
class PermissionConfig:
    """Which permissions tools may use.

    The defaults are the seed's: allow READ and NETWORK, deny DELETE and
    SHELL, ``allow_unspecified=True``. Since ``allowed`` is then non-empty,
    it is a whitelist (rule 3 of the module docstring): WRITE, FILE_SYSTEM
    and custom permissions are denied too, while a tool declaring no
    permission runs.

    Args:
        allowed: permissions that are allowed (Permission objects or names;
            stored as a frozenset). Non-empty means only these are allowed.
        denied: permissions that are always denied, even when also allowed.
        allow_unspecified: decides permissions neither list names when
            ``allowed`` is empty, and tools that declare no permission.
    """

    allowed: FrozenSet[Permission] = attrs.field(
        default=(Permission.READ, Permission.NETWORK), converter=_permission_set
    )
    denied: FrozenSet[Permission] = attrs.field(
        default=(Permission.DELETE, Permission.SHELL), converter=_permission_set
    )
    allow_unspecified: bool = attrs.field(default=True, validator=attrs.validators.instance_of(bool))

    def _refusal(self, p: Permission) -> Optional[str]:
        # Why ``p`` is denied, or None if it is allowed: the four rules in order.
        if p in self.denied:
            return f'permission "{p}" is in the denied list (rule 1: denied always wins)'
        if p in self.allowed:
            return None
        if self.allowed:
            return f'permission "{p}" is not in the allowed list (rule 3: a non-empty allowed list is a whitelist)'
        if self.allow_unspecified:
            return None
        return f'permission "{p}" is in neither list and allow_unspecified is False (rule 4)'


@attrs.frozen
@value_methods
class PermissionChecker:
    """Decides whether a tool may run, from the permissions it declares.

    A :class:`~agcore_sync.tools.registry.ToolRegistry` calls :meth:`check`
    before validating arguments or running the tool. One checker may be
    shared by several registries.

    Args:
        config: the rules; the seed's defaults when not given.
    """

    config: PermissionConfig = attrs.field(factory=PermissionConfig)

    def check(self, tool_name: str, permissions: Iterable[PermissionLike]) -> None:
        """Raise unless every permission in ``permissions`` is allowed.

        Args:
            tool_name: the tool concerned (named in the error).
            permissions: what the tool declares (Permission objects or names).

        Raises:
            PermissionDeniedError: a permission is denied, or the tool declares
                none and ``allow_unspecified`` is False. The message names the
                tool, the permission and the rule.
        """
        reason = self._refusal(permissions)
        if reason is not None:
            raise PermissionDeniedError(f'tool "{tool_name}" may not run: {reason}', tool_name=tool_name)

    def is_allowed(self, permissions: Iterable[PermissionLike]) -> bool:
        """Return True if a tool declaring ``permissions`` may run.

        Args:
            permissions: what the tool declares (Permission objects or names).
        """
        return self._refusal(permissions) is None

    def _refusal(self, permissions: Iterable[PermissionLike]) -> Optional[str]:
        if isinstance(permissions, (str, Permission)):
            permissions = (permissions,)
        declared = False
        for p in permissions:
            declared = True
            reason = self.config._refusal(Permission.of(p))
            if reason is not None:
                return reason
        if not declared and not self.config.allow_unspecified:
            return "it declares no permissions and allow_unspecified is False"
        return None
