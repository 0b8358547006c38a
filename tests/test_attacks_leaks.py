"""Issue 23's leak attacks (``fixtures/leaks.py``), read from the big graded batch, and the
kernel-side seals they rely on, tried in this process.

What reaches grades.csv or the feedback never quotes text made while hidden inputs were in
the kernel; replacing the recorders' functions or the stream they send on hides no
shortcut; an in-place change put back behind the recorder's back still fails as in
Validate; a student id that is a spreadsheet formula is written as text and read back as the
same student.
"""

import csv
import re

import numpy as np
import pytest
from fixtures.leaks import FORMULA, NB, STASH_MARK

from grader.course import REPO_ROOT, assignments
from grader.kernel import policy, recorders
from grader.results import csvfile


def _tests(graded, student):
    return graded[4][(student, NB)]["tests"]


def test_no_text_made_with_hidden_inputs_reaches_the_learner(graded):
    out = graded[1]
    shown = (out / "grades.csv").read_text()
    shown += (out / "feedback" / "leak_error_text.html").read_text()
    assert STASH_MARK not in shown and "Leak_" not in shown
    assert "`soft_lookup` raised ValueError" in shown  # the error is named, its text is not


def test_text_from_before_any_hidden_input_is_still_quoted(graded):
    rows = [r for r in graded[3] if r["student"] == "leak_clean_text"]
    softmax = next(r for r in rows if r["exercise"] == "softmax")
    assert "ValueError: CLEAN-TEXT: my own error" in softmax["message"]


def test_hidden_in_place_change_fails_both_checks(graded):
    tests = _tests(graded, "leak_hidden_mutation")
    for test in ("test_softmax", "test_softmax_hidden"):
        assert tests[test]["points"] == 0, (test, tests[test])
        assert "changed its input arrays in place" in tests[test]["message"]
    honest = _tests(graded, "honest")
    assert honest["test_softmax_hidden"]["points"] == honest["test_softmax_hidden"]["max_points"]


def test_swapped_recorders_still_see_the_shortcut(graded):
    tests = _tests(graded, "leak_recorder_swap")
    assert tests["test_softmax_hidden"]["points"] == 0
    assert "calls torch.softmax" in tests["test_softmax_hidden"]["message"]


def test_formula_student_is_text_in_every_csv(graded):
    out = graded[1]
    for name in ("grades.csv", "totals.csv", "report/exercises.csv", "report/flags.csv"):
        with open(out / name, newline="") as fh:
            cells = [c for row in csv.reader(fh) for c in row]
        risky = [c for c in cells if c[:1] in ("=", "+", "-", "@", "\t", "\r")]
        assert all(csvfile._number(c) for c in risky), (name, risky[:3])
    raw = (out / "grades.csv").read_text()
    assert "\n'=HYPERLINK(evil.example)," in raw
    mine = [r for r in csvfile.read(out / "grades.csv") if r["student"] == FORMULA]
    assert {r["notebook"] for r in mine} == set(assignments())
    graded_here = [r for r in mine if r["notebook"] == NB and r["points"] != ""]
    assert graded_here and all(r["points"] == r["max_points"] for r in graded_here)
    totals = {r["student"]: r for r in csvfile.read(out / "totals.csv")}
    assert totals[FORMULA]["total"] == totals["honest"]["total"]


# ----------------------------------------------------------------------------- in process

RULES = {"softmax": {"torch": ["softmax"]}}


def _torch_softmax(x, axis=-1):
    import torch

    return getattr(torch, "soft" + "max")(torch.from_numpy(x), dim=axis).numpy()


def _mutating(x, axis=-1):
    x -= 1
    return np.ones(3)


def _record(budget, name, fn, case):
    return recorders._hidden_one(budget, RULES, name, name, [case], {name: fn})


