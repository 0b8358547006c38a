"""The grader's end of a kernel's stream (grader/run/stream.py), fed by the kernel side's own
``grader.kernel.channel.Channel`` over a real Unix socket in a test folder: no kernel, no
sandbox, milliseconds. What each message out of turn is called (tampering reasons), the oracle's
bounds, and when ``wait_end`` gives up."""

import socket
import threading
from time import monotonic

import numpy as np
import pytest

from grader import wire
from grader.kernel.channel import Channel
from grader.run import stream as streams
from grader.run.stream import KernelStream, Window, Windows


@pytest.fixture
def kernel(tmp_path):
    """connect(windows): (the kernel's Channel, greeted; the grader's KernelStream)."""
    opened = []

    def connect(windows: Windows, hello: bool = True) -> tuple[Channel, KernelStream]:
        stream = KernelStream(str(tmp_path), windows, None)
        channel = Channel(stream.path)
        if hello:
            channel.send({"k": "hello", "pid": 1})
        opened.append((channel, stream))
        return channel, stream

    yield connect
    for channel, stream in opened:
        channel.sock.close()
        stream.close()


def _settle(channel: Channel, stream: KernelStream) -> None:
    """Until the grader has read everything sent so far: the channel's close ends the stream."""
    channel.sock.close()
    stream.thread.join(5)
    assert stream.done


def test_a_test_cell_s_window_opens_records_and_ends(kernel):
    windows = Windows(shortcuts={"f": {"torch": ["softmax"]}})
    window = windows.add(Window("t1", "hidden", cases={"f": [(1, 2)]}))
    channel, stream = kernel(windows)
    assert channel.ask({"k": "begin", "n": window.nonce}) == {
        "shortcuts": {"f": {"torch": ["softmax"]}},
        "cases": {"f": [(1, 2)]},
    }
    channel.send({"k": "record", "n": window.nonce, "body": b"the record"})
    channel.send({"k": "end", "n": window.nonce})
    assert windows.wait_end(window, stream, 5)
    assert window.begun and window.ended and window.record == b"the record"
    assert windows.tampered == [] and stream.received > 0


def test_the_first_message_must_be_the_kernel_s_greeting(kernel):
    windows = Windows(shortcuts={})
    channel, stream = kernel(windows, hello=False)
    channel.send({"k": "log", "kind": "x", "detail": "y"})
    _settle(channel, stream)
    assert windows.tampered == ["the kernel's first message was not its greeting"]


@pytest.mark.parametrize(
    ("messages", "reason"),
    [
        ([{"k": "begin", "n": "not a nonce"}], "a test cell was announced that is not running now"),
        ([{"k": "begin", "n": "N"}, {"k": "begin", "n": "N"}],
         "a test cell was announced that is not running now"),
        ([{"k": "begin", "n": "N"}, {"k": "record", "n": "N", "body": b"1"},
          {"k": "end", "n": "N"}, {"k": "begin", "n": "N"}],  # a window opens once
         "a test cell was announced that is not running now"),
        ([{"k": "begin", "n": "N"}, {"k": "begin", "n": "M"}],  # one window at a time
         "a test cell was announced that is not running now"),
        ([{"k": "record", "n": "N", "body": b"early"}],
         "a `record` message outside the test cell it names"),
        ([{"k": "begin", "n": "N"}, {"k": "end", "n": "N"}],
         "test cell `t1` ended without its record"),
        ([{"k": "begin", "n": "N"}, {"k": "record", "n": "N", "body": b"1"},
          {"k": "record", "n": "N", "body": b"2"}],
         "an unexpected `record` message in test cell `t1`"),
        ([{"k": "begin", "n": "N"}, {"k": "record", "n": "N", "body": "not bytes"}],
         "an unexpected `record` message in test cell `t1`"),
        ([{"k": "begin", "n": "N"}, {"k": "surprise", "n": "N"}],
         "an unexpected `surprise` message in test cell `t1`"),
        ([["not", "a", "dict"]], "a `None` message outside the test cell it names"),
    ],
)  # fmt: skip
def test_a_message_out_of_turn_is_tampering(kernel, messages, reason):
    windows = Windows(shortcuts={})
    window = windows.add(Window("t1", "visible"))
    other = windows.add(Window("t2", "visible"))
    channel, stream = kernel(windows)
    for message in messages:
        if isinstance(message, dict) and message.get("n") in ("N", "M"):
            message = {**message, "n": (window if message["n"] == "N" else other).nonce}
        if isinstance(message, dict) and message["k"] == "begin":
            channel.ask(message)  # the kernel waits for its reply
        else:
            channel.send(message)
    _settle(channel, stream)
    assert windows.tampered == [reason]


def test_a_sentinel_cell_ends_without_a_record(kernel):
    windows = Windows(shortcuts={})
    window = windows.add(Window("last", "sentinel"))
    channel, stream = kernel(windows)
    channel.ask({"k": "begin", "n": window.nonce})
    channel.send({"k": "end", "n": window.nonce})
    _settle(channel, stream)
    assert window.ended and windows.tampered == []


