"""Pure translations of images, documents and block tool results into each wire format.

For the providers to call (nothing here sends anything):

==========================  ==============================================  ==========================
block                       Anthropic Messages                              OpenAI Chat / Responses
==========================  ==============================================  ==========================
ImageBlock, base64          ``image``, source ``base64``                    ``image_url`` / ``input_image``
                                                                            with a data URL
ImageBlock, URL             ``image``, source ``url``                       the URL itself
DocumentBlock, PDF data     ``document``, source ``base64``                 ``file`` / ``input_file``
                                                                            with ``file_data`` (a data URL)
DocumentBlock, PDF URL      ``document``, source ``url``                    Chat: refused (it takes no
                                                                            file URL); ``input_file``
                                                                            with ``file_url``
DocumentBlock, text         ``document``, source ``text``                   a text part (title first)
==========================  ==============================================  ==========================

Tool results: Anthropic's ``tool_result`` and the Responses API's
``function_call_output`` take a list of parts; a Chat Completions ``tool``
message takes text only, so :func:`chat_tool_result` returns the text and
the image parts separately (the provider sends those in a ``user`` message
right after the tool messages).

Blocks are told apart by their ``type`` tag (``"image"``, ``"document"``),
as :class:`~agcore_sync.llm.content.ContentBlock` registers them: a request
without images or documents never loads :mod:`agcore_sync.llm.media`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, List, Tuple, Union

from agcore_sync.llm.types import ContentBlock, TextBlock

if TYPE_CHECKING:  # pragma: no cover - media loads with the first image or document
    from agcore_sync.llm.media import DocumentBlock, ImageBlock

__all__ = [
    "anthropic_block",
    "anthropic_tool_result_content",
    "chat_part",
    "chat_tool_result",
    "responses_part",
    "responses_tool_output",
]

#: The file name OpenAI gets for a PDF without a title (it requires one with ``file_data``).
DEFAULT_PDF_NAME = "document.pdf"


def _data_url(media_type: str, data: str) -> str:
    return f"data:{media_type};base64,{data}"


def _image_source(block: ImageBlock) -> Dict[str, Any]:
    if block.data is not None:
        return {"type": "base64", "media_type": block.media_type, "data": block.data}
    url = block.url or ""
    if url.lower().startswith("data:"):
        header, _, payload = url[5:].partition(",")
        return {"type": "base64", "media_type": header.split(";")[0].lower(), "data": payload}
    return {"type": "url", "url": url}


def _image_url(block: ImageBlock) -> str:
    if block.data is not None:
        return _data_url(block.media_type or "", block.data)
    return block.url or ""


def _titled(block: DocumentBlock) -> str:
    return f"{block.title}\n\n{block.text}" if block.title else (block.text or "")


def anthropic_block(block: ContentBlock) -> Dict[str, Any]:
    """Return an Anthropic content block for a text, image or document block."""
    if isinstance(block, TextBlock):
        return {"type": "text", "text": block.text}
    if block.type == "image":
        return {"type": "image", "source": _image_source(block)}
    if block.type == "document":
        if block.text is not None:
            source: Dict[str, Any] = {"type": "text", "media_type": "text/plain", "data": block.text}
        elif block.data is not None:
            source = {"type": "base64", "media_type": "application/pdf", "data": block.data}
        elif (block.url or "").lower().startswith("data:"):
            source = {"type": "base64", "media_type": "application/pdf", "data": (block.url or "").partition(",")[2]}
        else:
            source = {"type": "url", "url": block.url}
        result: Dict[str, Any] = {"type": "document", "source": source}
        if block.title is not None:
            result["title"] = block.title
        return result
    raise TypeError(f"no Anthropic media block for {type(block).__name__}")


def anthropic_tool_result_content(content: Union[str, Tuple[ContentBlock, ...]]) -> Union[str, List[Dict[str, Any]]]:
    """Return a ``tool_result``'s ``content``: the str itself, or a list of text and image blocks."""
    if isinstance(content, str):
        return content
    return [anthropic_block(block) for block in content]


def chat_part(block: ContentBlock) -> Dict[str, Any]:
    """Return a Chat Completions content part for a text, image or document block.

    Raises:
        ValueError: a PDF given by URL (Chat Completions takes ``file_data``
            or an uploaded ``file_id``, not a URL).
    """
    if isinstance(block, TextBlock):
        return {"type": "text", "text": block.text}
    if block.type == "image":
        return {"type": "image_url", "image_url": {"url": _image_url(block)}}
    if block.type == "document":
        if block.text is not None:
            return {"type": "text", "text": _titled(block)}
        if block.data is None and not (block.url or "").lower().startswith("data:"):
            raise ValueError(
                "OpenAI Chat Completions takes a PDF as data, not by URL: build the DocumentBlock with "
                "from_path() or from_bytes()"
            )
        file_data = _data_url("application/pdf", block.data) if block.data is not None else block.url
        return {"type": "file", "file": {"filename": block.title or DEFAULT_PDF_NAME, "file_data": file_data}}
    raise TypeError(f"no Chat Completions content part for {type(block).__name__}")


def chat_tool_result(content: Union[str, Tuple[ContentBlock, ...]]) -> Tuple[str, List[Dict[str, Any]]]:
    """Split a tool result for Chat Completions: the ``tool`` message's text, and image parts.

    The image parts (empty for a str) go in a ``user`` message after the
    round's tool messages, since a ``tool`` message holds text only.
    """
    if isinstance(content, str):
        return content, []
    text = "".join(block.text for block in content if isinstance(block, TextBlock))
    images = [chat_part(block) for block in content if block.type == "image"]
    return text, images


def responses_part(block: ContentBlock) -> Dict[str, Any]:
    """Return a Responses API input part (``input_text``, ``input_image``, ``input_file``)."""
    if isinstance(block, TextBlock):
        return {"type": "input_text", "text": block.text}
    if block.type == "image":
        return {"type": "input_image", "image_url": _image_url(block), "detail": "auto"}
    if block.type == "document":
        if block.text is not None:
            return {"type": "input_text", "text": _titled(block)}
        url = block.url or ""
        if block.data is not None or url.lower().startswith("data:"):
            file_data = _data_url("application/pdf", block.data) if block.data is not None else url
            return {"type": "input_file", "filename": block.title or DEFAULT_PDF_NAME, "file_data": file_data}
        return {"type": "input_file", "file_url": url}
    raise TypeError(f"no Responses API input part for {type(block).__name__}")


def responses_tool_output(content: Union[str, Tuple[ContentBlock, ...]]) -> Union[str, List[Dict[str, Any]]]:
    """Return a ``function_call_output``'s ``output``: the str itself, or a list of input parts."""
    if isinstance(content, str):
        return content
    return [responses_part(block) for block in content]
