"""Hidden checks: randomized, run only when a notebook is graded, never shipped.

Each module in this package (one per notebook) declares its exercises with
:func:`exercise`: a trusted reference, a generator of random argument tuples,
and the plausible mistakes it can recognise, each with the message a learner
should read. A notebook's hidden test cell calls ``verify("<name>", <name>)``.

Inputs are random; set ``ATTN_GRADER_SEED`` to make a grading run repeatable.
"""

import importlib
import os
import pkgutil
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from attnlib.checks._core import CheckFailed, call


@dataclass
class Exercise:
    reference: Callable
    cases: Callable  # rng -> iterable of argument tuples
    mistakes: list = field(default_factory=list)  # [(wrong_fn, message)]
    atol: float = 1e-6
    rtol: float = 1e-5
    outcome: Callable | None = None  # (result, args) -> what is compared, when answers vary
    # Whole-solution shortcuts: {module prefix: names} the learner's function must not call.
    shortcuts: dict = field(default_factory=dict)


REGISTRY: dict[str, Exercise] = {}


def exercise(name, *, cases, mistakes=(), atol=1e-6, rtol=1e-5, outcome=None, shortcuts=None):
    """Decorator: register the function below as the reference for exercise ``name``.

    ``shortcuts`` maps a module prefix to names the learner's function must not call while
    it is graded: a Python function counts when its module is under the prefix and one part
    of its qualified name is listed (``CausalSelfAttention.forward`` counts as
    ``CausalSelfAttention``); a builtin counts by its name alone. Building blocks
    (``torch.softmax`` inside ``attention``) and other exercises' shortcuts stay allowed.
    """

    def register(reference):
        REGISTRY[name] = Exercise(
            reference, cases, list(mistakes), atol, rtol, outcome, dict(shortcuts or {})
        )
        return reference

    return register


def shortcuts() -> dict[str, dict[str, list[str]]]:
    """{exercise: {module prefix: sorted names}} for every exercise that bans shortcuts: the
    one list the run-time tripwire and the static scan both use."""
    _load_all()
    return {
        name: {prefix: sorted(names) for prefix, names in spec.shortcuts.items()}
        for name, spec in sorted(REGISTRY.items())
        if spec.shortcuts
    }


def _load_all():
    for info in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{info.name}")


def rng_for(name: str) -> np.random.Generator:
    seed = os.environ.get("ATTN_GRADER_SEED")
    if seed is None:
        return np.random.default_rng()
    return np.random.default_rng([int(seed), zlib.crc32(name.encode())])


def _as_parts(value):
    """Flatten a result into float64 arrays; anything else is not a valid answer."""
    if isinstance(value, (tuple, list)):
        return [part for item in value for part in _as_parts(item)]
    if hasattr(value, "detach"):  # a torch tensor slipped through
        raise TypeError("a torch tensor (convert it with .numpy())")
    if isinstance(value, np.ndarray) and value.dtype == object:
        raise TypeError("an array of Python objects")
    try:
        return [np.array(value, dtype=np.float64)]
    except (TypeError, ValueError):
        raise TypeError(type(value).__name__) from None


def same(got, want, atol=1e-6, rtol=1e-5) -> bool:
    """True when ``got`` matches ``want`` in structure, shape and value."""
    got_parts, want_parts = _as_parts(got), _as_parts(want)
    return len(got_parts) == len(want_parts) and all(
        g.shape == w.shape and np.allclose(g, w, atol=atol, rtol=rtol, equal_nan=True)
        for g, w in zip(got_parts, want_parts, strict=True)
    )


def _copy(args):
    return tuple(np.copy(a) if isinstance(a, np.ndarray) else a for a in args)


def _describe(args):
    return ", ".join(f"shape {a.shape}" if isinstance(a, np.ndarray) else repr(a) for a in args)


def _judged(spec, result, args):
    """What gets compared: the result itself, or its ``outcome`` when answers can differ."""
    return spec.outcome(result, _copy(args)) if spec.outcome else result


def spec(name: str) -> Exercise:
    """The registered hidden checks of exercise ``name`` (loads the hidden modules if needed)."""
    if name not in REGISTRY:
        _load_all()
    return REGISTRY[name]


def check_case(name: str, args, got) -> None:
    """Compare the learner's result ``got`` on ``args`` with the reference (trusted side).

    Raises CheckFailed naming a recognised mistake where it can. The autograder calls this
    outside the student's kernel, on results recorded inside it.
    """
    entry = spec(name)
    want = _judged(entry, entry.reference(*_copy(args)), args)
    try:
        got = _judged(entry, got, args)
        if same(got, want, entry.atol, entry.rtol):
            return
    except (TypeError, ValueError, IndexError) as err:
        raise CheckFailed(f"Hidden check: `{name}` returned {err}, not numbers.") from None
    for wrong, message in entry.mistakes:
        try:
            if same(got, _judged(entry, wrong(*_copy(args)), args), entry.atol, entry.rtol):
                raise CheckFailed(f"Hidden check: {message}")
        except (TypeError, ValueError, IndexError, FloatingPointError):
            continue
    raise CheckFailed(
        f"Hidden check: `{name}` gave a wrong result on a random input ({_describe(args)})."
    )


def verify(name: str, fn) -> None:
    """Run the hidden checks of exercise ``name`` on the learner's ``fn``."""
    for args in spec(name).cases(rng_for(name)):
        check_case(name, args, call(fn, *_copy(args), name=name))
    print(f"✓ `{name}`: hidden checks passed.")
