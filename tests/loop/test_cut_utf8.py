"""Cutting a long tool result: on a character boundary, the count of cut bytes exact, ASCII cut without copies."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from agcore_sync.loop._results import cut_utf8


def by_encoding(text: str, max_bytes: int) -> str:
    """The plain definition: encode all, cut the bytes, drop a broken last character."""
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= max_bytes:
        return text
    head = data[:max_bytes].decode("utf-8", "ignore")
    cut = len(data) - len(head.encode("utf-8", "surrogatepass"))
    return f"{head}\n[... {cut} bytes cut: the result was longer than {max_bytes} bytes]"


@given(st.text(alphabet=st.sampled_from("ab\né中😀"), max_size=60), st.integers(0, 80))
def test_the_cut_matches_its_definition_for_any_text(text, max_bytes):
    assert cut_utf8(text, max_bytes) == by_encoding(text, max_bytes)


@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=60), st.integers(0, 80))
def test_ascii_text_is_cut_the_same_way(text, max_bytes):
    assert cut_utf8(text, max_bytes) == by_encoding(text, max_bytes)


def test_a_ten_megabyte_ascii_result_keeps_its_head_and_counts_the_rest():
    text = "x" * 10_000_000
    cut = cut_utf8(text, 100_000)
    assert cut.startswith("x" * 100_000 + "\n[... 9900000 bytes cut")


def test_no_limit_or_a_short_text_is_returned_as_it_is():
    text = "é" * 10
    assert cut_utf8(text, None) is text
    assert cut_utf8(text, 20) is text
