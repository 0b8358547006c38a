"""The one wire format between a student's kernel and the grader (both ways).

A value is written as a tag byte and its payload, depth first: None, bools, numbers, text,
bytes, lists, tuples, dicts with text keys, NumPy arrays and scalars (as ``.npy`` bytes with
a version 1.0 header), and stand-ins for what is not numbers (an object's type name, a torch
tensor's shape, an *oracle*: a function argument the grader answers for). There are no
references, so a value costs exactly the bytes it takes: what the kernel sends can never
expand when it is read. Frames on a stream are a 4-byte length and one encoded value.

Everything that comes from a kernel is hostile. :func:`decode` checks every length against
the bytes that are there and against :data:`LIMITS` before it allocates anything (an array
header is validated, its size computed from its shape and dtype and compared with the bytes
that follow), counts every value against one budget, bounds nesting and gives up after a
time limit. Any violation raises :class:`Malformed`; nothing is ever unpickled.
"""

from __future__ import annotations

import io
import math
import os
import re
import struct
import time
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # annotations only: the kernel imports this module before any notebook code
    import socket
    from collections.abc import Callable, Iterable

    # A hidden case's function argument that the grader answers for (``Oracle``).
    OracleFunction = Callable[..., Any]


@dataclass(frozen=True)
class Limits:
    """What one frame may hold. The kernel's encoder respects the same limits, so an honest
    kernel never sends a frame the grader refuses."""

    frame_bytes: int = 64 * 2**20  # one frame (one encoded value)
    stream_bytes: int = 256 * 2**20  # everything one kernel sends
    entries: int = 100_000  # values in one frame: items, dict keys and values all count
    depth: int = 32  # nesting of lists, tuples and dicts
    text_bytes: int = 2**20  # one string (bytes values are bounded by the frame only)
    array_bytes: int = 64 * 2**20  # the data of one array
    array_dims: int = 32
    npy_header_bytes: int = 4096
    decode_seconds: float = 10.0


LIMITS = Limits()
NUMERIC_KINDS = "biufc"
_LEN = struct.Struct("<I")
_INT = struct.Struct("<q")
_FLOAT = struct.Struct("<d")
_COMPLEX = struct.Struct("<dd")
_BIG_INT_DIGITS = 400
# A .npy version 1.0 header as numpy writes it, for plain numeric dtypes only: checked by
# this pattern (no eval), so its shape and dtype are known before anything is allocated.
_NPY_HEADER = re.compile(
    rb"\x93NUMPY\x01\x00..\{'descr': '([<>|=]?[biufc][0-9]{1,2})', "
    rb"'fortran_order': (True|False), 'shape': \(((?:[0-9]{1,12}, ?)*(?:[0-9]{1,12})?)\), \} *\n",
    re.S,
)


class Malformed(ValueError):
    """Bytes that are not a valid value within the limits (the message says which rule)."""


class TooLarge(ValueError):
    """A value that does not fit the limits, refused by the encoder."""


class Opaque:
    """Stands for a value that is not numbers (its type name); it equals nothing."""

    def __init__(self, type_name: str, shape: Iterable[int] | None = None) -> None:
        self.type_name = type_name
        if shape is not None:  # a torch tensor: checks recognise one by .detach
            self.shape = tuple(shape)
            self.detach = None

    def __repr__(self) -> str:
        return f"<{self.type_name}>"

    def __eq__(self, other: object) -> bool:
        return False

    __hash__ = object.__hash__


@dataclass(frozen=True)
class Oracle:
    """A function argument of a hidden case, answered by the grader (id, label)."""

    id: int
    label: str


# --------------------------------------------------------------------------- encoding