def test_a_frame_the_grader_cannot_read_is_tampering_and_ends_the_stream(kernel):
    windows = Windows(shortcuts={})
    channel, stream = kernel(windows)
    wire.write_all(channel.fd, (5).to_bytes(4, "little") + b"\xff" * 5)  # no value's tag
    stream.thread.join(5)
    assert stream.done and len(windows.tampered) == 1
    assert windows.tampered[0].startswith("the kernel sent something the grader cannot read (")


def test_more_than_the_stream_s_bytes_in_all_is_tampering(kernel, monkeypatch):
    monkeypatch.setattr(wire, "LIMITS", wire.Limits(stream_bytes=200))
    windows = Windows(shortcuts={})
    channel, stream = kernel(windows)
    for _ in range(10):
        channel.send({"k": "log", "kind": "k", "detail": "d" * 30})
    _settle(channel, stream)
    assert windows.tampered == [
        "the kernel sent something the grader cannot read (more than 200 bytes in all)"
    ]
    assert 0 < len(windows.logs) < 10


def test_log_lines_are_kept_up_to_max_logs_with_their_kind_cut(kernel, monkeypatch):
    monkeypatch.setattr(streams, "MAX_LOGS", 3)
    windows = Windows(shortcuts={})
    channel, stream = kernel(windows)
    for i in range(5):
        channel.send({"k": "log", "kind": "k" * 50, "detail": f"line {i}"})
    _settle(channel, stream)
    assert windows.logs == [{"kind": "k" * 40, "detail": f"line {i}"} for i in range(3)]


LIKE_HIDDEN = {"raise": "TypeError: call it with an array like the hidden input"}


def _oracle_window(kernel):
    """A hidden test cell whose case holds a function argument (answered by the grader)."""
    windows = Windows(shortcuts={})

    def trusted(x):
        if x.size == 0:
            raise ValueError("e" * 400)
        return x * 2

    window = windows.add(Window("t1", "hidden", cases={"f": [(np.ones(4), trusted)]}))
    channel, stream = kernel(windows)
    reply = channel.ask({"k": "begin", "n": window.nonce})
    assert isinstance(reply["cases"]["f"][0][1], wire.Oracle)
    return channel, window


def test_an_oracle_answers_with_the_trusted_function_for_inputs_like_the_hidden_ones(kernel):
    channel, window = _oracle_window(kernel)

    def ask(fid, args):
        return channel.ask({"k": "oracle", "n": window.nonce, "id": fid, "args": args})

    assert np.array_equal(ask(0, [np.arange(4.0)])["result"], np.arange(4.0) * 2)
    assert ask(0, [np.zeros(5)]) == LIKE_HIDDEN  # larger than any hidden input
    assert ask(0, [[1, 2]]) == LIKE_HIDDEN  # not an array
    assert ask(1, [np.zeros(4)]) == {"raise": "no such function"}
    assert ask("0", [np.zeros(4)]) == {"raise": "too many calls"}
    raised = ask(0, [np.zeros(0)])["raise"]
    assert raised.startswith("ValueError: eee") and len(raised) == 300


def test_an_oracle_stops_answering_after_max_oracle_calls(kernel, monkeypatch):
    monkeypatch.setattr(streams, "MAX_ORACLE_CALLS", 2)
    channel, window = _oracle_window(kernel)
    asked = [
        channel.ask({"k": "oracle", "n": window.nonce, "id": 0, "args": [np.ones(4)]})
        for _ in range(3)
    ]
    assert ["result" in a for a in asked] == [True, True, False]
    assert asked[2] == {"raise": "too many calls"}


def test_an_oracle_call_outside_its_cell_is_refused_and_tampering(kernel):
    windows = Windows(shortcuts={})
    window = windows.add(Window("t1", "hidden"))
    channel, stream = kernel(windows)
    assert channel.ask({"k": "oracle", "n": window.nonce, "id": 0, "args": []}) == {
        "raise": "not now"
    }
    _settle(channel, stream)
    assert windows.tampered == ["a `oracle` message outside the test cell it names"]


def test_wait_end_gives_up_after_its_timeout_or_at_once_when_the_stream_ends(kernel):
    windows = Windows(shortcuts={})
    window = windows.add(Window("t1", "visible"))
    channel, stream = kernel(windows)
    channel.ask({"k": "begin", "n": window.nonce})
    start = monotonic()
    assert not windows.wait_end(window, stream, 0.2)
    assert 0.2 <= monotonic() - start < 2
    threading.Timer(0.1, channel.sock.close).start()
    start = monotonic()
    assert not windows.wait_end(window, stream, 30)  # the stream ended: nothing more comes
    assert monotonic() - start < 5


def test_a_stream_no_kernel_connected_to_closes_and_is_done(tmp_path):
    stream = KernelStream(str(tmp_path), Windows(shortcuts={}), None)
    stream.close()
    assert stream.done and not stream.thread.is_alive()
    with pytest.raises(OSError):  # it listened for one connection only, and no longer
        socket.socket(socket.AF_UNIX, socket.SOCK_STREAM).connect(stream.path)
