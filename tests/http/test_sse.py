"""The SSE parser against the WHATWG event-stream rules, fed in every way a socket could cut it."""

from __future__ import annotations

import itertools
from typing import List

import pytest

from agcore_sync._http.sse import SseEvent, SseParser, iter_sse_events
from tests.support.sse import parse, split_at


def every_two_way_split(body: bytes):
    for i in range(len(body) + 1):
        yield split_at(body, [i])


def every_three_way_split(body: bytes):
    for i, j in itertools.combinations_with_replacement(range(len(body) + 1), 2):
        yield split_at(body, [i, j])


def one_byte_chunks(body: bytes) -> List[bytes]:
    return [body[i:i + 1] for i in range(len(body))]


def msg(data: str, event: str = "message", id: str = "", retry=None) -> SseEvent:
    return SseEvent(event=event, data=data, id=id, retry=retry)


# -- fields ------------------------------------------------------------------


def test_data_lines_of_one_event_are_joined_with_newlines():
    assert parse(b"data: first\ndata: second\ndata: third\n\n") == [msg("first\nsecond\nthird")]


def test_data_with_colons_keeps_everything_after_the_first_colon():
    assert parse(b'data: {"a": "b:c"}\n\n') == [msg('{"a": "b:c"}')]


def test_empty_data_lines_contribute_empty_lines():
    # WHATWG example: "data" alone then a blank line is an event whose data is "";
    # two empty data lines make "\n".
    assert parse(b"data\n\ndata\ndata\n\n") == [msg(""), msg("\n")]


def test_an_empty_data_field_still_dispatches_an_event():
    assert parse(b"data:\n\n") == [msg("")]


def test_each_blank_line_dispatches_a_separate_event():
    assert parse(b"data: a\n\ndata: b\n\n") == [msg("a"), msg("b")]


def test_the_event_field_sets_the_type_of_that_event_only():
    events = parse(b"event: delta\ndata: 1\n\ndata: 2\n\n")
    assert events == [msg("1", event="delta"), msg("2")]


def test_the_last_event_field_before_dispatch_wins():
    assert parse(b"event: a\nevent: b\ndata: x\n\n") == [msg("x", event="b")]


def test_an_empty_event_field_gives_the_message_type():
    assert parse(b"event: custom\nevent:\ndata: x\n\n") == [msg("x")]


def test_an_id_persists_across_later_events_until_changed():
    events = parse(b"id: 1\ndata: a\n\ndata: b\n\nid: 2\ndata: c\n\ndata: d\n\n")
    assert [e.id for e in events] == ["1", "1", "2", "2"]


def test_an_id_set_by_an_event_without_data_applies_to_the_next_event():
    events = parse(b"id: 7\n\ndata: a\n\n")
    assert events == [msg("a", id="7")]


def test_an_empty_id_field_resets_the_last_event_id():
    parser = SseParser()
    events = parser.feed(b"id: 5\ndata: a\n\nid\ndata: b\n\nid: 6\ndata: c\n\nid:\ndata: d\n\n")
    assert [e.id for e in events] == ["5", "", "6", ""]
    assert parser.last_event_id == ""


def test_an_id_containing_nul_is_ignored_and_the_previous_id_kept():
    parser = SseParser()
    events = parser.feed(b"id: good\ndata: a\n\nid: bad\x00id\ndata: b\n\n")
    assert [e.id for e in events] == ["good", "good"]
    assert parser.last_event_id == "good"


def test_the_parser_exposes_the_last_event_id_for_reconnection():
    parser = SseParser()
    parser.feed(b"id: 41\ndata: a\n\nid: 42\ndata: b\n\n")
    assert parser.last_event_id == "42"


def test_retry_with_ascii_digits_sets_the_reconnection_time():
    parser = SseParser()
    events = parser.feed(b"retry: 1500\ndata: a\n\ndata: b\n\n")
    # The event that carried retry reports it; the reconnection time stays.
    assert events == [msg("a", retry=1500), msg("b")]
    assert parser.reconnection_time == 1500


def test_a_later_retry_replaces_the_reconnection_time():
    parser = SseParser()
    parser.feed(b"retry: 10\n\nretry: 0020\ndata: x\n\n")
    assert parser.reconnection_time == 20


