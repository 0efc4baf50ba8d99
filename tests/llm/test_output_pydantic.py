"""OutputSchema with pydantic models (pydantic is a test-only dependency)."""

from __future__ import annotations

import pytest

from agcore_sync.llm.errors import OutputValidationError
from agcore_sync.llm.output import OutputSchema

pydantic = pytest.importorskip("pydantic")


class Order(pydantic.BaseModel):
    item: str
    amount: int = pydantic.Field(gt=0)

    @pydantic.field_validator("item")
    @classmethod
    def no_shouting(cls, value: str) -> str:
        if value.isupper():
            raise ValueError("no shouting")
        return value


def test_a_model_is_parsed_through_model_validate_json():
    assert OutputSchema(Order).parse('{"item": "tea", "amount": 2}') == Order(item="tea", amount=2)


def test_a_model_is_always_strict_as_the_sdk_sends_it():
    assert OutputSchema(Order).strict is True and OutputSchema(Order).name == "Order"


def test_schema_problems_come_from_jsonschema_with_paths():
    with pytest.raises(OutputValidationError) as caught:
        OutputSchema(Order).parse('{"item": 1, "amount": 0}')
    assert sorted(caught.value.errors) == ["$.amount: 0 is less than or equal to the minimum of 0",
                                           "$.item: 1 is not of type 'string'"]


def test_a_validator_that_refuses_gives_its_pydantic_path():
    with pytest.raises(OutputValidationError) as caught:
        OutputSchema(Order).parse('{"item": "TEA", "amount": 1}')
    assert caught.value.errors == ["$.item: Value error, no shouting"]


def test_dump_uses_model_dump_in_json_mode():
    schema = OutputSchema(Order)
    assert schema.dump(schema.parse('{"item": "tea", "amount": 2}')) == {"item": "tea", "amount": 2}
