"""The hidden inputs of an exercise, drawn with a seed: the worker draws them to send to the
kernel (``grader.run.kernelrun``), the judge draws the same to check the answers
(``grader.judging.judge``)."""

import numpy as np


def hidden_cases(name: str, seed: int) -> list[tuple[object, ...]]:
    """The hidden inputs of exercise ``name`` drawn with ``seed`` (the same in the worker,
    which sends them to the kernel, and in the judge)."""
    from grader.hidden import spec  # the catalogue: loaded when a case is first drawn

    return [tuple(args) for args in spec(name).cases(np.random.default_rng(seed))]