class _Encoder:
    def __init__(self, limits: Limits, oracles: list[OracleFunction] | None) -> None:
        self.limits, self.oracles = limits, oracles
        self.out = io.BytesIO()
        self.entries = 0

    def put(self, data: bytes) -> None:
        self.out.write(data)
        if self.out.tell() > self.limits.frame_bytes:
            raise TooLarge(f"more than {self.limits.frame_bytes} bytes")

    def text(self, tag: bytes, data: bytes) -> None:
        if tag != b"b" and len(data) > self.limits.text_bytes:
            raise TooLarge(f"a text of {len(data)} bytes")
        self.put(tag + _LEN.pack(len(data)) + data)

    def array(self, tag: bytes, arr: np.ndarray, prefix: bytes = b"") -> None:
        if arr.dtype.kind not in NUMERIC_KINDS or arr.dtype.fields is not None:
            self.text(b"x", f"array of {arr.dtype}".encode())
            return
        too_big = self.out.tell() + arr.nbytes > self.limits.frame_bytes
        if too_big or arr.nbytes > self.limits.array_bytes or arr.ndim > self.limits.array_dims:
            raise TooLarge(f"an array of shape {arr.shape}")
        data = npy_bytes(arr)
        self.put(tag + prefix + _LEN.pack(len(data)) + data)

    def value(self, v: Any, depth: int = 0) -> None:  # any object, told by its exact type
        self.entries += 1
        if self.entries > self.limits.entries:
            raise TooLarge(f"more than {self.limits.entries} values")
        if depth > self.limits.depth:
            raise TooLarge(f"nested deeper than {self.limits.depth}")
        kind = type(v)
        if v is None:
            self.put(b"N")
        elif kind is bool:
            self.put(b"T" if v else b"F")
        elif kind is int:
            if -(2**63) <= v < 2**63:
                self.put(b"i" + _INT.pack(v))
            elif math.log10(abs(v)) < _BIG_INT_DIGITS:
                self.text(b"I", str(v).encode())
            else:
                raise TooLarge("an integer with too many digits")
        elif kind is float:
            self.put(b"f" + _FLOAT.pack(v))
        elif kind is complex:
            self.put(b"c" + _COMPLEX.pack(v.real, v.imag))
        elif kind is str:
            self.text(b"s", v.encode("utf-8", "replace"))
        elif kind is bytes:
            self.text(b"b", v)
        elif kind in (list, tuple):
            self.put((b"l" if kind is list else b"t") + _LEN.pack(len(v)))
            for item in v:
                self.value(item, depth + 1)
        elif kind is dict:
            if not all(type(k) is str for k in v):
                self.text(b"x", b"dict with keys that are not text")
                return
            self.put(b"d" + _LEN.pack(len(v)))
            for key, item in v.items():
                self.value(key, depth + 1)
                self.value(item, depth + 1)
        elif isinstance(v, np.generic):
            self.array(b"g", np.asarray(v))
        elif isinstance(v, np.ndarray):
            plain = v.view(np.ndarray)
            if kind is np.ndarray:
                self.array(b"a", plain)
            else:
                name = kind.__name__.encode("utf-8", "replace")[:100]
                self.array(b"A", plain, _LEN.pack(len(name)) + name)
        elif hasattr(v, "detach") and hasattr(v, "shape"):
            shape = tuple(int(s) for s in tuple(v.shape)[: self.limits.array_dims])
            self.put(b"r" + _LEN.pack(len(shape)) + b"".join(_INT.pack(s) for s in shape))
        elif callable(v) and self.oracles is not None:
            self.oracles.append(v)
            label = str(v)[:60].encode("utf-8", "replace")
            self.put(b"o" + _LEN.pack(len(self.oracles) - 1))
            self.text(b"s", label)
        else:
            self.text(b"x", getattr(kind, "__name__", "object").encode("utf-8", "replace")[:100])


def npy_bytes(arr: np.ndarray) -> bytes:
    """``arr`` in the .npy format, version 1.0, as ``numpy.save`` writes it."""
    fortran = arr.flags.f_contiguous and not arr.flags.c_contiguous
    header = (
        f"{{'descr': {np.lib.format.dtype_to_descr(arr.dtype)!r}, 'fortran_order': {fortran}, "
        f"'shape': {arr.shape!r}, }}"
    ).encode()
    pad = -(len(header) + 11) % 64  # magic (8) + length (2) + newline (1): 64-byte aligned
    header += b" " * pad + b"\n"
    data = arr.tobytes(order="F" if fortran else "C")
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header + data


def encode(
    value: object,
    limits: Limits = LIMITS,
    oracles: list[OracleFunction] | None = None,
    budget: Budget | None = None,
) -> bytes:
    """``value`` as bytes; raises TooLarge beyond ``limits`` (or beyond what is left of a
    shared :class:`Budget`, which is then charged). With ``oracles`` (a list), functions
    become oracles (appended to it) instead of stand-ins."""
    if budget is not None:
        limits = budget.limits_left()
    enc = _Encoder(limits, oracles)
    enc.value(value)
    data = enc.out.getvalue()
    if budget is not None:
        budget.charge(len(data), enc.entries)
    return data


def opaque(text: str) -> bytes:
    """An encoded stand-in that says what a value was (e.g. why it was not recorded)."""
    raw = text.encode("utf-8", "replace")[:200]
    return b"x" + _LEN.pack(len(raw)) + raw


# --------------------------------------------------------------------------- decoding


