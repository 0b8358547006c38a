"""The trusted side of grading: decide every test cell from what the kernel recorded.

Runs in the grader's own process, never in the student's kernel. A visible test cell is
decided by running its (trusted) source here, against *replays* of the learner's functions
that return exactly what the kernel recorded for the same arguments; a hidden test cell by
comparing recorded results with ``grader.hidden``'s references on the grader's own inputs.
Monkeypatched ``np.allclose``, patched check functions, IPython hooks, ``__eq__`` objects and
ndarray subclasses therefore change nothing here: only recorded numbers count. A function
the kernel saw calling its exercise's whole-solution shortcut (``grader.hidden.shortcuts``)
fails.
"""

import ast
import contextlib
import io
import json
import re
from pathlib import Path

import numpy as np

from attnlib.checks._core import CheckFailed, call
from grader.sandbox_kernel import TAMPERED

MAX_RECORD_BYTES = 50 * 2**20
_FILE = re.compile(r"a\d+\.npy")


class NotChecked(BaseException):
    """The check asked for a call the kernel never recorded (tampering or a flaky check)."""


class _StandIn:
    """Stands for a returned object that is not numbers; it compares equal to nothing."""

    def __init__(self, type_name: str, tensor: bool = False):
        self.type_name = type_name
        if tensor:
            self.detach = None  # so checks recognise "a torch tensor"

    def __repr__(self):
        return f"<{self.type_name}>"

    __eq__ = lambda self, other: False  # noqa: E731
    __hash__ = object.__hash__


def load_record(folder: Path) -> dict | None:
    path = folder / "record.json"
    if not path.is_file() or path.is_symlink() or path.stat().st_size > MAX_RECORD_BYTES:
        return None
    try:
        record = json.loads(path.read_text())
    except (ValueError, UnicodeDecodeError):
        return None
    return record if isinstance(record, dict) else None


def decode(node, folder: Path):
    """A recorded value, rebuilt from JSON and ``.npy`` files (never pickles)."""
    if not isinstance(node, dict):
        return _StandIn("malformed record")
    kind = node.get("t")
    if kind == "nd":
        name = str(node.get("f", ""))
        path = folder / name
        if (
            not _FILE.fullmatch(name)
            or not path.is_file()
            or path.is_symlink()
            or path.stat().st_size > MAX_RECORD_BYTES
        ):
            return _StandIn("unreadable array")
        try:
            return np.load(path, allow_pickle=False)
        except (ValueError, OSError):
            return _StandIn("unreadable array")
    if kind == "num":
        value = node.get("v")
        return value if type(value) in (int, float, bool) else _StandIn("number")
    if kind == "none":
        return None
    if kind == "str":
        return str(node.get("v", ""))
    if kind == "seq":
        items = [decode(v, folder) for v in node.get("v", [])][:10_000]
        return tuple(items) if node.get("k") == "tuple" else items
    if kind == "dict":
        return {str(k): decode(v, folder) for k, v in node.get("v", [])}
    if kind == "tensor":
        return _StandIn("torch.Tensor", tensor=True)
    return _StandIn(str(node.get("type", "object"))[:60])


def _equal(a, b) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        try:
            return (
                isinstance(a, np.ndarray)
                and isinstance(b, np.ndarray)
                and a.shape == b.shape
                and bool(np.array_equal(a, b, equal_nan=True))
            )
        except TypeError:
            return False
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    if isinstance(a, _StandIn) or isinstance(b, _StandIn):  # e.g. a function argument
        names = {x.type_name if isinstance(x, _StandIn) else type(x).__name__ for x in (a, b)}
        return len(names) == 1
    try:
        return bool(a == b) or (a != a and b != b)
    except Exception:  # noqa: BLE001
        return False


def _raise(info: dict):
    ename = str(info.get("ename", "Exception"))[:60]
    evalue = str(info.get("evalue", ""))
    if ename == "NotImplementedError":
        raise NotImplementedError(evalue)
    if not ename.isidentifier():
        ename = "Exception"
    raise type(ename, (Exception,), {})(evalue)


def outcome(entry: dict, folder: Path):
    """Return or raise what the learner's function did in the kernel."""
    if "raise" in entry:
        _raise(entry["raise"] if isinstance(entry["raise"], dict) else {})
    if "result" not in entry:
        raise NotChecked("the call never finished in the kernel")
    return decode(entry["result"], folder)


