"""PromptBuilder: section order, empty sections, templates in sections, tools from a registry, use in a cycle."""

from __future__ import annotations

import pytest

from agcore_sync.llm.mock import MockProvider
from agcore_sync.llm.types import ToolDef
from agcore_sync.loop.cycle import CycleConfig, LlmCycle
from agcore_sync.prompt import PromptBuilder, PromptError, PromptTemplate
from agcore_sync.tools.function import tool
from agcore_sync.tools.registry import ToolRegistry


@tool
def add(a: int, b: int = 0) -> int:
    """Add two integers.

    Args:
        a: the first term.
        b: the second term.
    """
    return a + b


@tool
def now() -> str:
    """Return the current time
    as an ISO 8601 string."""
    return "2026-01-01T00:00:00Z"


def test_every_kind_of_section_renders_as_a_titled_block_in_the_order_added():
    prompt = (PromptBuilder()
              .role("You are a careful assistant.")
              .context("The user is on a phone.")
              .instructions("Be brief.", "Cite sources.")
              .tool_guidance("Prefer add over mental arithmetic.")
              .examples("Q: 1+1? A: 2")
              .output_format("Plain text, no markdown.")
              .section("Safety", "Never share secrets."))
    assert prompt.render() == (
        "## Role\nYou are a careful assistant.\n\n"
        "## Context\nThe user is on a phone.\n\n"
        "## Instructions\n- Be brief.\n- Cite sources.\n\n"
        "## Tool guidance\nPrefer add over mental arithmetic.\n\n"
        "## Examples\n### Example 1\nQ: 1+1? A: 2\n\n"
        "## Output format\nPlain text, no markdown.\n\n"
        "## Safety\nNever share secrets."
    )


def test_sections_keep_the_order_they_were_first_added_in():
    prompt = PromptBuilder().output_format("JSON").section("Notes", "n").role("r")
    assert prompt.render() == "## Output format\nJSON\n\n## Notes\nn\n\n## Role\nr"


def test_setting_a_text_section_again_replaces_it_in_place():
    prompt = PromptBuilder().role("first").context("c").role("second")
    assert prompt.render() == "## Role\nsecond\n\n## Context\nc"


def test_instructions_and_examples_accumulate_across_calls():
    prompt = PromptBuilder().instructions("one").examples("e1").instructions("two", "three").examples("e2")
    assert prompt.render() == (
        "## Instructions\n- one\n- two\n- three\n\n"
        "## Examples\n### Example 1\ne1\n\n### Example 2\ne2"
    )


def test_a_custom_section_with_a_standard_title_is_that_section():
    prompt = PromptBuilder().role("r").section("Role", "replaced")
    assert prompt.render() == "## Role\nreplaced"


def test_empty_sections_are_left_out_with_their_titles():
    prompt = (PromptBuilder()
              .role("   ")
              .context("Only this.")
              .instructions()
              .examples("", "\n")
              .output_format(PromptTemplate("{fmt}", fmt=""))
              .section("Empty", ""))
    assert prompt.render() == "## Context\nOnly this."


def test_an_empty_builder_renders_an_empty_string():
    assert PromptBuilder().render() == ""
    assert PromptBuilder().instructions("", " ").render() == ""


def test_section_text_is_stripped_and_plain_braces_are_kept_literally():
    prompt = PromptBuilder().output_format('\n  Reply as {"answer": "..."}  \n')
    assert prompt.render() == '## Output format\nReply as {"answer": "..."}'


def test_example_pairs_render_as_input_and_output_lines():
    prompt = PromptBuilder().examples(("What is 2+2?", "4"), "Free-form example.")
    assert prompt.render() == (
        "## Examples\n### Example 1\nInput: What is 2+2?\nOutput: 4\n\n### Example 2\nFree-form example."
    )


def test_bound_templates_in_sections_render_with_no_values():
    prompt = (PromptBuilder()
              .role(PromptTemplate("You work for {company}.", company="Acme"))
              .instructions(PromptTemplate("Reply in {lang}.", lang="Dutch"))
              .examples((PromptTemplate("Hi {who}", who="there"), "Hello!")))
    assert prompt.variables == ()
    assert prompt.render() == (
        "## Role\nYou work for Acme.\n\n## Instructions\n- Reply in Dutch.\n\n"
        "## Examples\n### Example 1\nInput: Hi there\nOutput: Hello!"
    )