class Budget:
    """Limits shared by several values that make up one frame (e.g. a record whose calls
    were encoded one by one): every value charged counts against the same totals."""

    def __init__(self, limits: Limits = LIMITS) -> None:
        self.limits = limits
        self.bytes_left = limits.frame_bytes
        self.entries_left = limits.entries
        self.deadline = time.monotonic() + limits.decode_seconds

    def limits_left(self) -> Limits:
        return replace(
            self.limits, frame_bytes=max(self.bytes_left, 0), entries=max(self.entries_left, 0)
        )

    def charge(self, size: int, entries: int) -> None:
        self.bytes_left -= size
        self.entries_left -= entries


class _Decoder:
    def __init__(self, data: bytes, budget: Budget) -> None:
        self.data, self.limits = bytes(data), budget.limits_left()
        self.pos = 0
        self.entries = 0
        self.deadline = budget.deadline

    def take(self, n: int) -> bytes:
        if self.pos + n > len(self.data):
            raise Malformed("truncated")
        self.pos += n
        return self.data[self.pos - n : self.pos]

    def unpack(self, fmt: struct.Struct) -> tuple[Any, ...]:
        if self.pos + fmt.size > len(self.data):
            raise Malformed("truncated")
        value = fmt.unpack_from(self.data, self.pos)
        self.pos += fmt.size
        return value

    def length(self, most: int, what: str) -> int:
        n: int
        (n,) = self.unpack(_LEN)
        if n > most or n > len(self.data) - self.pos:
            raise Malformed(f"{what} of {n} is more than allowed or than the bytes left")
        return n

    def text(self) -> str:
        raw = self.take(self.length(self.limits.text_bytes, "a text"))
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise Malformed("text that is not UTF-8") from None

    def array(self) -> np.ndarray:
        size = self.length(self.limits.array_bytes + self.limits.npy_header_bytes, "an array")
        start = self.pos
        self.pos += size
        head = _NPY_HEADER.match(self.data, start, start + min(size, self.limits.npy_header_bytes))
        if head is None:
            raise Malformed("an array whose .npy header is not version 1.0 of plain numbers")
        descr, fortran, dims = head.groups()
        shape = tuple(int(d) for d in dims.replace(b",", b" ").split())
        if len(shape) > self.limits.array_dims:
            raise Malformed(f"an array with {len(shape)} dimensions")
        try:
            dtype = np.dtype(descr.decode())
        except TypeError:
            raise Malformed(f"an array of unknown dtype {descr!r}") from None
        count = math.prod(shape)
        offset = head.end()
        if count * dtype.itemsize != start + size - offset:
            raise Malformed(f"an array of shape {shape} that does not match its {size} bytes")
        flat = np.frombuffer(self.data, dtype=dtype, count=count, offset=offset)
        return flat.reshape(shape, order="F" if fortran == b"True" else "C").copy(order="K")

    def value(self, depth: int = 0) -> Any:  # whatever the kernel sent, in any shape
        self.entries += 1
        if self.entries > self.limits.entries:
            raise Malformed(f"more than {self.limits.entries} values")
        if depth > self.limits.depth:
            raise Malformed(f"nested deeper than {self.limits.depth}")
        if not self.entries & 1023 and time.monotonic() > self.deadline:
            raise Malformed(f"decoding took more than {self.limits.decode_seconds} s")
        if self.pos >= len(self.data):
            raise Malformed("truncated")
        tag = self.data[self.pos]
        self.pos += 1
        read = self._READERS.get(tag)
        if read is None:
            raise Malformed(f"unknown tag {tag}")
        return read(self, depth)

    def _sequence(
        self, depth: int, kind: type[list[Any]] | type[tuple[Any, ...]]
    ) -> list[Any] | tuple[Any, ...]:
        n = self.length(self.limits.entries - self.entries, "a sequence")
        items = [self.value(depth + 1) for _ in range(n)]
        return items if kind is list else tuple(items)

    def _dict(self, depth: int) -> dict[str, Any]:
        n = self.length(self.limits.entries - self.entries, "a dict")
        out: dict[str, Any] = {}
        for _ in range(n):
            key = self.value(depth + 1)
            if type(key) is not str:
                raise Malformed("a dict key that is not text")
            out[key] = self.value(depth + 1)
        return out

    def _big_int(self, depth: int) -> int:
        digits = self.text()
        if len(digits) > _BIG_INT_DIGITS or not digits.lstrip("-").isdigit():
            raise Malformed("a big integer that is not digits")
        return int(digits)

    def _scalar(self, depth: int) -> Any:  # a NumPy scalar
        arr = self.array()
        if arr.ndim:
            raise Malformed("a NumPy scalar with a shape")
        return arr[()]

    def _tensor(self, depth: int) -> Opaque:
        n = self.length(self.limits.array_dims, "a tensor shape")
        return Opaque("torch.Tensor", [self.unpack(_INT)[0] for _ in range(n)])

    def _oracle(self, depth: int) -> Oracle:
        (oid,) = self.unpack(_LEN)
        label = self.value(depth + 1)
        if type(label) is not str:
            raise Malformed("an oracle without a label")
        return Oracle(oid, label[:60])

    _READERS: dict[int, Callable[[_Decoder, int], Any]] = {
        ord("N"): lambda self, depth: None,
        ord("T"): lambda self, depth: True,
        ord("F"): lambda self, depth: False,
        ord("i"): lambda self, depth: self.unpack(_INT)[0],
        ord("I"): _big_int,
        ord("f"): lambda self, depth: self.unpack(_FLOAT)[0],
        ord("c"): lambda self, depth: complex(*self.unpack(_COMPLEX)),
        ord("s"): lambda self, depth: self.text(),
        ord("b"): lambda self, depth: self.take(self.length(self.limits.frame_bytes, "bytes")),
        ord("l"): lambda self, depth: self._sequence(depth, list),
        ord("t"): lambda self, depth: self._sequence(depth, tuple),
        ord("d"): _dict,
        ord("a"): lambda self, depth: self.array(),
        ord("g"): _scalar,
        ord("A"): lambda self, depth: Subclassed(self.text()[:100], self.array()),
        ord("r"): _tensor,
        ord("o"): _oracle,
        ord("x"): lambda self, depth: Opaque(self.text()[:100]),
    }