class Replay:
    """Plays back the learner's function: same arguments, same answer as in the kernel."""

    def __init__(self, name: str, calls: list, folder: Path):
        self.__name__ = name
        self.folder = folder
        self.calls = [c for c in calls if isinstance(c, dict) and c.get("fn") == name]
        self.used: set[int] = set()

    def __call__(self, *args, **kwargs):
        for i, entry in enumerate(self.calls):
            if i in self.used:
                continue
            rec_args = decode(entry.get("args"), self.folder)
            rec_kwargs = decode(entry.get("kwargs"), self.folder)
            if _equal(list(rec_args), list(args)) and _equal(rec_kwargs, kwargs):
                self.used.add(i)
                return outcome(entry, self.folder)
        raise NotChecked(self.__name__)


def _shortcut(name: str, hits) -> tuple[str, list[str]] | None:
    """(message, flags) when the kernel saw ``name`` call a shortcut, else None."""
    if not hits or not isinstance(hits, list):
        return None
    hits = [str(h)[:100] for h in hits]
    if TAMPERED in hits:
        return (
            f"`{name}` switched off the grader's watch on its calls (sys.setprofile), "
            "so it cannot be graded.",
            [f"`{name}` switched off the grader's profiler while it ran (tampering)"],
        )
    return (
        f"`{name}` calls {hits[0]}: the exercise is to build it from NumPy operations.",
        [f"whole-solution shortcut at run time: `{name}` calls {', '.join(hits)}"],
    )


def judge_visible(source: str, trusted_ns: dict, record: dict, folder: Path):
    """(passed, message, flags) for a visible test cell."""
    ns = dict(trusted_ns)
    flags = []
    for name, node in (record.get("values") or {}).items():
        if name in trusted_ns or not isinstance(name, str):
            continue
        if isinstance(node, dict) and node.get("t") == "callable":
            ns[name] = Replay(name, record.get("calls") or [], folder)
        else:
            ns[name] = decode(node, folder)
    missing = [n for n in record.get("missing") or [] if n not in trusted_ns]
    for name, node in (record.get("values") or {}).items():
        if isinstance(node, dict) and node.get("subclass"):
            flags.append(f"`{name}` is an ndarray subclass ({node['subclass']})")
    for entry in record.get("calls") or []:
        if isinstance(entry, dict) and (
            found := _shortcut(str(entry.get("fn")), entry.get("shortcuts"))
        ):
            return False, found[0], flags + found[1]
    try:
        with contextlib.redirect_stdout(io.StringIO()):  # checks print "passed" lines
            exec(compile(source, "<visible check>", "exec"), ns)
    except CheckFailed as err:
        return False, str(err), flags
    except NotChecked as err:
        flags.append(f"visible check of `{err}` did not run as recorded in the kernel")
        return (
            False,
            (
                f"`{err}` could not be checked: the check did not run as expected in "
                "your notebook (did your code change the checks or numpy?)."
            ),
            flags,
        )
    except NameError as err:
        name = getattr(err, "name", None) or (missing[0] if missing else "?")
        return False, f"`{name}` is not defined when its check runs.", flags
    except Exception as err:  # noqa: BLE001 (a check crashing on odd results is a failed check)
        return False, f"The check stopped on your result: {type(err).__name__}: {err}", flags
    return True, "", flags


def judge_hidden(name: str, cases: list, record: dict, folder: Path):
    """(passed, message, flags) for one ``verify(name, fn)`` of a hidden test cell."""
    from grader.hidden import check_case

    if found := _shortcut(name, record.get("shortcuts")):
        return False, found[0], found[1]
    results = record.get("results") or []
    flags = []
    for i, args in enumerate(cases):
        if i >= len(results):
            return False, f"Hidden check: `{name}` did not run on every hidden input.", flags
        entry = results[i] if isinstance(results[i], dict) else {}
        try:
            got = call(lambda e=entry: outcome(e, folder), name=name)
            if isinstance(entry.get("result"), dict) and entry["result"].get("subclass"):
                flags.append(
                    f"`{name}` returned an ndarray subclass ({entry['result']['subclass']})"
                )
            check_case(name, args, got)
        except CheckFailed as err:
            return False, str(err), flags
        except NotChecked:
            return False, f"Hidden check: `{name}` did not finish on a hidden input.", flags
        except Exception as err:  # noqa: BLE001 (a result the comparison cannot handle)
            return (
                False,
                (
                    f"Hidden check: `{name}` returned something that is not numbers "
                    f"({type(err).__name__})."
                ),
                flags,
            )
    return True, "", flags


def verify_calls(source: str) -> list[tuple[str, str]]:
    """[(exercise name, learner's function name)] for each ``verify("name", fn)`` in a
    hidden test cell's source."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "verify":
            first, second = (node.args + [None, None])[:2]
            if isinstance(first, ast.Constant) and isinstance(second, ast.Name):
                found.append((first.value, second.id))
    return found
