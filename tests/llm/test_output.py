"""OutputSchema: building schemas from what output= takes, parsing answers, wire fragments."""

from __future__ import annotations

import dataclasses
import enum
import json
import pickle
import subprocess
import sys
from typing import Dict, FrozenSet, List, Literal, Optional, Tuple, TypedDict

import attrs
import pytest

from agcore_sync import AgcoreError, LlmError
from agcore_sync.llm.errors import OutputRefusedError, OutputValidationError
from agcore_sync.llm.output import (
    OutputSchema,
    anthropic_output_format,
    openai_response_format,
    output_tool,
    prompted_instructions,
    responses_text_format,
    retry_instructions,
)
from agcore_sync.llm.types import ToolChoice


class Currency(enum.Enum):
    EUR = "EUR"
    USD = "USD"


@dataclasses.dataclass
class Line:
    """One line of an invoice.

    Attributes:
        price: unit price, in the invoice's currency.
        quantity: how many.
    """

    label: str
    price: float
    quantity: int = 1


@dataclasses.dataclass
class Invoice:
    """An invoice read from a document."""

    number: str
    currency: Currency
    lines: List[Line]
    due: Optional[str] = None


@attrs.frozen
class Party:
    """Someone on the invoice.

    Args:
        name: the legal name.
    """

    name: str
    roles: FrozenSet[str] = frozenset()


class Summary(TypedDict):
    """A short summary.

    Attributes:
        title: at most ten words.
    """

    title: str
    parties: List[Party]


class Partial(TypedDict, total=False):
    note: str


@dataclasses.dataclass
class Tree:
    label: str
    children: List[Tree]


@dataclasses.dataclass
class Holder:
    first: Tree
    others: Tuple[Tree, ...] = ()


GOOD_INVOICE = '{"number": "F-1", "currency": "EUR", "lines": [{"label": "tea", "price": 2.5}]}'


def test_a_dataclass_becomes_a_closed_object_schema_described_by_its_docstring():
    schema = OutputSchema(Invoice)
    line = schema.json_schema["properties"]["lines"]["items"]
    assert schema.json_schema["description"] == "An invoice read from a document."
    assert schema.json_schema["required"] == ["number", "currency", "lines"]
    assert schema.json_schema["additionalProperties"] is False
    assert schema.json_schema["properties"]["currency"] == {"type": "string", "enum": ["EUR", "USD"]}
    assert line["properties"]["price"]["description"] == "unit price, in the invoice's currency."
    assert line["description"] == "One line of an invoice."
    assert schema.name == "Invoice" and schema.output_type is Invoice


def test_a_dataclass_without_docstring_has_no_made_up_description():
    assert "description" not in OutputSchema(Tree).json_schema


def test_an_answer_becomes_an_instance_with_nested_classes_and_enums_converted():
    invoice = OutputSchema(Invoice).parse(GOOD_INVOICE)
    assert invoice == Invoice("F-1", Currency.EUR, [Line("tea", 2.5)])
    assert isinstance(invoice.lines[0], Line) and invoice.currency is Currency.EUR


def test_a_typeddict_answer_is_a_dict_with_its_nested_attrs_classes_converted():
    schema = OutputSchema(Summary)
    assert schema.json_schema["properties"]["title"]["description"] == "at most ten words."
    assert schema.json_schema["properties"]["parties"]["items"]["properties"]["name"]["description"] == \
        "the legal name."
    value = schema.parse('{"title": "Tea", "parties": [{"name": "ACME", "roles": ["seller"]}]}')
    assert value == {"title": "Tea", "parties": [Party("ACME", frozenset({"seller"}))]}


def test_a_typeddict_with_total_false_requires_nothing():
    schema = OutputSchema(Partial)
    assert schema.json_schema["required"] == []
    assert schema.parse("{}") == {}


def test_a_recursive_dataclass_refers_to_itself_and_converts_at_every_depth():
    schema = OutputSchema(Tree)
    assert schema.json_schema["properties"]["children"]["items"] == {"$ref": "#"}
    tree = schema.parse('{"label": "a", "children": [{"label": "b", "children": [{"label": "c", "children": []}]}]}')
    assert tree.children[0].children[0] == Tree("c", [])
    with pytest.raises(OutputValidationError) as caught:
        schema.parse('{"label": "a", "children": [{"label": 1, "children": []}]}')
    assert caught.value.errors == ["$.children[0].label: 1 is not of type 'string'"]


