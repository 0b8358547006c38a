"""The grader's end of a kernel's stream: records, logs and markers as they happen.

Why a stream and not files the kernel writes: what the kernel sends is read at once by this
process, outside the sandbox, so no later cell can rewrite or delete it; and because every
test cell must announce itself and end with a marker, a kernel whose instrumentation was
switched off (the stream closed, replaced, or fed garbage) is noticed at the next test cell.

Each test cell of the graded copy has a *window*, opened by a ``begin`` carrying that cell's
nonce (put in its source only, so nothing can open it before the cell runs), and closed by
its ``end``. Inside a window the kernel may ask for oracle answers and send one record;
anything out of turn is a tampering reason. One :class:`Windows` registry spans a notebook's
kernel restarts; one :class:`KernelStream` serves one kernel.
"""

import os
import secrets
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from grader import wire

MAX_LOGS = 200
ACCEPT_SECONDS = 120  # the kernel connects as it starts (imports included), before student code
CLOSE_SECONDS = 10  # for the reader thread to notice its closed sockets
MAX_ORACLE_CALLS = 1000


@dataclass
class Window:
    test_id: str
    kind: str  # "visible", "hidden" or "sentinel"
    # hidden: {exercise: [(args, kwargs)]}
    cases: dict[str, list[tuple[object, ...]]] = field(default_factory=dict)
    nonce: str = field(default_factory=lambda: secrets.token_hex(16))
    begun: bool = False
    ended: bool = False
    record: bytes | None = None
    oracles: "list[wire.OracleFunction]" = field(default_factory=list)
    oracle_calls: int = 0


class Windows:
    """Every window of one notebook, and what went wrong with them (tamper reasons)."""

    def __init__(self, shortcuts: dict[str, dict[str, list[str]]]):
        self.shortcuts = shortcuts
        self.by_nonce: dict[str, Window] = {}
        self.tampered: list[str] = []
        self.logs: list[dict[str, str]] = []
        self.changed = threading.Condition()

    def add(self, window: Window) -> Window:
        self.by_nonce[window.nonce] = window
        return window

    def tamper(self, reason: str) -> None:
        with self.changed:
            if reason not in self.tampered:
                self.tampered.append(reason)
            self.changed.notify_all()

    def wait_end(self, window: Window, stream: "KernelStream", timeout: float) -> bool:
        """True once ``window`` has ended; False after ``timeout`` or when ``stream`` (a
        KernelStream) has stopped, since nothing more can come then."""
        with self.changed:
            return self.changed.wait_for(lambda: window.ended or stream.done, timeout) and (
                window.ended
            )


