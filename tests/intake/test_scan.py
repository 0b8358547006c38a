"""grader/intake/scan.py, directly: the flags of one answer cell, from its source alone."""

import pytest

from grader.intake.scan import module_names, scan_cell

MODULES = {"np": "numpy", "checks": "attnlib.checks"}


def _flags(source, grade_id="softmax", exercises=frozenset({"softmax", "attend"})):
    return scan_cell(grade_id, source, MODULES, set(exercises))


def test_an_honest_answer_has_no_flag():
    assert _flags("def softmax(x):\n    e = np.exp(x - x.max())\n    return e / e.sum()") == []


@pytest.mark.parametrize(
    ("source", "flag"),
    [
        ("import subprocess", "`softmax` line 1: imports `subprocess` (starts processes)"),
        ("from attnlib.checks import x", "`softmax` line 1: imports `attnlib.checks.x` from the "
         "course's helper package (is it the course's own version of `softmax`?)"),
        ("np.allclose = lambda *a: True", "`softmax` line 1: monkeypatches `np.allclose`"),
        ("get_ipython().events = 1", "`softmax` line 1: replaces IPython hook "),
        ("x = 1\n%time x", "`softmax` line 2: IPython magic or shell command `%time x`"),
        ("exec('1')", "`softmax` line 1: calls `exec` (runs generated code)"),
        ("open('a')", "`softmax` line 1: opens a file"),
        ("class A:\n    def __eq__(s, o): return True",
         "`softmax` line 2: defines `__eq__` (objects that fool comparisons)"),
        ("class S(np.ndarray): pass",
         "`softmax` line 1: subclasses `np.ndarray` (objects that fool comparisons)"),
        ("p = '../solutions/x'", "`softmax` line 1: mentions a grading path: '../solutions/x'"),
        ("def f():\n    global attend", "`softmax` line 2: rebinds exercise names globally: "
         "['attend']"),
        ("import sys\nsys.modules", "`softmax` line 2: uses `sys.modules` (reaches loaded "
         "modules, the grader's too)"),
        ("import os\nos._exit(0)", "`softmax` line 2: calls `os._exit`"),
        ("y = checks.softmax", "`softmax` line 1: whole-solution shortcut: uses `checks.softmax`"),
        ("y = checks.other", "`softmax` line 1: uses the course's helper `checks.other` in an "
         "answer"),
    ],
)  # fmt: skip
def test_each_risky_construct_is_flagged_with_its_line(source, flag):
    assert any(f.startswith(flag) for f in _flags(source)), _flags(source)


def test_a_cell_that_does_not_parse_is_flagged_for_its_magics_only():
    assert _flags("!ls\ndef (") == ["`softmax` line 1: IPython magic or shell command `!ls`"]


def test_a_flag_is_listed_once():
    assert len(_flags("exec('1')\nexec('1')")) == 2  # two lines: two flags
    assert len(_flags("import subprocess, subprocess")) == 1


def test_module_names_reads_what_a_trusted_cell_binds():
    assert module_names("import numpy as np\nimport os.path\nfrom attnlib import checks") == {
        "np": "numpy",
        "os": "os.path",
        "checks": "attnlib.checks",
    }
    assert module_names("def (") == {}
