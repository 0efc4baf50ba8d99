"""Structured output and images: describe the answer with a dataclass, check what the model sent."""

from __future__ import annotations

import dataclasses
import enum
import json
from typing import List, Optional

from agcore_sync import (
    ImageBlock,
    Message,
    OutputSchema,
    OutputValidationError,
    anthropic_output_format,
    openai_response_format,
)


class Currency(enum.Enum):
    EUR = "EUR"
    USD = "USD"


@dataclasses.dataclass
class Line:
    """One line of an invoice.

    Attributes:
        price: the unit price.
    """

    label: str
    price: float
    quantity: int = 1


@dataclasses.dataclass
class Invoice:
    """An invoice read from a photo."""

    number: str
    currency: Currency
    lines: List[Line]
    due: Optional[str] = None


schema = OutputSchema(Invoice)

# What a provider sends for it (OpenAI strict mode; Anthropic output_config.format).
print(json.dumps(openai_response_format(schema)["json_schema"]["schema"]["required"]))
print(anthropic_output_format(schema)["type"])

# The question, with the photo (a tiny stand-in PNG here; use ImageBlock.from_path("invoice.png")).
photo = ImageBlock.from_bytes(b"\x89PNG\r\n\x1a\n" + bytes(16), "image/png")
question = Message.user("Read this invoice.", photo)
print(question.content[1])  # ImageBlock(media_type='image/png', data=<32 base64 chars>)

# A good answer becomes an Invoice, nested lines and enum included.
invoice = schema.parse('{"number": "F-17", "currency": "EUR", "lines": [{"label": "tea", "price": 2.5}]}')
print(invoice.lines[0].price * invoice.lines[0].quantity, invoice.currency.name)

# A bad one lists every problem with its JSON path; the loops send these back to the model.
try:
    schema.parse('{"number": 17, "currency": "GBP", "lines": []}')
except OutputValidationError as error:
    for line in error.errors:
        print(line)
