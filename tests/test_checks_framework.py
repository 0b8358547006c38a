"""The shared check machinery: stubs, crashes and wrong types become one clear message."""

import re

import numpy as np
import pytest
from fixtures.validate import UNIX_SOCKET_KERNELS

from attnlib.checks._cells import WIDTH
from attnlib.checks._core import CheckFailed, as_array, call, expect_close, expect_shape


def test_stub_says_not_written_yet():
    def softmax(x):
        raise NotImplementedError()

    with pytest.raises(CheckFailed, match="isn't written yet"):
        call(softmax, np.zeros(3))


def test_crash_is_reported_with_its_type():
    with pytest.raises(CheckFailed, match="raised ZeroDivisionError"):
        call(lambda x: 1 / 0, 1, name="f")


def test_torch_tensor_gets_a_conversion_hint():
    class FakeTensor:
        def detach(self):
            return self

    with pytest.raises(CheckFailed, match=r"\.numpy\(\)"):
        as_array(FakeTensor(), "f")


def test_shape_then_value_messages():
    with pytest.raises(CheckFailed, match=r"shape \(2,\), expected \(3,\)"):
        expect_shape(np.zeros(2), (3,), "f")
    with pytest.raises(CheckFailed, match=r"at index \(1,\)"):
        expect_close(np.array([0.0, 5.0]), np.array([0.0, 1.0]), "f")


def _run_in_a_kernel(cells):
    """Run ``cells`` in a real IPython kernel, as a learner steps through a notebook; return
    each cell's outputs."""
    from nbclient import NotebookClient
    from nbformat.v4 import new_code_cell, new_notebook

    nb = new_notebook(cells=[new_code_cell(c) for c in cells])
    client = NotebookClient(
        nb, allow_errors=True, timeout=60, kernel_name="python3", config=UNIX_SOCKET_KERNELS
    )
    client.execute()
    return [c.outputs for c in nb.cells]


def _cells_text(traceback: str) -> str:
    return re.sub(r"\x1b\[[0-9;]*m", "", traceback)


def _said(traceback: str) -> str:
    """A shown message as one line, without colours (the checks wrap it at WIDTH columns)."""
    return " ".join(_cells_text(traceback).split())


def _error(outputs):
    (error,) = [o for o in outputs if o.output_type == "error"]
    return error


def test_learner_sees_one_line_per_unwritten_exercise_in_a_real_kernel():
    """Stub, a demo cell using it, cells using what the demo cell set (or would have set
    after the call that stopped it), and a real typo."""
    cells = [
        "from attnlib.checks._core import call\nimport numpy as np",
        "def f(x):\n    raise NotImplementedError()",
        "call(f, 1)",  # the check
        "y = f(2)\nunit = 2**20",  # a demo cell using the exercise: its last line never runs
        "print(y)",  # a cell using the demo's result
        "print(unit)",  # a cell using what the demo cell would have set after the call
        "def f(x):\n    return x",  # the learner finishes the exercise
        "print(undefined_name)",  # now a NameError is just a NameError
    ]
    outputs = _run_in_a_kernel(cells)
    check, demo, follow, later, typo = (_error(outputs[i]) for i in (2, 3, 4, 5, 7))
    assert check.ename == "CheckFailed" and len(check.traceback) == 1
    assert "`f` isn't written yet" in check.traceback[0]
    assert demo.ename == "NotImplementedError" and len(demo.traceback) == 1
    assert "This cell uses `f`, which isn't written yet" in demo.traceback[0]
    assert follow.ename == "NameError" and len(follow.traceback) == 1
    assert "needs `f`, which isn't written yet" in follow.traceback[0]
    assert "NameError: name 'y' is not defined" in follow.traceback[0], "the error comes after"
    assert len(later.traceback) == 1 and "needs `f`, which isn't written yet" in later.traceback[0]
    assert typo.ename == "NameError" and "isn't written yet" not in "".join(typo.traceback)


