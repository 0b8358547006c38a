"""The shared check machinery: stubs, crashes and wrong types become one clear message."""

import numpy as np
import pytest

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


def test_learner_sees_one_line_per_unwritten_exercise_in_a_real_kernel():
    """Stub, a demo cell using it, a cell using the demo's result, and a real typo."""
    from nbclient import NotebookClient
    from nbformat.v4 import new_code_cell, new_notebook

    cells = [
        "from attnlib.checks._core import call\nimport numpy as np",
        "def f(x):\n    raise NotImplementedError()",
        "call(f, 1)",  # the check
        "y = f(2)",  # a demo cell using the exercise
        "print(y)",  # a cell using the demo's result
        "def f(x):\n    return x",  # the learner finishes the exercise
        "print(undefined_name)",  # now a NameError is just a NameError
    ]
    nb = new_notebook(cells=[new_code_cell(c) for c in cells])
    NotebookClient(nb, allow_errors=True, timeout=60, kernel_name="python3").execute()
    errors = [[o for o in c.outputs if o.output_type == "error"] for c in nb.cells]
    check, demo, follow, typo = errors[2][0], errors[3][0], errors[4][0], errors[6][0]
    assert check.ename == "CheckFailed" and len(check.traceback) == 1
    assert "`f` isn't written yet" in check.traceback[0]
    assert demo.ename == "NotImplementedError" and len(demo.traceback) == 1
    assert "This cell uses `f`, which isn't written yet" in demo.traceback[0]
    assert follow.ename == "NameError" and len(follow.traceback) == 1
    assert "`f` isn't written yet" in follow.traceback[0]
    assert typo.ename == "NameError" and "isn't written yet" not in "".join(typo.traceback)