def test_a_recursive_class_below_the_root_goes_to_defs():
    schema = OutputSchema(Holder)
    assert schema.json_schema["properties"]["first"] == {"$ref": "#/$defs/Tree"}
    assert schema.json_schema["$defs"]["Tree"]["properties"]["children"]["items"] == {"$ref": "#/$defs/Tree"}
    value = schema.parse('{"first": {"label": "a", "children": []}, "others": [{"label": "b", "children": []}]}')
    assert value == Holder(Tree("a", []), (Tree("b", []),))


def test_every_problem_is_reported_with_its_json_path_and_the_raw_text_is_kept():
    text = '{"number": 7, "currency": "GBP", "lines": [{"label": "tea", "price": "x"}], "extra": 1}'
    with pytest.raises(OutputValidationError) as caught:
        OutputSchema(Invoice).parse(text)
    error = caught.value
    assert sorted(error.errors) == sorted([
        "$.number: 7 is not of type 'string'",
        "$.currency: 'GBP' is not one of ['EUR', 'USD']",
        "$.lines[0].price: 'x' is not of type 'number'",
        "$: Additional properties are not allowed ('extra' was unexpected)",
    ])
    assert error.raw == text
    assert "4 problems" in str(error) and "'Invoice'" in str(error)
    assert isinstance(error, LlmError) and isinstance(error, AgcoreError) and not error.retryable


def test_text_that_is_not_json_is_a_validation_failure_keeping_the_text():
    with pytest.raises(OutputValidationError) as caught:
        OutputSchema(Invoice).parse("Sure! Here is the invoice.")
    assert caught.value.raw == "Sure! Here is the invoice."
    assert caught.value.errors[0].startswith("$: the answer is not valid JSON")


def test_nan_is_not_json():
    with pytest.raises(OutputValidationError, match="not valid JSON"):
        OutputSchema({"type": "object"}).parse('{"a": NaN}')


def test_one_code_fence_around_the_json_is_ignored():
    assert OutputSchema(Invoice).parse("```json\n" + GOOD_INVOICE + "\n```").number == "F-1"


def test_a_long_offending_value_is_cut_in_the_error_line():
    with pytest.raises(OutputValidationError) as caught:
        OutputSchema({"type": "object", "properties": {"a": {"type": "integer"}}}).parse(
            json.dumps({"a": "y" * 5000}))
    assert len(caught.value.errors[0]) <= len("$.a: ") + 300 and caught.value.errors[0].endswith("…")


def test_a_class_whose_constructor_refuses_the_value_is_a_validation_failure():
    @attrs.frozen
    class Positive:
        n: int = attrs.field(validator=attrs.validators.gt(0))

    with pytest.raises(OutputValidationError, match="does not convert") as caught:
        OutputSchema(Positive).parse('{"n": -1}')
    assert caught.value.errors[0].startswith("$: ")


def test_a_dict_schema_returns_the_decoded_json_and_takes_its_name_from_the_title():
    schema = OutputSchema({"title": "weather report", "type": "object", "properties": {"t": {"type": "number"}}})
    assert schema.parse('{"t": 21.5}') == {"t": 21.5}
    assert schema.name == "weather_report" and schema.output_type is None
    assert OutputSchema({"type": "object"}).name == "output"
    assert OutputSchema({"type": "object"}, name="x" * 80).name == "x" * 64


def test_a_schema_jsonschema_cannot_compile_fails_at_construction():
    with pytest.raises(ValueError, match="invalid JSON Schema"):
        OutputSchema({"type": "objekt"})
    with pytest.raises(ValueError, match="points at nothing"):
        OutputSchema({"type": "object", "properties": {"a": {"$ref": "#/$defs/Missing"}}})
    with pytest.raises(ValueError, match="only local"):
        OutputSchema({"$ref": "https://example.com/schema.json"})