@pytest.mark.parametrize(
    "value",
    ["12a", "1.5", "-1", "+1", " 1", "1 ", "", "abc", "\u0661\u0662", "\u00b2", "\uff11"],
    ids=["trailing-letter", "decimal", "negative", "plus", "two-spaces", "trailing-space", "empty",
         "letters", "arabic-indic-digits", "superscript", "fullwidth-digit"],
)
def test_retry_that_is_not_only_ascii_digits_is_ignored(value):
    parser = SseParser()
    events = parser.feed(b"retry: 300\n\n" + f"retry: {value}\ndata: x\n\n".encode())
    assert events == [msg("x")]
    assert parser.reconnection_time == 300


def test_comment_lines_are_ignored_even_inside_an_event():
    body = b": keep-alive\n:\ndata: a\n: a comment between data lines\ndata: b\n\n: trailing\n"
    assert parse(body) == [msg("a\nb")]


def test_a_stream_of_only_comments_produces_no_event():
    assert parse(b": ping\n\n: ping\n\n") == []


def test_a_field_without_colon_is_that_name_with_an_empty_value():
    # "event" alone resets the type; "id" alone clears the id; "data" alone adds "".
    body = b"id: 3\nevent: old\nevent\nid\ndata\ndata: x\n\n"
    assert parse(body) == [msg("\nx")]


def test_a_single_leading_space_is_removed_but_not_two():
    assert parse(b"data:  two spaces\n\n") == [msg(" two spaces")]


def test_no_space_after_the_colon_is_fine():
    assert parse(b"data:x\nevent:y\nid:z\n\n") == [msg("x", event="y", id="z")]


def test_only_a_space_is_stripped_not_a_tab():
    assert parse(b"data:\tx\n\n") == [msg("\tx")]


def test_trailing_spaces_are_kept():
    assert parse(b"data: x  \n\n") == [msg("x  ")]


def test_unknown_fields_are_ignored():
    body = b"foo: bar\nData: upper\nDATA: upper\ncomment: x\ndata: kept\nretries: 5\n\n"
    parser = SseParser()
    assert parser.feed(body) == [msg("kept")]
    assert parser.reconnection_time is None


def test_an_unknown_field_alone_does_not_dispatch_an_event():
    assert parse(b"foo: bar\n\n") == []


def test_an_event_without_data_is_not_dispatched_and_its_type_does_not_leak():
    assert parse(b"event: ping\n\nevent: ping\nid: 9\n\ndata: x\n\n") == [msg("x", id="9")]


# -- line ends -----------------------------------------------------------------


LINE_ENDS = {"lf": "\n", "cr": "\r", "crlf": "\r\n"}


@pytest.mark.parametrize("eol", LINE_ENDS.values(), ids=LINE_ENDS.keys())
def test_every_kind_of_line_end_gives_the_same_events(eol):
    text = eol.join(["event: e", "data: a", "data: b", "", ": c", "id: 1", "data: z", "", ""])
    assert parse(text.encode()) == [msg("a\nb", event="e"), msg("z", id="1")]


def test_mixed_line_ends_in_one_stream_are_all_line_ends():
    body = b"data: a\rdata: b\r\ndata: c\n\r\ndata: d\r\rdata: e\n\n"
    assert parse(body) == [msg("a\nb\nc"), msg("d"), msg("e")]


def test_cr_followed_by_crlf_is_two_line_ends():
    assert parse(b"data: a\r\r\n") == [msg("a")]
    assert SseParser().feed(b"data: a\r\r\n") == [msg("a")]


def test_lf_followed_by_cr_is_two_line_ends():
    assert SseParser().feed(b"data: a\n\r") == [msg("a")]


def test_cr_at_the_end_of_one_chunk_and_lf_at_the_start_of_the_next_is_one_line_end():
    # Were the CR and LF counted as two line ends, the blank line would
    # dispatch "a" alone, and then "b" alone.
    assert parse(b"data: a\r", b"\ndata: b\r\n\r\n") == [msg("a\nb")]


def test_a_split_crlf_survives_empty_chunks_between_its_halves():
    assert parse(b"data: a\r", b"", b"", b"\ndata: b\r\n", b"\r\n") == [msg("a\nb")]


def test_a_cr_ending_a_chunk_then_a_cr_starting_the_next_are_two_line_ends():
    assert parse(b"data: a\r", b"\rdata: b\r\r") == [msg("a"), msg("b")]


def test_a_lone_cr_ends_the_event_without_waiting_for_the_next_read():
    # A CR is a full line end: the event must come out of this very feed,
    # not be held until a later chunk shows whether an LF follows.
    parser = SseParser()
    assert parser.feed(b"data: x\r\r") == [msg("x")]
    assert parser.feed(b"\ndata: y\r\r") == [msg("y")]


