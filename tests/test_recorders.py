"""The shortcut tripwire (``grader.kernel.recorders.call_watched`` and ``torchwatch``), tried
in this process on every route to a library's implementation that issue 32 names, with each
exercise's own shortcut set from the catalogue; honest answers that pass NumPy through
``functools.partial`` and ``operator.methodcaller`` record nothing.
"""

import functools
import operator
import sys

import numpy as np
import pytest
import torch

from grader.hidden import shortcuts
from grader.kernel import recorders, torchwatch

X = np.random.default_rng(0).normal(size=(3, 5))
T = torch.from_numpy(X)
Q = torch.randn(2, 4, 8, dtype=torch.float64)


def _seen(exercise: str, fn) -> list:
    seen: dict = {}
    recorders.call_watched(shortcuts()[exercise], fn, (), {}, seen)
    return list(seen)


# Each route returns softmax(X) over the last axis, through torch.
SOFTMAX_ROUTES = {
    "partial of a built name": lambda: functools.partial(getattr(torch, "soft" + "max"))(T, -1),
    "methodcaller": lambda: operator.methodcaller("softmax", -1)(T),
    "module vars()": lambda: vars(torch)["softmax"](T, -1),
    "unbound method in a container": lambda: [torch.Tensor.softmax][0](T, -1),
    "map": lambda: list(map(torch.softmax, [T], [-1]))[0],
    "lambda": lambda: (lambda t: t.softmax(-1))(T),
    "log_softmax then exp": lambda: functools.partial(torch.log_softmax)(T, -1).exp(),
    "torch.special.softmax": lambda: functools.partial(torch.special.softmax)(T, -1),
    "Tensor.softmax method": lambda: functools.partial(T.softmax)(-1),
    "torch.nn.functional.softmax": lambda: torch.nn.functional.softmax(T, -1),
    "nn.Softmax module": lambda: torch.nn.Softmax(-1)(T),
    "softmin of the negation": lambda: functools.partial(torch.nn.functional.softmin)(-T, -1),
    "_VariableFunctions": lambda: functools.partial(torch._C._VariableFunctions.softmax)(T, -1),
    "TensorBase through map": lambda: list(map(torch._C.TensorBase.softmax, [T], [-1]))[0],
    "operator overload": lambda: torch.ops.aten._softmax.default(T, -1, False),
}


@pytest.mark.parametrize("route", SOFTMAX_ROUTES)
def test_every_route_to_torch_softmax_is_recorded(route):
    got = []
    hits = _seen("softmax", lambda: got.append(SOFTMAX_ROUTES[route]()))
    assert np.allclose(got[0].numpy(), np.exp(X) / np.exp(X).sum(-1, keepdims=True))
    assert hits and all(h.startswith("torch.") for h in hits), hits
    assert recorders.TAMPERED not in hits


def test_torch_imported_by_the_graded_call_is_watched_from_then():
    """The mode goes on when torch's import ends inside the call (a fresh interpreter: torch
    is loaded in this one)."""
    import subprocess

    from grader.course import REPO_ROOT

    code = (
        "import functools\n"
        "from grader.hidden import shortcuts\n"
        "from grader.kernel import recorders\n"
        "def softmax():\n"
        "    import torch\n"
        "    return functools.partial(torch.softmax)(torch.ones(3), 0)\n"
        "seen = {}\n"
        "recorders.call_watched(shortcuts()['softmax'], softmax, (), {}, seen)\n"
        "print(sorted(seen))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, timeout=300
    )
    assert proc.stdout.strip() == "['torch.softmax']", proc.stderr


def test_each_exercise_s_torch_shortcuts_are_recorded_through_partial():
    """Every exercise banning torch's attention names sees it through a partial; its torch
    building blocks (softmax, matmul) stay allowed."""
    sdpa = functools.partial(torch.nn.functional.scaled_dot_product_attention)
    banned = [
        ex
        for ex, rules in shortcuts().items()
        if "scaled_dot_product_attention" in torchwatch.names_for(rules)
    ]
    assert {"attention", "multi_head_attention", "sliding_window_attention"} <= set(banned)
    for exercise in banned:
        hits = _seen(exercise, lambda: sdpa(Q, Q, Q))
        assert "torch._C._nn.scaled_dot_product_attention" in hits, (exercise, hits)
        assert _seen(exercise, lambda: functools.partial(torch.softmax)(Q @ Q.mT, -1)) == []


def test_attnlib_shortcuts_are_recorded_through_partial_and_map():
    from attnlib import model, patterns

    assert _seen("causal_mask", lambda: list(map(model.causal_mask, [4]))) == [
        "attnlib.model.causal_mask"
    ]
    A = np.tril(np.ones((4, 4)))
    hits = _seen("self_score", lambda: functools.partial(patterns.template_score)(A, A))
    assert hits == ["attnlib.patterns.template_score"]