def test_render_values_fill_the_templates_of_every_section_and_override_bound_ones():
    prompt = (PromptBuilder()
              .role(PromptTemplate("You work for {company}."))
              .context(PromptTemplate("{company} sells {product} in {lang}.", lang="English")))
    assert prompt.variables == ("company", "product")
    assert prompt.render({"company": "Acme"}, product="anvils", lang="Dutch") == (
        "## Role\nYou work for Acme.\n\n## Context\nAcme sells anvils in Dutch."
    )


def test_render_lists_every_missing_variable_across_sections():
    prompt = (PromptBuilder()
              .role(PromptTemplate("You work for {company}."))
              .instructions(PromptTemplate("Greet {user}."), PromptTemplate("Talk about {company} and {topic}.")))
    with pytest.raises(PromptError) as info:
        prompt.render(topic="x")
    assert info.value.missing == ("company", "user")


def test_render_refuses_values_no_template_uses():
    prompt = PromptBuilder().role(PromptTemplate("You work for {company}."))
    with pytest.raises(PromptError) as info:
        prompt.render(company="Acme", compnay="typo")
    assert info.value.unknown == ("compnay",)


def test_tools_lists_each_tool_of_a_registry_with_its_arguments_and_description():
    with ToolRegistry() as registry:
        registry.register(add)
        registry.register(now)
        prompt = PromptBuilder().role("r").tools(registry).tool_guidance("Use add for sums.")
        assert prompt.render() == (
            "## Role\nr\n\n"
            "## Tools\n"
            "- add(a, b?): Add two integers.\n"
            "- now(): Return the current time as an ISO 8601 string.\n\n"
            "## Tool guidance\nUse add for sums."
        )


def test_tools_of_a_registry_are_read_at_render_time():
    with ToolRegistry() as registry:
        prompt = PromptBuilder().role("r").tools(registry)
        assert prompt.render() == "## Role\nr"
        registry.register(add)
        assert prompt.render() == "## Role\nr\n\n## Tools\n- add(a, b?): Add two integers."


def test_tools_also_takes_tools_or_tool_definitions_and_a_title():
    definition = ToolDef("search", "", {"type": "object", "properties": {"query": {"type": "string"}},
                                        "required": ["query"]})
    prompt = PromptBuilder().tools([definition, now], title="Available tools")
    assert prompt.render() == (
        "## Available tools\n- search(query)\n- now(): Return the current time as an ISO 8601 string."
    )


def test_tools_refuses_something_that_is_not_tools():
    with pytest.raises(TypeError):
        PromptBuilder().tools(42)
    with pytest.raises(TypeError):
        PromptBuilder().tools(["not a tool"])


@pytest.mark.parametrize("title", ["", "   ", "two\nlines"])
def test_a_section_title_must_be_one_non_empty_line(title):
    with pytest.raises(ValueError):
        PromptBuilder().section(title, "text")


def test_section_content_must_be_text_or_a_template():
    with pytest.raises(TypeError):
        PromptBuilder().role(42)
    with pytest.raises(TypeError):
        PromptBuilder().examples(("only input",))


def test_copy_gives_an_independent_builder():
    base = PromptBuilder().role("r").instructions("one")
    variant = base.copy().instructions("two").context("c")
    assert base.render() == "## Role\nr\n\n## Instructions\n- one"
    assert variant.render() == "## Role\nr\n\n## Instructions\n- one\n- two\n\n## Context\nc"


def test_llm_cycle_sends_the_rendered_builder_as_the_system_prompt():
    provider = MockProvider([MockProvider.text("ok")])
    with ToolRegistry() as registry:
        registry.register(add)
        builder = PromptBuilder().role("You add numbers.").tools(registry)
        LlmCycle(provider, CycleConfig(), system_prompt=builder).submit("2+3?")
    assert provider.requests[0].system == "## Role\nYou add numbers.\n\n## Tools\n- add(a, b?): Add two integers."


def test_llm_cycle_refuses_a_builder_holding_an_unbound_template_at_construction():
    provider = MockProvider([])
    builder = PromptBuilder().role(PromptTemplate("You help {user}."))
    with pytest.raises(PromptError) as info:
        LlmCycle(provider, CycleConfig(), system_prompt=builder)
    assert info.value.missing == ("user",)
