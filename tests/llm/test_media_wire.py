"""Images, documents and block tool results in each provider's documented wire shape."""

from __future__ import annotations

import pytest

from agcore_sync.llm._media_wire import (
    anthropic_block,
    anthropic_tool_result_content,
    chat_part,
    chat_tool_result,
    responses_part,
    responses_tool_output,
)
from agcore_sync.llm.media import DocumentBlock, ImageBlock
from agcore_sync.llm.types import TextBlock, ToolUseBlock

PNG = ImageBlock("image/png", data="iVBORw0KGgo=")
URL_IMAGE = ImageBlock.from_url("https://example.com/cat.jpg")
PDF = DocumentBlock("application/pdf", data="JVBERi0=", title="Spec")
PDF_URL = DocumentBlock.from_url("https://example.com/spec.pdf")
TEXT_DOC = DocumentBlock("text/plain", text="Terms.", title="Terms")


def test_anthropic_blocks_use_base64_url_and_text_sources():
    assert anthropic_block(PNG) == {
        "type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}
    assert anthropic_block(URL_IMAGE) == {"type": "image", "source": {"type": "url", "url": "https://example.com/cat.jpg"}}
    assert anthropic_block(ImageBlock("image/gif", url="data:image/gif;base64,R0lG")) == {
        "type": "image", "source": {"type": "base64", "media_type": "image/gif", "data": "R0lG"}}
    assert anthropic_block(PDF) == {
        "type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0="},
        "title": "Spec"}
    assert anthropic_block(PDF_URL) == {"type": "document", "source": {"type": "url", "url": "https://example.com/spec.pdf"}}
    assert anthropic_block(TEXT_DOC) == {
        "type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "Terms."}, "title": "Terms"}


def test_an_anthropic_tool_result_keeps_a_str_or_lists_its_blocks():
    assert anthropic_tool_result_content("42") == "42"
    assert anthropic_tool_result_content((TextBlock("chart:"), PNG)) == [
        {"type": "text", "text": "chart:"}, anthropic_block(PNG)]


def test_chat_parts_use_data_urls_and_file_data():
    assert chat_part(PNG) == {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}
    assert chat_part(URL_IMAGE) == {"type": "image_url", "image_url": {"url": "https://example.com/cat.jpg"}}
    assert chat_part(PDF) == {"type": "file", "file": {"filename": "Spec",
                                                       "file_data": "data:application/pdf;base64,JVBERi0="}}
    assert chat_part(DocumentBlock("application/pdf", data="JVBERi0="))["file"]["filename"] == "document.pdf"
    assert chat_part(TEXT_DOC) == {"type": "text", "text": "Terms\n\nTerms."}
    with pytest.raises(ValueError, match="not by URL"):
        chat_part(PDF_URL)


def test_a_chat_tool_result_splits_text_from_images():
    assert chat_tool_result("42") == ("42", [])
    assert chat_tool_result((TextBlock("chart "), PNG, TextBlock("above"))) == ("chart above", [chat_part(PNG)])


def test_responses_parts_use_input_types():
    assert responses_part(PNG) == {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo=",
                                   "detail": "auto"}
    assert responses_part(PDF) == {"type": "input_file", "filename": "Spec",
                                   "file_data": "data:application/pdf;base64,JVBERi0="}
    assert responses_part(PDF_URL) == {"type": "input_file", "file_url": "https://example.com/spec.pdf"}
    assert responses_part(TEXT_DOC) == {"type": "input_text", "text": "Terms\n\nTerms."}
    assert responses_tool_output("42") == "42"
    assert responses_tool_output((TextBlock("a"), URL_IMAGE)) == [
        {"type": "input_text", "text": "a"},
        {"type": "input_image", "image_url": "https://example.com/cat.jpg", "detail": "auto"}]


@pytest.mark.parametrize("translate", [anthropic_block, chat_part, responses_part])
def test_a_block_without_a_media_form_is_a_type_error(translate):
    with pytest.raises(TypeError, match="ToolUseBlock"):
        translate(ToolUseBlock("c1", "f", {}))