@pytest.mark.parametrize("eol", LINE_ENDS.values(), ids=LINE_ENDS.keys())
def test_a_stream_cut_at_every_point_gives_the_same_events(eol):
    text = eol.join(["data: one", "data: two", "", "event: t", "id: 4", "data: three", "", ""])
    body = text.encode()
    expected = [msg("one\ntwo"), msg("three", event="t", id="4")]
    for chunks in every_two_way_split(body):
        assert parse(*chunks) == expected, chunks
    assert parse(*one_byte_chunks(body)) == expected


@pytest.mark.parametrize("eol", LINE_ENDS.values(), ids=LINE_ENDS.keys())
def test_each_event_comes_out_of_the_feed_that_completes_it(eol):
    # The event is complete once the first character of the blank line's end
    # has arrived; for every cut, the first feed returns exactly the events
    # completed by then and the second feed the rest.
    text = eol.join(["data: a", "", "data: b", "", ""])
    body = text.encode()
    terminator = (eol + eol).encode()
    first_end = body.index(terminator) + len(eol) + 1
    second_end = body.index(terminator, first_end) + len(eol) + 1
    for i in range(len(body) + 1):
        parser = SseParser()
        got_first = parser.feed(body[:i])
        got_second = parser.feed(body[i:])
        complete = sum(1 for end in (first_end, second_end) if end <= i)
        assert got_first == [msg("a"), msg("b")][:complete], i
        assert got_second == [msg("a"), msg("b")][complete:], i
        assert parser.close() == []


# -- UTF-8 ---------------------------------------------------------------------


@pytest.mark.parametrize("char", ["é", "€", "😀", "𝄞"], ids=["2-byte", "3-byte", "4-byte-emoji", "4-byte-clef"])
def test_a_multibyte_character_cut_at_every_byte_offset_is_decoded_whole(char):
    text = f"event: t{char}\nid: {char}\ndata: {char}x{char}\n\n"
    body = text.encode()
    expected = [msg(f"{char}x{char}", event=f"t{char}", id=char)]
    for chunks in every_two_way_split(body):
        assert parse(*chunks) == expected, chunks
    assert parse(*one_byte_chunks(body)) == expected


@pytest.mark.parametrize("char", ["é", "€", "😀"], ids=["2-byte", "3-byte", "4-byte"])
def test_a_multibyte_character_cut_into_three_pieces_anywhere_is_decoded_whole(char):
    body = f"data: {char}{char}\n\n".encode()
    for chunks in every_three_way_split(body):
        assert parse(*chunks) == [msg(char + char)], chunks


def test_invalid_utf8_is_replaced_not_raised():
    assert parse(b"data: a\xffb\xfe\n\n") == [msg("a\ufffdb\ufffd")]


def test_a_lone_continuation_byte_and_an_overlong_encoding_are_replaced():
    events = parse(b"data: \x80\n\ndata: \xc0\xaf\n\n")
    assert events == [msg("\ufffd"), msg("\ufffd\ufffd")]


def test_a_character_cut_short_by_the_end_of_the_stream_becomes_one_replacement():
    # "€" is E2 82 AC; the stream ends after two of its bytes.
    assert parse(b"data: x\xe2", b"\x82") == [msg("x\ufffd")]


def test_a_truncated_character_followed_by_a_new_line_is_replaced_and_the_line_kept():
    assert parse(b"data: \xe2\x82", b"\n\n") == [msg("\ufffd")]


def test_a_leading_bom_is_dropped():
    assert parse(b"\xef\xbb\xbfdata: x\n\n") == [msg("x")]


def test_a_leading_bom_cut_at_every_point_is_dropped():
    body = b"\xef\xbb\xbfdata: x\n\n"
    for chunks in every_three_way_split(body):
        assert parse(*chunks) == [msg("x")], chunks


def test_a_leading_bom_after_empty_chunks_is_still_dropped():
    assert parse(b"", b"\xef\xbb\xbf", b"data: x\n\n") == [msg("x")]


def test_only_one_leading_bom_is_dropped():
    # The second BOM becomes part of the field name, "\ufeffdata", unknown.
    assert parse(b"\xef\xbb\xbf\xef\xbb\xbfdata: x\n\n") == []


def test_a_bom_later_in_the_stream_is_kept_as_text():
    events = parse(b"data: a\n\n", b"data: \xef\xbb\xbfc\n\n")
    assert events == [msg("a"), msg("\ufeffc")]


