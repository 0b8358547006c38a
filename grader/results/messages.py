"""Every line a result shows when a notebook, or one of its rows, gets no grade: each wording
written once, here."""


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
