"""The pending table the client composes: open a slot, deliver, cancel, fail all, lose and recover."""

from __future__ import annotations

import pytest

from agcore_sync.mcp.client._pending import PendingTable, result_of
from agcore_sync.tools.error import McpConnectionError, McpError

ANSWER = {"jsonrpc": "2.0", "id": 1, "result": {"ok": True}}


def test_a_delivered_answer_releases_its_slot_once_and_a_second_delivery_is_dropped():
    table = PendingTable("srv")
    slot, generation, losses = table.open(1)
    assert (generation, losses) == (0, 0)
    assert not slot.done.acquire(False)
    assert table.deliver(1, ANSWER)
    assert slot.done.acquire(False)
    assert slot.response is ANSWER
    assert not table.deliver(1, ANSWER)


def test_a_cancelled_slot_is_taken_out_so_its_late_answer_is_dropped():
    table = PendingTable("srv")
    table.open(7)
    assert table.cancel(7)
    assert not table.cancel(7)
    assert not table.deliver(7, ANSWER)


def test_a_loss_fails_every_open_slot_and_refuses_new_ones_with_a_fresh_copy_naming_the_tool():
    table = PendingTable("srv")
    slots = [table.open(i)[0] for i in (1, 2)]
    lost = McpConnectionError("gone", exit_code=3, stderr_tail="boom")
    assert table.lose(lost) == 1
    for slot in slots:
        assert slot.done.acquire(False)
        assert slot.response is lost
    with pytest.raises(McpConnectionError) as raised:
        table.open(3, tool_name="echo")
    assert raised.value is not lost
    assert (raised.value.exit_code, raised.value.stderr_tail, raised.value.tool_name) == (3, "boom", "echo")


def test_a_restarts_handshake_passes_only_while_no_newer_loss_came():
    table = PendingTable("srv")
    epoch = table.lose(McpConnectionError("gone"))
    table.open(1, epoch=epoch)
    table.lose(McpConnectionError("gone again"))
    with pytest.raises(McpConnectionError):
        table.open(2, epoch=epoch)
    assert not table.recover(epoch)
    assert table.recover(epoch + 1)
    assert table.lost is None
    assert table.generation == 1
    table.open(3)


def test_giving_up_replaces_the_loss_but_never_invents_one():
    table = PendingTable("srv")
    table.give_up(McpConnectionError("final"))
    assert table.lost is None
    table.lose(McpConnectionError("gone"))
    table.give_up(McpConnectionError("final"))
    assert table.lost is not None and table.lost.message == "final"


def test_failing_all_on_close_does_not_mark_the_server_lost():
    table = PendingTable("srv")
    slot = table.open(1)[0]
    table.fail_all(McpConnectionError("closed"))
    assert isinstance(slot.response, McpConnectionError)
    assert table.lost is None


def test_result_of_maps_errors_and_non_objects():
    assert result_of(ANSWER, "srv", "tools/call", None) == {"ok": True}
    with pytest.raises(McpError) as raised:
        result_of({"id": 1, "error": {"code": -32602, "message": "bad", "data": {"x": 1}}}, "srv", "tools/call", "t")
    assert (raised.value.code, raised.value.data, raised.value.tool_name) == (-32602, {"x": 1}, "t")
    with pytest.raises(McpError):
        result_of({"id": 1, "result": [1]}, "srv", "tools/list", None)
    with pytest.raises(McpConnectionError):
        result_of(McpConnectionError("gone"), "srv", "tools/list", None)