def test_cells_after_a_failed_check_point_back_to_it_in_one_line():
    """A written but wrong exercise: its check fails, and every later cell that needs it
    (directly, through a result, through another exercise) says so in one line, hint first,
    draws no empty axes, and goes back to ordinary tracebacks once the check passes; an answer
    cell with a syntax error leaves its check one line that says to run it without an error."""
    cells = {
        "imports": "import matplotlib\nmatplotlib.use('module://matplotlib_inline.backend_inline')"
        "\nimport matplotlib.pyplot as plt\nimport types\n"
        "from attnlib.checks._core import CheckFailed, call, passed",
        "checks": "def check_g(g):\n    if call(g, 2) != 4:\n"
        "        raise CheckFailed('`g` is wrong.')\n    passed('g')\n\n\n"
        "def check_h(h):\n    if call(h, 2) != 40:\n        raise CheckFailed('`h` is wrong.')"
        "\n\n\nchecks = types.SimpleNamespace(check_softmax=check_g)",
        "g wrong": "def g(x):\n    return x + 1",  # should double
        "check g": "check_g(g)",
        "demo": "table = {'ok': 1}\nfor key in ('ok', 'doubled'):\n"
        "    table[key] = [1, 2][g(key == 'ok')]",
        "plot": "fig, ax = plt.subplots()\nax.plot(table['doubled'])",  # needs g through table
        "h crashes": "def h(x):\n    return g(x)[0]",  # a later exercise built on g
        "call h": "call(h, 1, name='h')",
        "h": "def h(x):\n    return g(x) * 10",
        "check h": "check_h(h)",
        "misnamed": "def soft_max(x):\n    return x",  # the exercise is `softmax`
        "check softmax": "checks.check_softmax(softmax)",
        "g fixed": "def g(x):\n    return 2 * x",
        "check g again": "check_g(g)",
        "syntax error": "def k(x)\n    return 2 * x",  # no colon: k is never defined
        "check k": "check_k = check_g\ncheck_k(k)",
        "after": "table['doubled']",  # g passes now: a plain KeyError again
    }
    outputs = dict(zip(cells, _run_in_a_kernel(list(cells.values())), strict=True))
    check = _error(outputs["check g"])
    assert check.ename == "CheckFailed" and check.traceback == ["\x1b[1;31m✗ `g` is wrong.\x1b[0m"]
    (demo,) = outputs["demo"]
    assert "needs `g`, which hasn't passed its check" in _said(demo.traceback[0])
    (plot,) = outputs["plot"]  # the error only: the figure it started is not drawn
    assert plot.ename == "KeyError" and len(plot.traceback) == 1
    assert _said(plot.traceback[0]).index("needs `g`") < _said(plot.traceback[0]).index(
        "KeyError: 'doubled'"
    )
    crash = _said(_error(outputs["call h"]).traceback[0])
    assert "`h` crashed" in crash and "calls your `g`, which fails its own check" in crash
    (used,) = _error(outputs["check h"]).traceback
    assert _said(used) == (
        "✗ This check uses your `g`, which fails its own check: fix `g` first. `h` is wrong."
    )
    misnamed = _error(outputs["check softmax"])
    assert len(misnamed.traceback) == 1
    assert "`softmax` is not defined: run its answer cell" in _said(misnamed.traceback[0])
    assert "A cell defines `soft_max`: did you mean `softmax`?" in _said(misnamed.traceback[0])
    assert _error(outputs["syntax error"]).ename == "SyntaxError"  # Python's own, with its line
    (undefined,) = _error(outputs["check k"]).traceback
    assert "`k` is not defined: run its answer cell above" in _said(undefined)
    assert any("✓ `g`" in o.get("text", "") for o in outputs["check g again"])
    assert len(_error(outputs["after"]).traceback) > 1, "an ordinary traceback once g passes"


def test_a_long_message_wraps_and_the_learner_s_warnings_join_it_in_a_real_kernel():
    """A failed check's message is wrapped at WIDTH columns, every line red, and a warning the
    learner's function gave (exp overflows) is folded into it, not printed before it; after a
    check that passes it is a note on stdout (stderr would fail the cell in Validate); the
    next cell's check does not repeat it."""
    cells = [
        "import numpy as np\nfrom attnlib.checks._core import CheckFailed, call, passed",
        "def check_f(f):\n    out = call(f, np.array([1000.0]))\n"
        "    if not np.isfinite(out).all():\n"
        "        raise CheckFailed('`f` returned inf. ' + 'Subtract the maximum first. ' * 6)\n"
        "    passed('f')",
        "def f(x):\n    return np.exp(x)",
        "check_f(f)",
        "def f(x):\n    np.exp(x)\n    return x * 0",  # right, yet it warns
        "check_f(f)",
        "def f(x):\n    return x * 0",
        "check_f(f)",
    ]
    outputs = _run_in_a_kernel(cells)
    (failed,) = outputs[3]
    (shown,) = failed.traceback
    lines = shown.split("\n")
    assert len(lines) > 2 and all(ln.startswith("\x1b[1;31m") for ln in lines), shown
    assert max(len(_cells_text(ln)) for ln in lines) <= WIDTH, shown
    said = _said(shown)
    assert said.startswith("✗ `f` returned inf. Subtract the maximum first."), said
    assert said.endswith(
        "Python warned while `f` ran: RuntimeWarning: overflow encountered in exp "
        "(at `return np.exp(x)`)."
    ), said
    (note,) = outputs[5]
    assert note.name == "stdout" and note.text.startswith("✓ `f`"), outputs[5]
    assert "Note: Python warned while `f` ran: RuntimeWarning: overflow" in note.text, note.text
    (clean,) = outputs[7]
    assert clean.name == "stdout" and "warned" not in clean.text, outputs[7]