class KernelStream:
    """Listens in ``folder`` for one kernel's connection, then serves it in a thread."""

    def __init__(self, folder: str, windows: Windows, uid: int | None):
        self.windows = windows
        self.path = os.path.join(folder, "grader.sock")
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(self.path)
        if uid is not None:
            os.chown(self.path, uid, uid)
        self.listener.listen(1)
        self.conn: socket.socket | None = None
        self.received = 0
        self.open: Window | None = None
        self.done = False  # the stream has ended (or was cut for a malformed frame)
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def close(self) -> None:
        for sock in (self.listener, self.conn):
            if sock is not None:
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                sock.close()
        self.thread.join(timeout=CLOSE_SECONDS)

    def _accept(self) -> socket.socket | None:
        """The kernel's connection (``conn``, which ``close`` shuts too), or None."""
        try:
            self.listener.settimeout(ACCEPT_SECONDS)
            self.conn, _ = self.listener.accept()
            self.conn.settimeout(None)  # raises if close() shut it meanwhile: nothing to read
        except OSError:
            return None
        finally:
            self.listener.close()  # one connection only, made before any student code ran
            try:
                os.unlink(self.path)
            except OSError:
                pass
        return self.conn

    def _serve(self) -> None:
        try:
            self._read_all()
        finally:
            with self.windows.changed:
                self.done = True
                self.windows.changed.notify_all()

    def _read_all(self) -> None:
        conn = self._accept()
        if conn is None:
            return
        first = True
        while True:
            try:
                payload = wire.read_frame(conn)
                if payload is None:
                    return
                self.received += len(payload) + 4
                if self.received > wire.LIMITS.stream_bytes:
                    raise wire.Malformed(f"more than {wire.LIMITS.stream_bytes} bytes in all")
                message = wire.decode(payload)
            except wire.Malformed as err:
                self.windows.tamper(f"the kernel sent something the grader cannot read ({err})")
                return
            except OSError:
                return
            if first and not (isinstance(message, dict) and message.get("k") == "hello"):
                self.windows.tamper("the kernel's first message was not its greeting")
            first = False
            try:
                self._handle(message)
            except OSError:
                return

    def _reply(self, value: object) -> None:
        assert self.conn is not None  # replies answer messages: the kernel has connected
        try:
            data = wire.frame(value, oracles=self.open.oracles if self.open else None)
        except wire.TooLarge:
            data = wire.frame({"raise": "the answer is too large"})
        wire.write_all(self.conn.fileno(), data)

    def _handle(self, msg: Any) -> None:  # whatever the kernel sent: checked here
        w = self.windows
        kind = msg.get("k") if isinstance(msg, dict) else None
        if kind == "hello":
            return
        if kind == "log":
            if len(w.logs) < MAX_LOGS:
                w.logs.append({"kind": str(msg.get("kind"))[:40], "detail": str(msg.get("detail"))})
            return
        nonce = msg.get("n") if isinstance(msg, dict) else None
        window = w.by_nonce.get(nonce) if type(nonce) is str else None
        if kind == "begin":
            if window is None or window.begun or self.open is not None:
                w.tamper("a test cell was announced that is not running now")
                self._reply({})
                return
            window.begun = True
            self.open = window
            self._reply({"shortcuts": w.shortcuts, "cases": window.cases})
            return
        if window is None or window is not self.open:
            w.tamper(f"a `{kind}` message outside the test cell it names")
            if kind == "oracle":
                self._reply({"raise": "not now"})
            return
        if kind == "oracle":
            self._reply(self._oracle(window, msg))
        elif kind == "record" and window.record is None and type(msg.get("body")) is bytes:
            window.record = msg["body"]
        elif kind == "end":
            if window.kind != "sentinel" and window.record is None:
                w.tamper(f"test cell `{window.test_id}` ended without its record")
            self.open = None
            with w.changed:
                window.ended = True
                w.changed.notify_all()
        else:
            w.tamper(f"an unexpected `{kind}` message in test cell `{window.test_id}`")

    def _oracle(self, window: Window, msg: Any) -> dict[str, object]:
        """Answer a call to a function argument of a hidden case with the trusted function,
        for arguments shaped like that cell's hidden inputs only."""
        window.oracle_calls += 1
        fn_id, args = msg.get("id"), msg.get("args")
        if window.oracle_calls > MAX_ORACLE_CALLS or type(fn_id) is not int:
            return {"raise": "too many calls"}
        if not (0 <= fn_id < len(window.oracles)) or type(args) is not list:
            return {"raise": "no such function"}
        largest = max(
            (a.size for cases in window.cases.values() for c in cases for a in _arrays(c)),
            default=0,
        )
        if any(not isinstance(a, np.ndarray) or a.size > largest for a in args):
            return {"raise": "TypeError: call it with an array like the hidden input"}
        try:
            return {"result": window.oracles[fn_id](*args)}
        except Exception as err:  # noqa: BLE001 (the learner's call was bad: say so)
            return {"raise": f"{type(err).__name__}: {err}"[:300]}


def _arrays(value: object) -> Iterator[np.ndarray]:
    if isinstance(value, np.ndarray):
        yield value
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _arrays(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _arrays(item)
