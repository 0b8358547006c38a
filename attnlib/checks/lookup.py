"""Visible checks for notebook 01 (soft lookup)."""

import numpy as np

from attnlib.checks._core import CheckFailed, call, expect_close, expect_finite, expect_shape, passed


def check_softmax(softmax):
    name = "softmax"
    x = np.array([0.0, np.log(2.0), np.log(3.0)])  # softmax = [1, 2, 3] / 6
    out = expect_shape(call(softmax, x, name=name), (3,), name)
    expect_close(out, np.array([1, 2, 3]) / 6, name,
                 hint="softmax(x)_i = exp(x_i) / sum_j exp(x_j).")

    rows = np.array([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0]])  # [2, 3]
    out = expect_shape(call(softmax, rows, name=name), (2, 3), name,
                       hint="The output must have the same shape as the input.")
    if np.allclose(out.sum(axis=0), 1) and not np.allclose(out.sum(axis=-1), 1):
        raise CheckFailed("Columns sum to 1 but rows don't: did you normalise over axis 0 "
                          "instead of the last axis (`axis=-1`)?")
    if np.isclose(out.sum(), 1):
        raise CheckFailed("The whole array sums to 1: normalise each row separately "
                          "(sum with `axis=axis, keepdims=True`).")
    expect_close(out.sum(axis=-1), np.ones(2), name + " (row sums)",
                 hint="Each row of weights must sum to 1.")

    big = np.array([1000.0, 1001.0, 1002.0])
    out = call(softmax, big, name=name)
    expect_finite(out, name, hint="exp(1000) overflows: subtract the maximum before exponentiating.")
    expect_close(out, call(softmax, big - 1000.0, name=name), name,
                 hint="Adding a constant to every score must not change the weights.")

    cols = call(softmax, rows.T, axis=0, name=name)
    expect_close(np.asarray(cols).sum(axis=0), np.ones(2), name + "(x, axis=0) column sums",
                 hint="Use the `axis` argument instead of always normalising the last axis.")
    passed(name)
