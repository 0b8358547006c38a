"""Every line the grader writes for a learner, pinned word for word (grader/results/messages.py):
a wording changes here, on purpose, or not at all. No kernel, no grading: milliseconds."""

import pytest

from grader.results import messages
from grader.settings import GraderSettings

CFG = GraderSettings(cell_timeout=7, notebook_timeout=90, memory_mb=1234).snapshot()
PAST = (
    "Not graded: the notebook ran out of its time budget (90 s, notebook_timeout) "
    "before this could run."
)
KILLERS = "(a crash, os._exit, or more than the 1234 MB memory limit)."


def test_a_notebook_not_graded_says_why_and_who_looks_at_it():
    assert messages.FAILED == (
        "Not graded: the grader failed on this notebook; your instructor will look at it."
    )
    assert messages.CRASHED == (
        "Not graded: the grader crashed on this notebook; your instructor will look at it."
    )
    assert messages.TAMPERED == (
        "Not graded: code in your notebook interfered with the grader's instrumentation; "
        "your instructor will look at it."
    )
    assert messages.UNREADABLE_RESULTS == "Not graded: your results could not be read."
    assert messages.past_notebook_limit(90) == PAST
    assert messages.kernel_kept_crashing("attend") == (
        "Not graded: the kernel kept crashing before `attend` could be checked."
    )


@pytest.mark.parametrize(
    ("kind", "answer", "check"),
    [
        ("timeout", "Your `attend` cell ran longer than the 7 s time limit.",
         "Checking `attend` took longer than the 7 s time limit."),
        ("died", f"Your `attend` cell stopped the Python kernel {KILLERS}",
         f"The Python kernel stopped while checking `attend` {KILLERS}"),
        ("deadline", PAST, PAST),
        ("ok", None, "Not graded: the kernel kept crashing before `attend` could be checked."),
        ("not-run", None,
         "Not graded: the kernel kept crashing before `attend` could be checked."),
        (None, None, "Not graded: the kernel kept crashing before `attend` could be checked."),
    ],
)  # fmt: skip
def test_a_cell_that_stopped_says_how_with_the_limit_it_hit(kind, answer, check):
    assert messages.answer_cell_stopped("attend", kind, CFG) == answer
    assert messages.check_cell_stopped("attend", kind, CFG) == check


def test_an_answer_cell_s_error_is_quoted_only_when_it_may_be():
    quoted = messages.answer_cell_stopped("attend", "error", CFG, "MyError", "bad x")
    assert quoted == "Your `attend` cell raised MyError: bad x"
    assert messages.answer_cell_stopped("attend", "error", CFG, "Exception") == (
        "Your `attend` cell raised Exception"
    )


def test_a_check_s_verdict_messages():
    assert messages.check_did_not_run("attend") == "The check of `attend` did not run."
    assert messages.answer_missing("attend") == (
        "The answer cell for `attend` is missing from your notebook."
    )
    assert messages.not_defined("attend") == "`attend` is not defined when its check runs."
    assert messages.not_checked("attend") == (
        "`attend` could not be checked: the check did not run as expected in your notebook "
        "(did your code change the checks or numpy?)."
    )
    assert messages.check_stopped("KeyError") == "The check stopped on your result (KeyError)."
    assert messages.RECORD_TOO_LARGE == "What this check recorded was too large to judge."
    assert messages.RESULT_TOO_LARGE == "Your function returned a value too large to record."
    assert messages.FAILED_IN_KERNEL == (
        "This check failed when your notebook ran, though a replay of your results passed: it "
        "measures your function itself (e.g. its memory). Press Validate to see why."
    )
    assert messages.WITHHELD == (
        "its text is not shown once hidden checks have run; Validate shows it"
    )


def test_a_shortcut_is_named_only_when_the_judge_can_name_it():
    assert messages.calls_shortcut("attend", "torch.softmax") == (
        "`attend` calls torch.softmax: the exercise is to build it from NumPy operations."
    )
    assert messages.calls_shortcut("attend", None) == (
        "`attend` calls a ready-made solution: the exercise is to build it from NumPy operations."
    )
    assert messages.switched_off_watch("attend") == (
        "`attend` switched off the grader's watch on its calls (sys.setprofile), so it cannot "
        "be graded."
    )


def test_hidden_checks_name_the_exercise_never_the_input():
    assert messages.hidden_not_run("f") == "Hidden check: `f` did not run on every hidden input."
    assert messages.hidden_raised("f", "ValueError") == (
        "Hidden check: `f` raised ValueError on a hidden input."
    )
    assert messages.hidden_too_large("f") == (
        "Hidden check: `f` returned a value too large to record."
    )
    assert messages.hidden_not_finished("f") == (
        "Hidden check: `f` did not finish on a hidden input."
    )
    assert messages.hidden_not_numbers("f", "TypeError") == (
        "Hidden check: `f` returned something that is not numbers (TypeError)."
    )


def test_the_graded_notebook_s_fixed_lines():
    assert messages.PASSED == "✓ passed\n"
    assert messages.NO_ANSWER_WRITTEN == "No answer written."
    assert messages.GRADED_BY_HAND == "graded by hand"
    assert messages.NOT_RUN == (
        "(Not re-run when grading: this demo cell only teaches, and no check depends on it.)\n"
    )
    assert messages.NO_RESULT_YET == (
        "Not graded yet: no result for this notebook in OUT (grade it with `make grade`)."
    )
