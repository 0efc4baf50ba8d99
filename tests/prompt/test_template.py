"""PromptTemplate: variables, rendering, missing and unknown values, partial, escaping, use as a system prompt."""

from __future__ import annotations

import doctest
import pickle

import attrs
import pytest

import agcore_sync.prompt.builder
import agcore_sync.prompt.bundle
import agcore_sync.prompt.template
from agcore_sync.agent.session import AgentSession
from agcore_sync.errors import AgcoreError
from agcore_sync.llm.mock import MockProvider
from agcore_sync.loop.cycle import CycleConfig, LlmCycle
from agcore_sync.prompt import PromptError, PromptTemplate


class User:
    def __init__(self, name):
        self.name = name


def test_variables_are_listed_once_each_in_order_of_first_use():
    template = PromptTemplate("{b} then {a}, and {b} again")
    assert template.variables == ("b", "a")
    assert template.unbound == ("b", "a")


def test_format_specs_conversions_attributes_indexes_and_nested_specs_count_as_their_root_variable():
    template = PromptTemplate("{price:>8.2f}|{who!r}|{user.name}|{items[1]}|{total:{width}d}")
    assert template.variables == ("price", "who", "user", "items", "total", "width")
    text = template.render(price=3.14159, who="Ada", user=User("Bob"), items=["x", "y"], total=42, width=5)
    assert text == "    3.14|'Ada'|Bob|y|   42"


def test_literal_braces_are_written_doubled_as_in_str_format():
    template = PromptTemplate('Reply as JSON: {{"answer": "{answer}"}}')
    assert template.variables == ("answer",)
    assert template.render(answer="yes") == 'Reply as JSON: {"answer": "yes"}'
    assert PromptTemplate("no fields {{here}}").render() == "no fields {here}"


@pytest.mark.parametrize("text", ["{}", "{0}", "Hi {0.name}", "{[0]}", "{!r}", "{:>4}"])
def test_positional_fields_are_refused_at_construction(text):
    with pytest.raises(PromptError, match="positional field"):
        PromptTemplate(text)


@pytest.mark.parametrize("text", ["a { b", "a } b", '{"answer": 1}', "{first name}", "{x!z}", "{a.}",
                                  "{a:{b:{c}}}"])
def test_malformed_templates_are_refused_at_construction(text):
    with pytest.raises(PromptError):
        PromptTemplate(text)


def test_an_unmatched_brace_error_says_how_to_write_a_literal_brace_and_chains_the_cause():
    with pytest.raises(PromptError, match=r"'\{\{'") as info:
        PromptTemplate("Use { carefully")
    assert isinstance(info.value.__cause__, ValueError)


def test_render_lists_every_missing_variable_in_template_order():
    template = PromptTemplate("{greeting}, {name}! Today is {day}.")
    with pytest.raises(PromptError) as info:
        template.render(name="Ada")
    assert info.value.missing == ("greeting", "day")
    assert info.value.unknown == ()
    assert "'greeting'" in str(info.value) and "'day'" in str(info.value)


def test_render_refuses_values_the_template_does_not_use():
    template = PromptTemplate("Hello {name}")
    with pytest.raises(PromptError) as info:
        template.render(name="Ada", nmae="typo", other=1)
    assert info.value.unknown == ("nmae", "other")
    assert info.value.missing == ()
    assert "allow_extra=True" in str(info.value)


def test_missing_and_unknown_values_are_reported_together():
    with pytest.raises(PromptError) as info:
        PromptTemplate("{a} {b}").render(c=1)
    assert info.value.missing == ("a", "b")
    assert info.value.unknown == ("c",)


def test_allow_extra_ignores_values_the_template_does_not_use():
    shared = {"name": "Ada", "topic": "maths", "unused": object()}
    assert PromptTemplate("Hi {name}").render(shared, allow_extra=True) == "Hi Ada"
    assert PromptTemplate("On {topic}").render(allow_extra=True, **shared) == "On maths"


def test_a_mapping_reaches_variables_named_like_the_keyword_arguments():
    template = PromptTemplate("{text}/{values}/{allow_extra}", text="t")
    assert template.bound == {"text": "t"}
    assert template.render({"allow_extra": "x"}, values="v") == "t/v/x"


def test_keyword_values_win_over_the_mapping():
    assert PromptTemplate("{a}").render({"a": 1}, a=2) == "2"


def test_values_given_at_construction_are_bound_and_render_needs_no_arguments():
    template = PromptTemplate("You are {role}, answering in {lang}.", role="a tutor", lang="French")
    assert template.unbound == ()
    assert template.render() == "You are a tutor, answering in French."


