from __future__ import annotations

import pickle

import attrs
import pytest

from agcore_sync.tools.error import PermissionDeniedError
from agcore_sync.tools.permission import Permission, PermissionChecker, PermissionConfig

READ, WRITE, DELETE, NETWORK, SHELL, FILE_SYSTEM = (
    Permission.READ,
    Permission.WRITE,
    Permission.DELETE,
    Permission.NETWORK,
    Permission.SHELL,
    Permission.FILE_SYSTEM,
)


def denial(checker: PermissionChecker, tool_name: str, permissions) -> PermissionDeniedError:
    with pytest.raises(PermissionDeniedError) as info:
        checker.check(tool_name, permissions)
    return info.value


# -- Permission values ---------------------------------------------------------


def test_the_builtin_permissions_have_the_seed_names():
    assert [p.name for p in (READ, WRITE, DELETE, NETWORK, SHELL, FILE_SYSTEM)] == [
        "read",
        "write",
        "delete",
        "network",
        "shell",
        "file_system",
    ]


def test_permissions_compare_and_hash_by_name():
    assert Permission.custom("db:migrate") == Permission.custom("db:migrate")
    assert Permission.custom("read") == READ
    assert len({Permission.custom("db:migrate"), Permission("db:migrate"), READ, Permission.of("read")}) == 2
    assert Permission.custom("db:Migrate") != Permission.custom("db:migrate")


def test_a_custom_permission_name_must_be_a_non_empty_string():
    for bad in ("", "   ", " db:migrate"):
        with pytest.raises(ValueError):
            Permission.custom(bad)
    with pytest.raises(TypeError):
        Permission.custom(3)  # type: ignore[arg-type]


def test_of_accepts_a_permission_or_a_name_and_nothing_else():
    assert Permission.of(SHELL) is SHELL
    assert Permission.of("x:y") == Permission.custom("x:y")
    with pytest.raises(TypeError):
        Permission.of(None)  # type: ignore[arg-type]


def test_permissions_are_immutable_readable_and_pickle():
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        READ.name = "write"  # type: ignore[misc]
    assert repr(READ) == "Permission.READ"
    assert repr(Permission.custom("db:migrate")) == "Permission.custom('db:migrate')"
    assert str(FILE_SYSTEM) == "file_system"
    assert pickle.loads(pickle.dumps(Permission.custom("db:migrate"))) == Permission.custom("db:migrate")


# -- PermissionConfig ----------------------------------------------------------


def test_the_default_config_is_the_seeds():
    config = PermissionConfig()
    assert config.allowed == {READ, NETWORK}
    assert config.denied == {DELETE, SHELL}
    assert config.allow_unspecified is True


def test_the_config_converts_names_and_takes_its_fields_positionally():
    config = PermissionConfig(["read", Permission.custom("db:read")], "shell", False)
    assert config.allowed == {READ, Permission.custom("db:read")}
    assert config.denied == {SHELL}
    assert config.allow_unspecified is False
    assert PermissionConfig(("read", "network"), ("delete", "shell")) == PermissionConfig()


def test_the_config_rejects_what_is_not_a_permission():
    with pytest.raises(TypeError):
        PermissionConfig(allowed=[1])
    with pytest.raises(ValueError):
        PermissionConfig(denied=[""])
    with pytest.raises(TypeError):
        PermissionConfig(allow_unspecified="yes")  # type: ignore[arg-type]


# -- The seed's edge cases -------------------------------------------------------


def test_whitelist_mode_denies_a_permission_the_allowed_list_does_not_name():
    checker = PermissionChecker(PermissionConfig(allowed=[READ], denied=[], allow_unspecified=True))
    checker.check("reader", [READ])
    error = denial(checker, "writer", [WRITE])
    assert error.tool_name == "writer"
    assert 'tool "writer"' in str(error)
    assert '"write"' in str(error)
    assert "rule 3" in str(error)


def test_blacklist_mode_denies_only_what_is_denied():
    checker = PermissionChecker(PermissionConfig(allowed=[], denied=[SHELL], allow_unspecified=True))
    checker.check("writer", [WRITE, NETWORK, Permission.custom("db:migrate")])
    error = denial(checker, "bash", [SHELL])
    assert 'tool "bash"' in str(error)
    assert '"shell"' in str(error)
    assert "rule 1" in str(error)


def test_empty_lists_leave_every_permission_to_allow_unspecified():
    lenient = PermissionChecker(PermissionConfig(allowed=[], denied=[], allow_unspecified=True))
    strict = PermissionChecker(PermissionConfig(allowed=[], denied=[], allow_unspecified=False))
    everything = [READ, WRITE, DELETE, NETWORK, SHELL, FILE_SYSTEM, Permission.custom("x:y")]
    lenient.check("tool", everything)
    for p in everything:
        assert not strict.is_allowed([p])
    assert "rule 4" in str(denial(strict, "tool", [READ]))


def test_a_permission_both_allowed_and_denied_is_denied():
    custom = Permission.custom("db:drop")
    checker = PermissionChecker(PermissionConfig(allowed=[READ, custom, WRITE], denied=["db:drop", WRITE]))
    assert not checker.is_allowed([custom])
    assert not checker.is_allowed([WRITE])
    assert checker.is_allowed([READ])
    assert "rule 1" in str(denial(checker, "dropper", [custom]))


def test_a_tool_declaring_no_permission_runs_only_if_allow_unspecified():
    PermissionChecker(PermissionConfig(allow_unspecified=True)).check("pure", [])
    error = denial(PermissionChecker(PermissionConfig(allow_unspecified=False)), "pure", ())
    assert 'tool "pure"' in str(error)
    assert "declares no permissions" in str(error)


def test_the_default_checker_applies_the_seeds_defaults():
    checker = PermissionChecker()
    assert checker.config == PermissionConfig()
    assert checker.is_allowed([READ, NETWORK])
    assert checker.is_allowed([])
    for p in (DELETE, SHELL, WRITE, FILE_SYSTEM, Permission.custom("x:y")):
        assert not checker.is_allowed([p])


# -- Several and custom permissions -----------------------------------------------


def test_a_tool_needing_two_permissions_is_denied_when_one_is_denied():
    checker = PermissionChecker()
    error = denial(checker, "download_and_delete", [NETWORK, DELETE])
    assert '"delete"' in str(error)
    assert not checker.is_allowed([DELETE, NETWORK])
    assert checker.is_allowed([NETWORK, READ])


def test_custom_permissions_are_matched_by_name():
    checker = PermissionChecker(PermissionConfig(allowed=["db:read"], denied=["db:write"]))
    checker.check("query", [Permission.custom("db:read")])
    checker.check("query", ["db:read"])
    assert "rule 1" in str(denial(checker, "update", [Permission.custom("db:write")]))
    assert "rule 3" in str(denial(checker, "migrate", ["db:migrate"]))


def test_the_denial_is_recoverable_and_pickles():
    error = denial(PermissionChecker(), "rm", [DELETE])
    assert error.recoverable is True
    copy = pickle.loads(pickle.dumps(error))
    assert (type(copy), str(copy), copy.tool_name) == (PermissionDeniedError, str(error), "rm")
