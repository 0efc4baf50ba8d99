"""ImageBlock and DocumentBlock: constructors, checks before any request, reprs; block content of tool results."""

from __future__ import annotations

import base64
import os

import pytest

from agcore_sync import Message, Role, TextBlock, ToolResultBlock
from agcore_sync.llm import media
from agcore_sync.llm.media import DocumentBlock, ImageBlock

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 24
JPEG = b"\xff\xd8\xff\xe0" + b"\x00" * 24
GIF = b"GIF89a" + b"\x00" * 10
WEBP = b"RIFF\x00\x00\x00\x00WEBPVP8 "
PDF = b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n"


@pytest.mark.parametrize("name, content, media_type", [
    ("a.png", PNG, "image/png"), ("a.jpg", JPEG, "image/jpeg"), ("a.gif", GIF, "image/gif"),
    ("a.webp", WEBP, "image/webp"), ("no_extension", PNG, "image/png"), ("wrong.jpg", PNG, "image/png"),
])
def test_from_path_reads_an_image_and_tells_its_type_by_its_bytes_first(tmp_path, name, content, media_type):
    path = tmp_path / name
    path.write_bytes(content)
    block = ImageBlock.from_path(path)
    assert block.media_type == media_type
    assert base64.b64decode(block.data) == content and block.url is None


