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
