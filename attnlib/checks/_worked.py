"""Hand-worked numbers several notebooks' checks build their cases from (no reference
solution: each is a closed form a learner could work out by hand)."""

import numpy as np
import numpy.typing as npt

# Scores 2·ln 3 apart give softmax weights 1/10 and 9/10 of two keys; ln 3, 1/4 and 3/4.
LN3 = np.log(3.0)


def gap_weight(gap: float) -> np.float64:
    """The weight on key 1 of two keys when it scores ``gap`` more than key 0."""
    return np.float64(1.0 / (1.0 + np.exp(-gap)))


def window_means(V: npt.NDArray[np.float64], window: int) -> npt.NDArray[np.float64]:
    """Row t: the mean of V[max(0, t − window + 1) … t] (uniform attention over a causal
    window; ``window = len(V)``: every earlier position, plain causal attention)."""
    return np.array([V[max(0, t - window + 1) : t + 1].mean(0) for t in range(len(V))])