def test_a_class_field_of_an_unsupported_type_is_named():
    @dataclasses.dataclass
    class Upload:
        name: str
        content: bytes

    with pytest.raises(TypeError, match=r"output= cannot express .*bytes.*Upload\.content"):
        OutputSchema(Upload)


@pytest.mark.parametrize("output", [int, List[int], object, "a string", 3, type("Plain", (), {})])
def test_something_output_does_not_take_is_a_type_error(output):
    with pytest.raises(TypeError, match="output= takes"):
        OutputSchema(output)


def test_of_passes_a_schema_through_and_can_rename_it():
    schema = OutputSchema(Invoice)
    assert OutputSchema.of(schema) is schema
    assert OutputSchema.of(schema, name="bill").name == "bill"
    assert OutputSchema.of(Invoice) == schema


def test_the_repr_is_short():
    assert repr(OutputSchema(Invoice)) == f"OutputSchema(name='Invoice', output_type={Invoice!r}, strict=True)"


def test_openai_strict_mode_makes_every_property_required_and_drops_defaults():
    fragment = openai_response_format(OutputSchema(Invoice))
    assert list(fragment) == ["type", "json_schema"] and fragment["type"] == "json_schema"
    body = fragment["json_schema"]
    assert list(body) == ["schema", "name", "strict"] and body["strict"] is True
    assert body["schema"]["required"] == ["number", "currency", "lines", "due"]
    line = body["schema"]["properties"]["lines"]["items"]
    assert line["required"] == ["label", "price", "quantity"] and "default" not in line["properties"]["quantity"]


@pytest.mark.parametrize("schema", [
    {"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": True},
    {"type": "object", "additionalProperties": {"type": "integer"}},
    {"type": "object", "properties": {"a": {"type": "array", "uniqueItems": True}}},
    {"type": "array", "items": {"type": "string"}},
    {"type": "object", "properties": {"a": {"not": {"type": "string"}}}},
])
def test_a_schema_outside_the_strict_subset_goes_as_given_with_strict_false(schema):
    spec = OutputSchema(schema)
    assert spec.strict is False
    assert openai_response_format(spec)["json_schema"]["schema"] == schema
    assert responses_text_format(spec)["strict"] is False


def test_a_set_field_keeps_a_class_out_of_strict_mode():
    assert OutputSchema(Party).strict is False


def test_the_responses_text_format_carries_the_same_schema():
    spec = OutputSchema(Invoice)
    fragment = responses_text_format(spec)
    assert list(fragment) == ["type", "strict", "name", "schema"]
    assert fragment["schema"] == openai_response_format(spec)["json_schema"]["schema"]


def test_the_anthropic_format_closes_objects_and_turns_a_type_list_into_any_of():
    fragment = anthropic_output_format(OutputSchema(Invoice))
    assert fragment["type"] == "json_schema"
    due = fragment["schema"]["properties"]["due"]
    assert due["anyOf"] == [{"type": "string"}, {"type": "null"}]
    assert fragment["schema"]["properties"]["lines"]["items"]["additionalProperties"] is False


def test_anthropic_moves_unsupported_keywords_into_the_description():
    spec = OutputSchema({"type": "object", "properties": {"n": {"type": "integer", "minimum": 1,
                                                                 "description": "A count"}}})
    assert anthropic_output_format(spec)["schema"]["properties"]["n"] == {
        "type": "integer", "description": "A count\n\n{minimum: 1}"}


def test_the_output_tool_uses_the_schema_and_is_forced():
    spec = OutputSchema(Invoice)
    tool_def, choice = output_tool(spec)
    assert tool_def.name == "final_result" and choice == ToolChoice.tool("final_result")
    assert tool_def.parameters == spec.json_schema
    assert "An invoice read from a document." in tool_def.description
    assert spec.parse_tool_input(json.loads(GOOD_INVOICE)).number == "F-1"
    assert spec.parse_tool_input(GOOD_INVOICE).number == "F-1"


