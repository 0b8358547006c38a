"""The kernel's stream to the grader: length-prefixed ``grader.wire`` frames on a Unix socket.

The grader listens on a socket in the kernel's IPC folder and accepts exactly one connection,
made here before any student code runs; then it stops listening. Frames go out as events
happen (from any thread, one frame at a time); :meth:`Channel.ask` waits for the grader's
reply. If student code closes or replaces the socket, sending fails silently here and the
grader, missing its end-of-cell markers, flags the notebook as tampered. The bytes sent are
counted, so the recorders stay within what the grader accepts from one kernel in all
(``wire.LIMITS.stream_bytes``): an honest kernel never trips that limit.
"""

from __future__ import annotations

import socket
import threading
from typing import Any

from grader import wire


class Channel:
    def __init__(self, path: str) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(path)
        self.fd = self.sock.fileno()
        self.lock = threading.Lock()
        self.owner: int | None = None  # the thread writing a frame right now
        self.pending: list[bytes] = []  # frames sent while that thread was writing one
        self.broken = False
        self.sent = 0  # bytes of every frame so far, pending ones included

    def _exchange(self, data: bytes, reply: bool) -> bytes | None:
        me = threading.get_ident()
        self.sent += len(data)
        if self.owner == me:  # e.g. an audit event raised while this thread writes a frame
            self.pending.append(data)
            return None
        with self.lock:
            self.owner = me
            try:
                wire.write_all(self.fd, data)
                answer = wire.read_frame(self.sock) if reply else None
                while self.pending:
                    wire.write_all(self.fd, self.pending.pop(0))
            finally:
                self.owner = None
        return answer

    def send(self, value: object) -> None:
        """Send one value; never raises (a broken stream is the grader's to notice)."""
        if not self.broken:
            try:
                self._exchange(wire.frame(value), reply=False)
            except (OSError, ValueError):
                self.broken = True

    def ask(self, value: object) -> Any:
        """Send a request and return the grader's decoded reply (None if the stream broke)."""
        if self.broken:
            return None
        try:
            answer = self._exchange(wire.frame(value), reply=True)
            return None if answer is None else wire.decode(answer)
        except (OSError, ValueError):
            self.broken = True
            return None


CHANNEL: Channel | None = None
# Kept for the small frames that follow a record (markers, log lines, the last cell's).
RESERVE = 8 * 2**20


def room() -> int:
    """Bytes a record may still take of the stream's total."""
    sent = CHANNEL.sent if CHANNEL is not None else 0
    return max(wire.LIMITS.stream_bytes - sent - RESERVE, 0)


def connect(path: str) -> Channel:
    global CHANNEL
    CHANNEL = Channel(path)
    return CHANNEL


def send(value: object) -> None:
    if CHANNEL is not None:
        CHANNEL.send(value)


def ask(value: object) -> Any:  # the grader's reply, decoded
    return CHANNEL.ask(value) if CHANNEL is not None else None
