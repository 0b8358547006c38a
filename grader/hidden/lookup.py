"""Hidden checks for notebook 01 (soft lookup)."""

import numpy as np

from grader.hidden import exercise


def _softmax_cases(rng):
    yield (rng.normal(size=7) * 3,)
    yield (rng.normal(size=(4, 6)) * 5,)
    yield (rng.normal(size=(2, 3, 5)) * 10 + 900,)
    yield (rng.normal(size=(5, 4)), 0)


def _naive(x, axis=-1):
    e = np.exp(x)
    return e / e.sum(axis=axis, keepdims=True)


def _wrong_axis(x, axis=-1):
    return softmax(x, axis=0 if axis != 0 else -1)


def _whole_array(x, axis=-1):
    e = np.exp(x - x.max())
    return e / e.sum()


@exercise("softmax", cases=_softmax_cases, mistakes=[
    (_wrong_axis, "`softmax` normalises over the wrong axis: rows of weights must sum to 1 "
                  "along `axis`."),
    (_whole_array, "`softmax` normalises the whole array at once instead of along `axis`."),
    (_naive, "`softmax` overflows for large scores: subtract the maximum first."),
])
def softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)