def test_a_bom_at_the_start_of_a_later_chunk_is_not_dropped():
    # Dropping is for the start of the stream only; here the BOM opens a line,
    # so the field name is "\ufeffdata" and the line is ignored.
    assert parse(b"data: a\n\n", b"\xef\xbb\xbfdata: b\n\n") == [msg("a")]


# -- end of input --------------------------------------------------------------


def test_a_stream_without_a_final_blank_line_dispatches_its_pending_event_at_close():
    # The documented difference from WHATWG, which would discard it.
    parser = SseParser()
    assert parser.feed(b"data: a\n\nid: 2\nevent: last\ndata: b\n") == [msg("a")]
    assert parser.close() == [msg("b", event="last", id="2")]


def test_a_last_line_without_any_line_end_is_taken_as_a_line_at_close():
    parser = SseParser()
    assert parser.feed(b"data: [DONE]") == []
    assert parser.close() == [msg("[DONE]")]


def test_a_last_line_ending_in_a_lone_cr_is_dispatched_at_close():
    parser = SseParser()
    assert parser.feed(b"data: x\r") == []
    assert parser.close() == [msg("x")]


def test_the_whatwg_example_with_an_unterminated_last_block_is_read_with_our_difference():
    # WHATWG's example: "data\n\ndata\ndata\n\ndata:" gives "" and "\n" and
    # discards the last block; we also dispatch it, with data "".
    assert parse(b"data\n\ndata\ndata\n\ndata:") == [msg(""), msg("\n"), msg("")]


def test_a_pending_event_without_data_is_not_dispatched_at_close():
    assert parse(b"event: x\nid: 1\nretry: 5\n") == []


def test_a_stream_ending_in_a_comment_dispatches_nothing_more_at_close():
    parser = SseParser()
    assert parser.feed(b"data: a\n\n: bye") == [msg("a")]
    assert parser.close() == []


def test_an_empty_stream_produces_no_event():
    assert parse() == []
    assert parse(b"") == []


# -- whole streams ---------------------------------------------------------------

#: A stream exercising every rule at once, with CRLF line ends.
MIXED_BODY = (
    b"\xef\xbb\xbf: opening comment\r\n"
    b"retry: 2500\r\n"
    b"id: first\r\n"
    b"event: message_start\r\n"
    b"data: {\"t\": \"caf\xc3\xa9\"}\r\n"
    b"\r\n"
    b"unknown: field\r\n"
    b"data:  \xe2\x82\xac\r"
    b"data:\xf0\x9f\x98\x80\n"
    b"\r\n"
    b"event: ping\r\n"
    b"\r\n"
    b"id: a\x00b\r\n"
    b"data\r\n"
    b"\r\n"
    b"data: tail"
)

MIXED_EXPECTED = [
    msg('{"t": "café"}', event="message_start", id="first", retry=2500),
    msg(" €\n😀", id="first"),
    msg("", id="first"),
    msg("tail", id="first"),
]


def test_a_stream_using_every_rule_parses_as_expected_in_one_chunk():
    assert parse(MIXED_BODY) == MIXED_EXPECTED


def test_a_stream_using_every_rule_parses_the_same_cut_at_every_point():
    for chunks in every_two_way_split(MIXED_BODY):
        assert parse(*chunks) == MIXED_EXPECTED, chunks


def test_a_stream_using_every_rule_parses_the_same_cut_at_every_pair_of_points():
    for chunks in every_three_way_split(MIXED_BODY):
        assert parse(*chunks) == MIXED_EXPECTED, chunks


def test_a_stream_using_every_rule_parses_the_same_one_byte_at_a_time():
    assert parse(*one_byte_chunks(MIXED_BODY)) == MIXED_EXPECTED


def test_a_long_line_arriving_in_many_small_chunks_is_assembled_whole():
    payload = "é" * 50_000
    body = f"data: {payload}\n\n".encode()
    chunks = [body[i:i + 7] for i in range(0, len(body), 7)]
    assert parse(*chunks) == [msg(payload)]


def test_iter_sse_events_reads_any_iterable_of_chunks_lazily():
    produced = []

    def chunks():
        for chunk in (b"data: a\n", b"\n", b"data: b\n\n", b"data: c"):
            produced.append(chunk)
            yield chunk

    events = iter_sse_events(chunks())
    assert next(events) == msg("a")
    # Only the chunks needed for the first event were pulled.
    assert produced == [b"data: a\n", b"\n"]
    assert list(events) == [msg("b"), msg("c")]
