"""The shared ``__repr__``, ``__eq__`` and ``__hash__`` of ``_values``: the results attrs' generated methods give.

Each case declares one class twice, once as attrs builds it and once with
``@value_methods`` below ``@attrs.frozen``, and compares what the two do.
"""

from __future__ import annotations

from typing import Any, List, Optional, Tuple

import attrs
import pytest

import agcore_sync
from agcore_sync._values import as_tuple, value_methods


def twins(body):
    """Return (attrs' own class, the class with the shared methods), built by ``body(decorate)``."""
    return body(lambda cls: attrs.frozen(cls)), body(lambda cls: attrs.frozen(value_methods(cls)))


def plain(decorate):
    @decorate
    class Point:
        x: int
        y: int = 0
        label: Optional[str] = None

    return Point


def tuned(decorate):
    @decorate
    class Record:
        name: str = attrs.field(eq=str.lower)  # eq_key: equal ignoring case, hashed the same way
        secret: str = attrs.field(default="", repr=False)
        size: int = attrs.field(default=0, repr=lambda n: f"<{n} bytes>")
        cause: Optional[BaseException] = attrs.field(default=None, eq=False)
        note: str = attrs.field(default="", hash=False)
        _cache: Any = attrs.field(default=None, init=False, eq=False)

    return Record


def unset(decorate):
    @decorate
    class Late:
        name: str
        later: int = attrs.field(init=False)  # no default: __init__ leaves it unset

    return Late


def empty(decorate):
    @decorate
    class Nothing:
        pass

    return Nothing


def holder(decorate):
    @decorate
    class Holder:
        items: List[Any]
        pair: Tuple[Any, ...] = ()

    return Holder


def test_repr_is_the_text_attrs_writes():
    for body, args in [(plain, (1,)), (plain, (1, 2, "a")), (empty, ())]:
        generated, shared = twins(body)
        assert repr(shared(*args)) == repr(generated(*args))
    generated, shared = twins(tuned)
    assert repr(shared("Ada", "pw", 12, ValueError("x"))) == repr(generated("Ada", "pw", 12, ValueError("x")))


def test_repr_shows_an_unset_field_without_init_as_attrs_does():
    generated, shared = twins(unset)
    assert repr(shared("a")) == repr(generated("a")) == "Late(name='a', later=NOTHING)"
    made, reference = shared("a"), generated("a")
    object.__setattr__(made, "later", 3)
    object.__setattr__(reference, "later", 3)
    assert repr(made) == repr(reference) == "Late(name='a', later=3)"


def test_repr_of_a_value_met_again_inside_itself_is_three_dots():
    generated, shared = twins(holder)
    made, reference = shared([]), generated([])
    made.items.append(made)
    reference.items.append(reference)
    assert repr(made) == repr(reference) == "Holder(items=[...], pair=())"


def test_repr_drops_the_locals_part_of_a_qualified_name():
    _, shared = twins(plain)
    assert "<locals>" in shared.__qualname__
    assert repr(shared(1)) == "Point(x=1, y=0, label=None)"


def test_equality_compares_the_compared_fields_of_the_same_class_only():
    generated, shared = twins(tuned)
    cases = [
        (("Ada", "a"), ("ADA", "b")),  # eq_key: names equal ignoring case; secret compared
        (("Ada",), ("ADA",)),
        (("Ada", "", 1, ValueError("x")), ("Ada", "", 1, KeyError("y"))),  # eq=False field ignored
        (("Ada",), ("Bob",)),
        (("Ada", "", 1, None, "n1"), ("Ada", "", 1, None, "n2")),  # hash=False but still compared
    ]
    for left, right in cases:
        assert (shared(*left) == shared(*right)) is (generated(*left) == generated(*right))
        assert (shared(*left) != shared(*right)) is (generated(*left) != generated(*right))
    other_generated, other_shared = twins(tuned)
    assert shared("Ada").__eq__(other_shared("Ada")) is NotImplemented  # another class, even one alike
    assert shared("Ada") != other_shared("Ada")


def test_equal_values_hash_equal_and_the_hash_reads_the_hashed_fields():
    _, shared = twins(tuned)
    assert hash(shared("Ada", "", 1, ValueError("x"), "n1")) == hash(shared("ADA", "", 1, KeyError("y"), "n2"))
    assert hash(shared("Ada", "", 1)) != hash(shared("Ada", "", 2))
    _, point = twins(plain)
    assert len({point(1), point(1), point(2)}) == 2
    with pytest.raises(TypeError):
        hash(twins(holder)[1]([]))  # a list inside: unhashable, as with attrs' own hash


def test_the_class_keeps_everything_else_attrs_gives_it():
    generated, shared = twins(plain)
    assert [f.name for f in attrs.fields(shared)] == [f.name for f in attrs.fields(generated)]
    assert attrs.evolve(shared(1), y=5) == shared(1, 5)
    assert attrs.asdict(shared(1)) == attrs.asdict(generated(1))
    assert shared.__match_args__ == generated.__match_args__
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        shared(1).x = 2  # type: ignore[misc]
    # attrs generated only __init__; the other three are the shared ones.
    assert "attrs generated" in shared.__init__.__code__.co_filename
    for name in ("__repr__", "__eq__", "__hash__"):
        assert "attrs generated" in getattr(generated, name).__code__.co_filename
        assert "attrs generated" not in getattr(shared, name).__code__.co_filename


def test_as_tuple_stores_a_tuple_and_adds_no_annotation_to_init():
    @attrs.frozen
    class WithConverter:
        items: Tuple[int, ...] = attrs.field(converter=as_tuple)

    @attrs.frozen
    class WithTuple:
        items: Tuple[int, ...] = attrs.field(converter=tuple)

    assert WithConverter([1, 2]).items == (1, 2)
    assert WithConverter.__init__.__annotations__ == WithTuple.__init__.__annotations__


def test_the_package_classes_with_shared_methods_show_and_compare_as_before():
    from agcore_sync.llm.events import Error

    assert repr(agcore_sync.Usage(1, 2)) == (
        "Usage(prompt_tokens=1, completion_tokens=2, cache_read_tokens=0, cache_write_tokens=0)")
    assert repr(agcore_sync.Message.user("hi")) == "Message(role=<Role.USER: 'user'>, content=(TextBlock(text='hi'),))"
    assert Error("x", ValueError("a")) == Error("x") and hash(Error("x", KeyError())) == hash(Error("x"))
    assert agcore_sync.Message.user("hi") != agcore_sync.Message.assistant("hi")
    assert {agcore_sync.Usage(1, 2): "a"}[agcore_sync.Usage(1, 2)] == "a"