class Subclassed:
    """An ndarray subclass the kernel saw (``array`` holds its numbers, ``name`` its class)."""

    def __init__(self, name: str, array: np.ndarray) -> None:
        self.name, self.array = name, array


def decode(data: bytes, limits: Limits = LIMITS, budget: Budget | None = None) -> Any:
    """The value in ``data``; raises Malformed unless it is exactly one value within limits
    (or within what is left of a shared ``budget``, which is then charged). An ndarray
    subclass comes back as :class:`Subclassed`; see :func:`plain`. The value is the sender's:
    any shape, for the reader to check."""
    budget = budget or Budget(limits)
    if type(data) is not bytes or len(data) > budget.bytes_left:
        raise Malformed("not bytes, or more bytes than allowed")
    dec = _Decoder(data, budget)
    value = dec.value()
    if dec.pos != len(data):
        raise Malformed("bytes after the value")
    budget.charge(len(data), dec.entries)
    return value


def plain(value: Any, found: list[str] | None = None) -> Any:
    """``value`` with every :class:`Subclassed` replaced by its plain array (names of the
    subclasses appended to ``found``)."""
    kind = type(value)
    if kind is Subclassed:
        if found is not None:
            found.append(value.name)
        return value.array
    if kind in (list, tuple):
        return kind(plain(v, found) for v in value)
    if kind is dict:
        return {k: plain(v, found) for k, v in value.items()}
    return value


# --------------------------------------------------------------------------- streams


def frame(
    value: object, limits: Limits = LIMITS, oracles: list[OracleFunction] | None = None
) -> bytes:
    """One frame: the 4-byte length and the encoded value."""
    payload = encode(value, limits, oracles)
    return _LEN.pack(len(payload)) + payload


def write_all(fd: int, data: bytes) -> None:
    """Write every byte to ``fd`` (a stream socket may take them in pieces)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _read_exactly(sock: socket.socket, n: int) -> bytes | None:
    """``n`` bytes, or None when the stream ends first (Malformed if it ends midway)."""
    chunks: list[bytes]
    chunks, left = [], n
    while left:
        chunk = sock.recv(min(left, 2**20))
        if not chunk:
            if left < n:
                raise Malformed("the stream ended inside a frame")
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def read_frame(sock: socket.socket, limits: Limits = LIMITS) -> bytes | None:
    """The next frame's payload from a stream socket, or None at the end of the stream.
    Raises Malformed for a frame longer than the limit (the stream cannot be trusted after)."""
    head = _read_exactly(sock, 4)
    if head is None:
        return None
    (n,) = _LEN.unpack(head)
    if n > limits.frame_bytes:
        raise Malformed(f"a frame of {n} bytes")
    body = _read_exactly(sock, n) if n else b""
    if body is None:
        raise Malformed("the stream ended inside a frame")
    return body
