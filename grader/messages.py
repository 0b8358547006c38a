"""The line a result shows when a notebook gets no grade: one wording, written once."""


def not_graded(reason: str) -> str:
    return f"Not graded: {reason}; your instructor will look at it."


FAILED = not_graded("the grader failed on this notebook")
CRASHED = not_graded("the grader crashed on this notebook")
TAMPERED = not_graded("code in your notebook interfered with the grader's instrumentation")