def test_a_non_object_schema_is_wrapped_for_the_tool_mode_and_unwrapped_on_parse():
    spec = OutputSchema({"type": "array", "items": {"type": "integer"}, "$defs": {"x": {"type": "string"}}})
    tool_def, _ = output_tool(spec)
    assert tool_def.parameters["properties"]["response"] == {"type": "array", "items": {"type": "integer"}}
    assert tool_def.parameters["required"] == ["response"] and "$defs" in tool_def.parameters
    assert spec.parse_tool_input({"response": [1, 2]}) == [1, 2]
    with pytest.raises(OutputValidationError, match="'response'"):
        spec.parse_tool_input({"other": [1]})
    with pytest.raises(OutputValidationError) as caught:
        spec.parse_tool_input({"response": ["x"]})
    assert caught.value.errors == ["$[0]: 'x' is not of type 'integer'"]


def test_tool_arguments_that_are_not_json_are_a_validation_failure():
    with pytest.raises(OutputValidationError) as caught:
        OutputSchema(Invoice).parse_tool_input('{"number": ')
    assert caught.value.raw == '{"number": '


def test_the_prompted_mode_text_holds_the_schema():
    text = prompted_instructions(OutputSchema(Invoice))
    assert "Invoice" in text and "JSON Schema" in text
    assert json.loads(text[text.index("{"):]) == OutputSchema(Invoice).json_schema


def test_the_retry_text_lists_the_problems_and_caps_them():
    error = OutputValidationError("bad", errors=[f"$.a[{i}]: wrong" for i in range(25)], raw="x")
    text = retry_instructions(error)
    assert "- $.a[0]: wrong" in text and "- $.a[19]: wrong" in text and "$.a[20]" not in text
    assert "and 5 more" in text


def test_the_output_errors_pickle_with_their_facts():
    error = pickle.loads(pickle.dumps(OutputValidationError("bad", errors=["$: x"], raw="{")))
    assert (error.message, error.errors, error.raw, error.retryable) == ("bad", ["$: x"], "{", False)
    refused = pickle.loads(pickle.dumps(OutputRefusedError("refused", refusal="I can't help", status_code=200)))
    assert (refused.refusal, refused.status_code, refused.retryable) == ("I can't help", 200, False)
    assert isinstance(refused, LlmError)


def test_dict_values_literals_and_tuples_convert():
    @dataclasses.dataclass
    class Shape:
        kind: Literal["circle", "square"]
        sizes: Dict[str, Tuple[int, int]]

    assert OutputSchema(Shape).parse('{"kind": "circle", "sizes": {"a": [1, 2]}}') == Shape("circle", {"a": (1, 2)})


def test_building_a_schema_for_a_plain_class_never_imports_pydantic():
    code = (
        "import sys, dataclasses\n"
        "from agcore_sync.llm.output import OutputSchema\n"
        "@dataclasses.dataclass\nclass A:\n    x: int\n"
        "assert OutputSchema(A).parse('{\"x\": 1}') == A(1)\n"
        "print('pydantic' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_dump_turns_a_parsed_value_back_into_plain_json_that_parses_to_the_same_value():
    schema = OutputSchema(Invoice)
    invoice = schema.parse(GOOD_INVOICE)
    data = schema.dump(invoice)
    assert data == {"number": "F-1", "currency": "EUR", "lines": [{"label": "tea", "price": 2.5, "quantity": 1}],
                    "due": None}
    assert schema.parse(json.dumps(data)) == invoice
    summary = OutputSchema(Summary)
    value = summary.parse('{"title": "T", "parties": [{"name": "A", "roles": ["b", "a"]}]}')
    assert summary.dump(value) == {"title": "T", "parties": [{"name": "A", "roles": ["a", "b"]}]}
    with pytest.raises(ValueError, match="not JSON data"):
        schema.dump(object())


def test_of_builds_a_class_schema_once_and_a_dict_schema_each_time():
    assert OutputSchema.of(Line) is OutputSchema.of(Line)
    schema = {"type": "object"}
    assert OutputSchema.of(schema) is not OutputSchema.of(schema)
    assert OutputSchema.of(Line, name="row") is not OutputSchema.of(Line)


def test_changing_the_callers_dict_afterwards_changes_nothing():
    given = {"type": "object", "properties": {"n": {"type": "integer"}}}
    schema = OutputSchema(given)
    given["properties"]["n"]["type"] = "string"
    assert schema.parse('{"n": 1}') == {"n": 1}
    assert schema.json_schema["properties"]["n"]["type"] == "integer"