def test_recorders_ignore_replaced_module_globals(monkeypatch):
    """What leak_recorder_swap does, and more: every function of the module replaced by a
    pass-through; the recorder still sees the shortcut and the changed argument."""
    from grader import wire

    budget = recorders._frame_limits()[1]
    for attr, value in list(vars(recorders).items()):
        if callable(value) and not isinstance(value, type) and attr != "_hidden_one":
            monkeypatch.setattr(recorders, attr, lambda *a, **k: {})
    monkeypatch.setattr(recorders, "_STREAM", object())
    seen = _record(budget, "softmax", _torch_softmax, (np.ones(3),)).get("shortcuts")
    assert seen == ["torch.softmax"]
    entry = _record(budget, "m", _mutating, (np.zeros(3),))["results"][0]
    assert list(wire.decode(entry["after"])["0"]) == [-1.0, -1.0, -1.0]


def test_policy_ignores_cleared_lists(monkeypatch):
    monkeypatch.setattr(policy, "BLOCKED", set())
    policy.BLOCKED.clear()
    with pytest.raises(PermissionError, match="os.system"):
        policy.audit("os.system", ())


INSTALLED = """
import os, sys
from grader.kernel import channel, policy

class Stream:
    def __init__(self, name):
        self.name = name

    def send(self, value):
        print(self.name, value["kind"], value["detail"])

channel.CHANNEL = Stream("installed")
policy.install(["/"], ["/tmp"], [sys.prefix])
channel.CHANNEL, policy._STREAM = Stream("swapped"), None
policy.BLOCKED.clear()
try:
    os.system("true")
except PermissionError:
    print("refused")
"""


def test_policy_keeps_its_stream_and_its_lists():
    """In a process of its own (the audit hook stays for the life of the process)."""
    import subprocess
    import sys

    from grader.course import REPO_ROOT

    proc = subprocess.run(
        [sys.executable, "-c", INSTALLED], cwd=REPO_ROOT, capture_output=True, text=True
    )
    assert proc.stdout.splitlines() == ["installed blocked os.system", "refused"], proc.stderr


def test_judge_refuses_a_call_recorded_without_its_arguments_after():
    """A forged record that leaves out what a call did to its arguments (to hide an in-place
    change) is tampering: the real recorder always sends it."""
    from grader import wire
    from grader.judging.judge import Record, Tampered, judge_visible

    call = {"fn": "f", "args": wire.encode([np.zeros(2)]), "kwargs": wire.encode({})}
    call["result"] = wire.encode(np.zeros(2))
    body = wire.encode({"cell": "t", "calls": [call], "values": {"f": "callable"}})
    with pytest.raises(Tampered, match="leaves out what a call did"):
        judge_visible("f(np.zeros(2))", {"np": np}, Record(body, "test cell `t`"))
    call["after"] = wire.encode({"0": np.zeros(2)})
    body = wire.encode({"cell": "t", "calls": [call], "values": {"f": "callable"}})
    assert judge_visible("f(np.zeros(2))", {"np": np}, Record(body, "test cell `t`"))[0]


# What attacks try to create in the checkout: each must not exist (else it got through).
WRITTEN = {"{repo}/grades.csv", "{repo}/escape-native.txt"}


def test_every_path_of_the_checkout_an_attack_targets_exists():
    """An attack that reads a path the checkout no longer has cannot fail (issue 46:
    ``adversarial.py`` read ``grader/hidden/lookup.py``, renamed long ago): every
    ``{repo}/...`` path an attack fixture names exists on the host, but those it writes,
    which do not, in a folder that does. A rename breaks this test, not an attack silently."""
    named = {
        target
        for source in sorted((REPO_ROOT / "tests" / "fixtures").glob("*.py"))
        for target in re.findall(r"\{repo\}/[^\"'\s,)\]]+", source.read_text())
    }
    host = {t: REPO_ROOT / t.removeprefix("{repo}/").replace("{nb}", NB).replace("{NB}", NB)
            for t in named}  # fmt: skip
    assert WRITTEN < named and "{repo}/grader/hidden/nb01_soft_lookup.py" in named
    assert sorted(t for t in named - WRITTEN if not host[t].exists()) == []
    assert all(not host[t].exists() and host[t].parent.is_dir() for t in WRITTEN)
