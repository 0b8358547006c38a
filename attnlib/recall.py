"""One fixed-size state against keeping every item: the memory demo of notebook 01.

A recurrent net carries the whole past forward in one state whose size never changes.
The simplest such state that can still be read by content is an outer-product memory:
each step adds ``outer(k_t, v_t)`` to a ``[d, d_v]`` matrix, and reading with a key
multiplies it back out. Attention keeps every (key, value) pair instead and reads them
directly. This module stores random items both ways and measures what comes back.

The state's read error has two causes, measured apart: overlapping keys (random keys are
never quite orthogonal, so every item leaks into every read) and capacity (more than d
keys cannot all be orthogonal in d dimensions). ``spread_keys`` removes the first cause as
far as d dimensions allow.
"""

from collections.abc import Callable, Iterable

import numpy as np
import numpy.typing as npt

Array = npt.NDArray[np.float64]


def make_items(T: int, d: int, d_v: int, rng: np.random.Generator) -> tuple[Array, Array]:
    """T random items: unit-length keys (so each key matches itself best) and values."""
    keys = rng.normal(size=(T, d))  # [T, d]
    keys /= np.linalg.norm(keys, axis=1, keepdims=True)
    values = rng.normal(size=(T, d_v))  # [T, d_v]
    return keys, values


def spread_keys(T: int, d: int) -> Array:
    """T unit keys ``[T, d]`` that overlap as little as d dimensions allow.

    Orthonormal while T <= d (so reading the state has no crosstalk at all). Beyond, a
    harmonic tight frame (cosines and sines of d/2 frequencies): its keys' summed squared
    overlaps reach Welch's lower bound, so the state's mean squared read error on random
    values is the least any T unit keys can give, ``capacity_floor(T, d)`` squared.
    """
    if T <= d:
        return np.eye(T, d)
    angle = 2 * np.pi * np.arange(T)[:, None] * np.arange(1, d // 2 + 1)[None, :] / T
    frame: Array = np.sqrt(2 / d) * np.concatenate([np.cos(angle), np.sin(angle)], axis=1)
    return frame


def capacity_floor(T: int, d: int) -> float:
    """sqrt(max(T/d - 1, 0)): the state's relative read error with the best-spread keys."""
    return float(np.sqrt(max(T / d - 1, 0.0)))


def write_state(keys: Array, values: Array) -> Array:
    """Run the recurrence state_t = state_{t-1} + outer(k_t, v_t): T steps, one fixed state."""
    state = np.zeros((keys.shape[1], values.shape[1]))  # [d, d_v], whatever T is
    for k, v in zip(keys, values, strict=True):
        state = state + np.outer(k, v)
    return state


def read_state(state: Array, query: Array) -> Array:
    """Read the state by content: sum_t (query . k_t) v_t, crosstalk included."""
    return query @ state  # [d_v]


def relative_error(got: npt.ArrayLike, want: Array) -> float:
    """||got - want|| / ||want|| over all rows: 0 is a perfect read."""
    return float(np.linalg.norm(np.asarray(got) - want) / np.linalg.norm(want))


def recall_errors(
    read_direct: Callable[[Array, Array, Array], npt.ArrayLike],
    lengths: Iterable[int],
    d: int = 32,
    d_v: int = 32,
    trials: int = 5,
    seed: int = 0,
    spread: bool = False,
) -> tuple[list[float], list[float]]:
    """Mean relative error of reading every stored item back by its own key.

    For each T in ``lengths``: store T random items, then read each one (a) from the
    fixed ``[d, d_v]`` state and (b) with ``read_direct(query, keys, values)``, a lookup
    over all T stored items. ``spread=True`` stores them under ``spread_keys`` instead of
    random keys. Returns two lists, one error per T.
    """
    rng = np.random.default_rng(seed)
    state_err, direct_err = list[float](), list[float]()
    for T in lengths:
        s_errs, d_errs = list[float](), list[float]()
        for _ in range(trials):
            keys, values = make_items(T, d, d_v, rng)
            if spread:
                keys = spread_keys(T, d)
            state = write_state(keys, values)
            from_state = np.stack([read_state(state, k) for k in keys])  # [T, d_v]
            direct = np.stack([read_direct(k, keys, values) for k in keys])  # [T, d_v]
            s_errs.append(relative_error(from_state, values))
            d_errs.append(relative_error(direct, values))
        state_err.append(float(np.mean(s_errs)))
        direct_err.append(float(np.mean(d_errs)))
    return state_err, direct_err