def test_construction_refuses_values_for_unknown_variables():
    with pytest.raises(PromptError) as info:
        PromptTemplate("Hi {name}", nmae="Ada")
    assert info.value.unknown == ("nmae",)


def test_partial_returns_a_new_template_and_leaves_the_original_unbound():
    template = PromptTemplate("{greeting}, {name}")
    hello = template.partial(greeting="Hello")
    assert hello is not template
    assert template.bound == {} and template.unbound == ("greeting", "name")
    assert hello.bound == {"greeting": "Hello"} and hello.unbound == ("name",)
    assert hello.render(name="Ada") == "Hello, Ada"
    assert hello.partial(greeting="Hi").render(name="Bob") == "Hi, Bob"


def test_partial_refuses_unknown_names_unless_allow_extra():
    template = PromptTemplate("{a}")
    with pytest.raises(PromptError) as info:
        template.partial(b=1)
    assert info.value.unknown == ("b",)
    assert template.partial({"a": 1, "b": 2}, allow_extra=True).bound == {"a": 1}


def test_render_values_override_bound_ones():
    template = PromptTemplate("Answer in {lang}", lang="English")
    assert template.render(lang="German") == "Answer in German"
    assert template.render() == "Answer in English"


def test_bound_is_a_read_only_view():
    template = PromptTemplate("{a}", a=1)
    with pytest.raises(TypeError):
        template.bound["a"] = 2
    assert template.render() == "1"


def test_a_template_is_a_frozen_value_that_compares_hashes_and_pickles():
    template = PromptTemplate("{a} {b}", b=[1, 2])
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        template.text = "other"
    assert template == PromptTemplate("{a} {b}").partial(b=[1, 2])
    assert template != PromptTemplate("{a} {b}").partial(b=[3])
    assert template != PromptTemplate("{a} {b}")
    assert hash(template) == hash(PromptTemplate("{a} {b}", b=[1, 2]))
    copy = pickle.loads(pickle.dumps(template))
    assert copy == template and copy.variables == ("a", "b") and copy.render(a=0) == "0 [1, 2]"
    assert repr(template) == "PromptTemplate('{a} {b}', b=[1, 2])"


@pytest.mark.parametrize("text, values, cause", [
    ("{n:d}", {"n": "not a number"}, ValueError),
    ("{user.email}", {"user": User("Ada")}, AttributeError),
    ("{items[3]}", {"items": []}, IndexError),
    ("{table[key]}", {"table": {}}, KeyError),
])
def test_a_formatting_failure_is_a_prompt_error_with_the_cause_chained(text, values, cause):
    with pytest.raises(PromptError) as info:
        PromptTemplate(text).render(**values)
    assert isinstance(info.value.__cause__, cause)


def test_text_must_be_a_str():
    with pytest.raises(TypeError):
        PromptTemplate(b"{a}")


def test_prompt_error_is_an_agcore_error_and_pickles_with_its_attributes():
    with pytest.raises(PromptError) as info:
        PromptTemplate("{a} {b}").render(c=1)
    assert isinstance(info.value, AgcoreError)
    copy = pickle.loads(pickle.dumps(info.value))
    assert (copy.missing, copy.unknown, copy.path, str(copy)) == (("a", "b"), ("c",), None, str(info.value))


def test_llm_cycle_sends_a_bound_template_rendered_as_the_system_prompt():
    provider = MockProvider([MockProvider.text("ok")])
    cycle = LlmCycle(provider, CycleConfig(), system_prompt=PromptTemplate("You help {user}.", user="Ada"))
    cycle.submit("hi")
    assert provider.requests[0].system == "You help Ada."
    assert all(m.text != "You help Ada." for m in cycle.messages())


def test_llm_cycle_refuses_a_template_with_unbound_variables_at_construction():
    provider = MockProvider([MockProvider.text("never sent")])
    with pytest.raises(PromptError) as info:
        LlmCycle(provider, CycleConfig(), system_prompt=PromptTemplate("You help {user} with {topic}."))
    assert info.value.missing == ("user", "topic")
    assert provider.requests == []


def test_agent_session_saves_the_rendered_template():
    provider = MockProvider([MockProvider.text("ok")])
    with AgentSession(provider, CycleConfig(), system_prompt=PromptTemplate("Be {tone}.", tone="brief")) as session:
        session.submit_turn("hi")
        assert session.to_dict()["system_prompt"] == "Be brief."
    assert provider.requests[0].system == "Be brief."


@pytest.mark.parametrize("module", [agcore_sync.prompt.template, agcore_sync.prompt.builder,
                                    agcore_sync.prompt.bundle], ids=lambda m: m.__name__)
def test_the_docstring_examples_run(module):
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
