"""Every line the grader writes for a learner about a notebook, a cell or a check: why it got
no grade, why a cell stopped, what a check of a recorded result found. Each wording is written
once, here (tests pin them: tests/results/test_messages.py); the stages decide which applies.

Messages never quote text the kernel made once a hidden input could be in it: the callers
pass only what may be shown (grader.judging.judge says when).
"""

from grader.settings import Snapshot

# -------------------------------------------------------------------------- not graded


def not_graded_because(reason: str) -> str:
    """A notebook the grader could not grade: the student's line, pointing to the instructor."""
    return f"Not graded: {reason}; your instructor will look at it."


FAILED = not_graded_because("the grader failed on this notebook")
CRASHED = not_graded_because("the grader crashed on this notebook")
TAMPERED = not_graded_because("code in your notebook interfered with the grader's instrumentation")
UNREADABLE_RESULTS = "Not graded: your results could not be read."  # a test cell's record
NO_RESULT_YET = "Not graded yet: no result for this notebook in OUT (grade it with `make grade`)."


def past_notebook_limit(seconds: float) -> str:
    return (
        f"Not graded: the notebook ran out of its time budget ({seconds} s, notebook_timeout) "
        "before this could run."
    )


def kernel_kept_crashing(name: str) -> str:
    return f"Not graded: the kernel kept crashing before `{name}` could be checked."


# -------------------------------------------------------------------------- a cell's run
# A cell's status is the run stage's (grader.run.execute.CellStatus["status"]): ok, error,
# timeout, died, deadline or not-run.


def _stopped(kind: str | None, cfg: Snapshot, over_time: str, kernel_stopped: str) -> str | None:
    """Why a cell that timed out, stopped its kernel or was cut by the notebook's time budget
    did not finish (``over_time``/``kernel_stopped``: who, at the start of the sentence)."""
    if kind == "timeout":
        return f"{over_time} the {cfg.cell_timeout} s time limit."
    if kind == "died":
        return (
            f"{kernel_stopped} (a crash, os._exit, or more than the {cfg.memory_mb} MB memory "
            "limit)."
        )
    if kind == "deadline":
        return past_notebook_limit(cfg.notebook_timeout)
    return None


def answer_cell_stopped(
    name: str, kind: str | None, cfg: Snapshot, ename: str = "", evalue: object = None
) -> str | None:
    """Why the learner's answer cell ``name`` did not define what its check needs, from its
    status; None when it ran. ``ename``: the error's name as it may be shown; ``evalue``: its
    text, None when it may not be quoted."""
    if kind == "error":
        text = f": {evalue}" if evalue is not None else ""
        return f"Your `{name}` cell raised {ename}{text}".strip()
    return _stopped(
        kind,
        cfg,
        over_time=f"Your `{name}` cell ran longer than",
        kernel_stopped=f"Your `{name}` cell stopped the Python kernel",
    )


def check_cell_stopped(name: str, kind: str | None, cfg: Snapshot) -> str:
    """Why the check of ``name`` gave no verdict, from its test cell's status (one that did
    not run: the kernel kept crashing before it)."""
    stopped = _stopped(
        kind,
        cfg,
        over_time=f"Checking `{name}` took longer than",
        kernel_stopped=f"The Python kernel stopped while checking `{name}`",
    )
    return stopped or kernel_kept_crashing(name)


def check_did_not_run(name: str) -> str:
    """A test cell that ran but left no record (flagged as tampering)."""
    return f"The check of `{name}` did not run."


def answer_missing(name: str) -> str:
    return f"The answer cell for `{name}` is missing from your notebook."


NO_ANSWER_WRITTEN = "No answer written."  # a hand-graded answer left as released
GRADED_BY_HAND = "graded by hand"
PASSED = "✓ passed\n"  # a passed check's output in the graded notebook
NOT_RUN = "(Not re-run when grading: this demo cell only teaches, and no check depends on it.)\n"


# -------------------------------------------------------------------------- a check's verdict


# In place of a learner's error text that may not be quoted (grader.judging.judge's ``quote``).
WITHHELD = "its text is not shown once hidden checks have run; Validate shows it"
# The kernel's own text is never shown: a learner's code controls it, and could carry an
# earlier hidden cell's inputs out through its feedback.
FAILED_IN_KERNEL = (
    "This check failed when your notebook ran, though a replay of your results passed: it "
    "measures your function itself (e.g. its memory). Press Validate to see why."
)
RECORD_TOO_LARGE = "What this check recorded was too large to judge."
RESULT_TOO_LARGE = "Your function returned a value too large to record."


def not_defined(name: str) -> str:
    return f"`{name}` is not defined when its check runs."


def not_checked(name: str) -> str:
    """A visible check asked for a call the kernel never recorded."""
    return (
        f"`{name}` could not be checked: the check did not run as expected in your notebook "
        "(did your code change the checks or numpy?)."
    )


def check_stopped(ename: str) -> str:
    """A check that crashed on the learner's result: its error's name only (its text would
    quote the learner's values)."""
    return f"The check stopped on your result ({ename})."


def switched_off_watch(name: str) -> str:
    return (
        f"`{name}` switched off the grader's watch on its calls (sys.setprofile), so it "
        "cannot be graded."
    )


def calls_shortcut(name: str, shortcut: str | None) -> str:
    """``shortcut``: the function it calls, when the judge can name it safely."""
    return (
        f"`{name}` calls {shortcut or 'a ready-made solution'}: the exercise is to build it "
        "from NumPy operations."
    )


def hidden_not_run(name: str) -> str:
    return f"Hidden check: `{name}` did not run on every hidden input."


def hidden_raised(name: str, ename: str) -> str:
    return f"Hidden check: `{name}` raised {ename} on a hidden input."


def hidden_too_large(name: str) -> str:
    return f"Hidden check: `{name}` returned a value too large to record."


def hidden_not_finished(name: str) -> str:
    return f"Hidden check: `{name}` did not finish on a hidden input."


def hidden_not_numbers(name: str, ename: str) -> str:
    return f"Hidden check: `{name}` returned something that is not numbers ({ename})."