def test_numpy_through_partial_and_methodcaller_records_nothing():
    def softmax(x, axis=-1):
        shift = functools.partial(np.max, axis=axis, keepdims=True)
        e = np.exp(x - shift(x))
        return e / operator.methodcaller("sum", axis=axis, keepdims=True)(e)

    hits = _seen("softmax", lambda: list(map(softmax, [X])))
    assert hits == []


def test_popping_torch_s_mode_is_tampering():
    from torch.overrides import _pop_mode

    def sneaky():
        _pop_mode()  # the function mode the tripwire pushed
        return functools.partial(torch.softmax)(T, -1)

    assert recorders.TAMPERED in _seen("softmax", sneaky)
    assert torch._C._len_torch_function_stack() == 0


def test_a_trace_function_set_by_the_graded_call_is_tampering():
    def sneaky():
        sys.settrace(lambda *a: None)
        return X

    assert _seen("softmax", sneaky) == [recorders.TAMPERED]
    assert sys.gettrace() is None


# ------------------------------------------------------------------ the frames route, refused

POLICY = """
import os, sys, sysconfig
from grader.kernel import channel, policy

class Stream:
    def send(self, value):
        pass

channel.CHANNEL = Stream()
paths = sysconfig.get_paths()
libraries = [paths["stdlib"], paths["purelib"], os.path.abspath("grader/kernel")]
policy.install(["/"], ["/tmp"], libraries)
exec(compile(sys.stdin.read(), "<notebook cell>", "exec"), {})
"""
CELL = """
import collections, gc, inspect, io, logging, sys, traceback
from grader.kernel import recorders

def gen():
    yield 1

def raised():
    try:
        raise ValueError
    except ValueError as err:
        return err.__traceback__.tb_frame

TRIES = {
    "sys._getframe": lambda: sys._getframe(0),
    "inspect.currentframe": inspect.currentframe,
    "inspect.stack": inspect.stack,
    "sys._current_frames": sys._current_frames,
    "gc.get_referrers": lambda: gc.get_referrers(gen),
    "gc.get_objects": gc.get_objects,
    "gi_frame": lambda: gen().gi_frame,
    "tb_frame": raised,
    "recorders' code": lambda: setattr(recorders.call_watched, "__code__", gen.__code__),
    "their defaults": lambda: setattr(recorders.params, "__defaults__", ()),
    # what libraries do for themselves, or a notebook does honestly: allowed
    "namedtuple": lambda: collections.namedtuple("P", "x y"),
    "logging": lambda: logging.getLogger("cell").info("hi"),
    "inspect.signature": lambda: inspect.signature(recorders.call_watched),
    "print_exc": lambda: traceback.print_exc(file=io.StringIO()),
}
for name, attempt in TRIES.items():
    try:
        attempt()
        print(name, "allowed")
    except PermissionError:
        print(name, "refused")
"""


def test_notebook_code_gets_no_frame_no_object_finder_and_no_recorder_code():
    """In a process of its own (the audit hook stays for the life of the process)."""
    import subprocess

    from grader.course import REPO_ROOT

    proc = subprocess.run(
        [sys.executable, "-c", POLICY],
        input=CELL,
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    said = dict(line.rsplit(" ", 1) for line in proc.stdout.splitlines())
    allowed = ["namedtuple", "logging", "inspect.signature", "print_exc"]
    assert said == {
        name: "allowed" if name in allowed else "refused"
        for name in [line.split('"')[1] for line in CELL.splitlines() if line.startswith('    "')]
    }, proc.stderr


def _alternatives() -> list:
    from grader.hidden import spec

    return [
        pytest.param(exercise, alternative, id=f"{exercise}-{alternative.label}")
        for exercise in shortcuts()
        for alternative in spec(exercise).alternatives
    ]


@pytest.mark.parametrize(("exercise", "alternative"), _alternatives())
def test_catalogued_right_answers_record_no_shortcut(exercise, alternative):
    """Every unusual right answer of an exercise that bans shortcuts (loops, einsum, torch
    building blocks) runs unchanged under the tripwire and records nothing."""
    from grader.hidden import catalogue, compile_answer, same, spec

    entry = spec(exercise)
    scope = {"np": np, **{n: ex.reference for n, ex in catalogue(entry.notebook).items()}}
    answer = compile_answer(alternative.source, exercise, scope)
    for args in entry.cases(np.random.default_rng(1)):
        seen: dict = {}
        got = recorders.call_watched(shortcuts()[exercise], answer, tuple(args), {}, seen)
        assert seen == {}, (alternative.label, seen)
        assert same(got, answer(*args), entry.atol, entry.rtol)