def test_from_path_refuses_a_file_that_is_not_an_image(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_bytes(b"hello")
    with pytest.raises(ValueError, match=r"notes\.txt.*not of a supported type"):
        ImageBlock.from_path(path)


def test_from_path_refuses_an_image_over_the_limit_without_reading_it(tmp_path, monkeypatch):
    path = tmp_path / "big.png"
    with open(path, "wb") as handle:  # sparse: the size is real, the disk use is not
        handle.write(PNG)
        handle.truncate(4 * 1024 * 1024)
    opened = []
    monkeypatch.setattr(media, "open", lambda *args, **kwargs: opened.append(args), raising=False)
    with pytest.raises(ValueError, match=r"big\.png.*over the 5 MB limit"):
        ImageBlock.from_path(path)
    assert not opened


def test_an_image_just_under_the_limit_is_accepted(tmp_path):
    path = tmp_path / "ok.png"
    with open(path, "wb") as handle:
        handle.write(PNG)
        handle.truncate(media.MAX_IMAGE_BASE64_CHARS // 4 * 3)
    assert len(ImageBlock.from_path(path).data) == media.MAX_IMAGE_BASE64_CHARS


def test_from_path_of_a_missing_file_is_a_value_error_naming_it(tmp_path):
    with pytest.raises(ValueError, match=r"cannot read image file .*missing\.png"):
        ImageBlock.from_path(tmp_path / "missing.png")


def test_from_bytes_checks_type_and_size():
    assert ImageBlock.from_bytes(PNG, "image/png").data == base64.b64encode(PNG).decode()
    with pytest.raises(ValueError, match="media_type must be one of"):
        ImageBlock.from_bytes(PNG, "image/tiff")
    with pytest.raises(ValueError, match="over the 5 MB limit"):
        ImageBlock.from_bytes(bytes(media.MAX_IMAGE_BASE64_CHARS), "image/png")
    with pytest.raises(TypeError, match="takes bytes"):
        ImageBlock.from_bytes("not bytes", "image/png")


def test_from_url_keeps_http_urls_and_guesses_the_type_from_the_path():
    assert ImageBlock.from_url("https://example.com/cat.JPG?x=1") == ImageBlock(
        "image/jpeg", url="https://example.com/cat.JPG?x=1")
    assert ImageBlock.from_url("http://example.com/cat").media_type is None


def test_a_data_url_becomes_base64_data():
    payload = base64.b64encode(GIF).decode()
    assert ImageBlock.from_url(f"data:image/gif;base64,{payload}") == ImageBlock("image/gif", data=payload)
    with pytest.raises(ValueError, match="data URL must be"):
        ImageBlock.from_url("data:image/gif,plain")


@pytest.mark.parametrize("url", ["file:///etc/passwd", "ftp://example.com/a.png", "javascript:alert(1)", "a.png"])
def test_an_image_url_with_another_scheme_is_refused(url):
    with pytest.raises(ValueError, match="http, https or data URL"):
        ImageBlock.from_url(url)
    with pytest.raises(ValueError, match="http, https or data URL"):
        ImageBlock("image/png", url=url)


@pytest.mark.parametrize("kwargs, message", [
    ({"media_type": "image/png"}, "exactly one of data= and url="),
    ({"media_type": "image/png", "data": "iVBO", "url": "https://x/a.png"}, "exactly one"),
    ({"media_type": "image/png", "data": "not base64!"}, "not valid base64"),
    ({"media_type": None, "data": "iVBO"}, "needs a media_type"),
    ({"media_type": "image/bmp", "data": "iVBO"}, "media_type must be one of"),
])
def test_the_image_constructor_checks_its_fields(kwargs, message):
    with pytest.raises(ValueError, match=message):
        ImageBlock(**kwargs)


def test_reprs_show_sizes_never_the_data_nor_a_url_query():
    block = ImageBlock.from_bytes(PNG, "image/png")
    assert repr(block) == f"ImageBlock(media_type='image/png', data=<{len(block.data)} base64 chars>)"
    assert block.data not in repr(block)
    signed = ImageBlock.from_url("https://user:pw@bucket.example.com/a.png?X-Amz-Signature=abc")
    assert repr(signed) == "ImageBlock(media_type='image/png', url='https://bucket.example.com/a.png?…')"
    doc = DocumentBlock.from_bytes(PDF, "application/pdf", title="Q3")
    assert repr(doc) == f"DocumentBlock(media_type='application/pdf', data=<{len(doc.data)} base64 chars>, title='Q3')"
    text_doc = DocumentBlock("text/plain", text="secret terms")
    assert repr(text_doc) == "DocumentBlock(media_type='text/plain', text=<12 chars>)"


def test_a_pdf_or_text_file_becomes_a_document(tmp_path):
    pdf = tmp_path / "report.pdf"
    pdf.write_bytes(PDF)
    notes = tmp_path / "notes.md"
    notes.write_text("# Notes é", encoding="utf-8")
    assert DocumentBlock.from_path(pdf, title="Report") == DocumentBlock(
        "application/pdf", data=base64.b64encode(PDF).decode(), title="Report")
    assert DocumentBlock.from_path(notes) == DocumentBlock("text/plain", text="# Notes é")


def test_a_document_file_of_another_type_or_encoding_is_refused(tmp_path):
    image = tmp_path / "a.png"
    image.write_bytes(PNG)
    with pytest.raises(ValueError, match="not of a supported type"):
        DocumentBlock.from_path(image)
    latin = tmp_path / "latin.txt"
    latin.write_bytes("café".encode("latin-1"))
    with pytest.raises(ValueError, match="not UTF-8"):
        DocumentBlock.from_path(latin)


def test_a_document_over_the_limit_is_refused(tmp_path):
    path = tmp_path / "huge.pdf"
    with open(path, "wb") as handle:
        handle.write(PDF)
        handle.truncate(25 * 1024 * 1024)
    with pytest.raises(ValueError, match="over the 32 MB limit"):
        DocumentBlock.from_path(path)
    with pytest.raises(ValueError, match="over the 32 MB limit"):
        DocumentBlock.from_bytes(bytes(25 * 1024 * 1024), "application/pdf")


def test_document_urls_and_sources_are_checked():
    assert DocumentBlock.from_url("https://example.com/a.pdf").url == "https://example.com/a.pdf"
    payload = base64.b64encode(PDF).decode()
    assert DocumentBlock.from_url(f"data:application/pdf;base64,{payload}").data == payload
    with pytest.raises(ValueError, match="must hold application/pdf"):
        DocumentBlock.from_url("data:image/png;base64,iVBO")
    with pytest.raises(ValueError, match="http, https or data URL"):
        DocumentBlock.from_url("file:///tmp/a.pdf")
    with pytest.raises(ValueError, match="exactly one of data=, url= and text="):
        DocumentBlock("application/pdf")
    with pytest.raises(ValueError, match="has media_type 'text/plain'"):
        DocumentBlock("application/pdf", text="x")
    with pytest.raises(ValueError, match="media_type must be one of"):
        DocumentBlock.from_bytes(b"x", "text/html")


def test_message_user_takes_blocks_after_the_text():
    image = ImageBlock.from_bytes(PNG, "image/png")
    message = Message.user("What is this?", image)
    assert message.content == (TextBlock("What is this?"), image) and message.role is Role.USER
    assert message.text == "What is this?" and message.tool_uses == ()
    assert Message.user("", image).content == (image,)
    assert Message.user("").content == (TextBlock(""),)


def test_a_tool_result_holds_a_str_or_text_and_image_blocks():
    image = ImageBlock.from_bytes(PNG, "image/png")
    block = ToolResultBlock("c1", [TextBlock("chart:"), image])
    assert block.content == (TextBlock("chart:"), image) and block.text == "chart:"
    assert ToolResultBlock("c1", image).content == (image,)
    assert ToolResultBlock("c1", "plain").content == "plain" and ToolResultBlock("c1", "plain").text == "plain"
    assert Message.tool_result("c1", (image,)).content[0].content == (image,)
    with pytest.raises(TypeError, match="TextBlock / ImageBlock"):
        ToolResultBlock("c1", [DocumentBlock("text/plain", text="x")])
    with pytest.raises(TypeError, match="TextBlock / ImageBlock"):
        ToolResultBlock("c1", [42])


def test_importing_the_types_alone_still_reads_media_blocks():
    import subprocess
    import sys

    code = (
        "from agcore_sync.llm.types import ContentBlock\n"
        "print(type(ContentBlock.from_dict({'type': 'image', 'media_type': 'image/png', 'data': 'iVBO'})).__name__)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=os.getcwd()).stdout
    assert out.strip() == "ImageBlock"
