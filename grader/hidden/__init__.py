"""Hidden checks: randomized, run only when a notebook is graded, never shipped.

Each module in this package (``nbNN_slug.py``, one per notebook) declares its exercises with
:func:`exercise`: a trusted reference, a generator of random argument tuples, the whole-
solution shortcuts the learner must not call, and the exercise's **catalogue**: every
plausible :class:`Mistake` and every unusual correct answer (:class:`Alternative`), each
written once as the source of an answer cell. The same entry is compiled here to name the
mistake when a learner's result matches it, pasted into answer cells by the Validate and
grading tests, and looped over by the unit tests (``tests/exercises/catalogue.py``). An
entry that is a slip in a right answer is written as :func:`edited` of that answer, never
as a copy made by hand (``tests/exercises/test_catalogue_edits.py``). A notebook's hidden
test cell calls ``verify("<name>", <name>)``.

Inputs are random; set ``ATTN_GRADER_SEED`` to make a grading run repeatable.
"""

import importlib
import os
import pkgutil
import textwrap
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from attnlib.checks._core import CheckFailed, call, precision_problem
from grader.seeds import derived

Array = npt.NDArray[np.float64]
Floats = npt.NDArray[np.floating]  # float64, or float32 where a case checks the precision
# One hidden case: the arguments of one call, of the types its exercise takes.
Case = tuple[Any, ...]
Cases = Callable[[np.random.Generator], Iterable[Case]]
# (the learner's result, the case) -> what is compared, when right answers vary.
Outcome = Callable[[Any, Case], object]
_Reference = TypeVar("_Reference", bound=Callable[..., object])


@dataclass(frozen=True)
class Mistake:
    """A plausible wrong answer to one exercise, written once for every check and test.

    ``source`` is a whole answer cell defining the exercise's function (it may use ``np`` and
    the notebook's earlier exercises by name). ``caught_by`` says which checks must fail on it
    with a message containing ``says`` (case-insensitive): "visible" (then Validate fails
    too), "hidden" (Validate passes, grading does not) or "both". With a ``message``, the
    hidden check recognises this answer by comparing results and tells the learner exactly
    that ("Hidden check: " + message); without one, the words come from elsewhere (a crash
    hint in ``attnlib.checks``, the precision rule, an ``outcome`` that refuses the result).
    """

    label: str
    source: str
    says: tuple[str, ...]
    caught_by: str = "both"
    message: str | None = None

    def __post_init__(self) -> None:
        if self.caught_by not in ("visible", "hidden", "both"):
            raise ValueError(f"{self.label}: caught_by must be visible, hidden or both")
        if self.message and not all(w.lower() in self.message.lower() for w in self.says):
            raise ValueError(f"{self.label}: the hidden message must contain {self.says}")


class Edit(str):
    """An answer cell's source made by :func:`edited`; ``answer`` is the right answer it
    changes (the tests check that answer passes, and that no entry copies one by hand)."""

    answer: str


def edited(answer: str, *edits: tuple[str, str]) -> Edit:
    """``answer`` (an answer cell's source) with each ``(old, new)`` edit made, for the
    catalogue entries that are one slip in the same answer; each ``old`` stands once."""
    source = answer
    for old, new in edits:
        if source.count(old) != 1:
            raise ValueError(f"{old!r} stands {source.count(old)} times in the answer, not once")
        source = source.replace(old, new)
    made = Edit(source)
    made.answer = answer
    return made


# Torch's versions of attention, each the whole exercise in one call: a shortcut to ban.
TORCH_ATTENTION = {"scaled_dot_product_attention", "MultiheadAttention"}
TORCH_ATTENTION |= {"multi_head_attention_forward"}


@dataclass(frozen=True)
class Alternative:
    """A correct answer written differently (loops, einsum, torch ...): every check passes."""

    label: str
    source: str


@dataclass
class HiddenCheck:
    """One exercise's hidden check: its reference answer, its cases and its catalogued
    mistakes (not ``grader.course.Exercise``, the exercise's place in the notebook)."""

    reference: Callable[..., object]
    cases: Cases
    mistakes: list[Mistake] = field(default_factory=list)
    atol: float = 1e-6
    rtol: float = 1e-5
    outcome: Outcome | None = None
    # Whole-solution shortcuts: {module prefix: names} the learner's function must not call.
    shortcuts: dict[str, set[str]] = field(default_factory=dict)
    alternatives: list[Alternative] = field(default_factory=list)
    module: str = ""  # the hidden module, named after the notebook ("nb01_soft_lookup")
    parts: tuple[str, ...] = ()  # names of the arrays a tuple result holds ("Q", "K", "V")

    @property
    def notebook(self) -> str:
        """The assignment id, e.g. "01_soft_lookup"."""
        return self.module.rsplit(".", 1)[-1].removeprefix("nb")


REGISTRY: dict[str, HiddenCheck] = {}


def exercise(
    name: str,
    *,
    cases: Cases,
    mistakes: Iterable[Mistake] = (),
    alternatives: Iterable[Alternative] = (),
    atol: float = 1e-6,
    rtol: float = 1e-5,
    outcome: Outcome | None = None,
    shortcuts: Mapping[str, set[str]] | None = None,
    parts: Iterable[str] = (),
) -> Callable[[_Reference], _Reference]:
    """Decorator: register the function below as the reference for exercise ``name``.

    ``shortcuts`` maps a module prefix to names the learner's function must not call while
    it is graded: a Python function counts when its module is under the prefix and one part
    of its qualified name is listed (``CausalSelfAttention.forward`` counts as
    ``CausalSelfAttention``); a builtin counts by its name alone. Building blocks
    (``torch.softmax`` inside ``attention``) and other exercises' shortcuts stay allowed.
    """

    def register(reference: _Reference) -> _Reference:
        REGISTRY[name] = HiddenCheck(
            reference,
            cases,
            list(mistakes),
            atol,
            rtol,
            outcome,
            dict(shortcuts or {}),
            list(alternatives),
            reference.__module__,
            tuple(parts),
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


def _load_all() -> None:
    for info in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{info.name}")


def catalogue(notebook: str) -> dict[str, HiddenCheck]:
    """{exercise name: its spec} for one notebook ("01_soft_lookup"), in notebook order."""
    _load_all()
    return {name: ex for name, ex in REGISTRY.items() if ex.notebook == notebook}


def compile_answer(source: str, name: str, namespace: Mapping[str, object]) -> Callable[..., Any]:
    """The function ``name`` that an answer cell's ``source`` defines, run in a copy of
    ``namespace`` (the notebook's names: ``np``, earlier exercises ...)."""
    scope: dict[str, Any] = dict(namespace)
    exec(compile(textwrap.dedent(source).strip() + "\n", f"<answer {name}>", "exec"), scope)
    answer: Callable[..., Any] = scope[name]  # whatever the cell defined, called as a function
    return answer


@cache
def _named_mistake(name: str, label: str) -> Callable[..., Any]:
    """A catalogue mistake compiled against the references of its notebook."""
    entry = REGISTRY[name]
    scope = {"np": np, **{n: ex.reference for n, ex in catalogue(entry.notebook).items()}}
    (mistake,) = (m for m in entry.mistakes if m.label == label)
    return compile_answer(mistake.source, name, scope)


def rng_for(name: str) -> np.random.Generator:
    seed = os.environ.get("ATTN_GRADER_SEED")
    if seed is None:
        return np.random.default_rng()
    return np.random.default_rng([int(seed), derived(name)])


def _as_parts(value: object) -> list[Array]:
    """Flatten a result into float64 arrays; anything else is not a valid answer."""
    if isinstance(value, (tuple, list)):
        return [part for item in value for part in _as_parts(item)]
    if hasattr(value, "detach"):  # a torch tensor slipped through
        raise TypeError("a torch tensor: convert it with `.numpy()`")
    if isinstance(value, np.ndarray) and value.dtype == object:
        raise TypeError("an array of Python objects: return numbers")
    try:
        return [np.array(value, dtype=np.float64)]
    except (TypeError, ValueError):
        raise TypeError(f"a {type(value).__name__}, not numbers") from None


def same(got: object, want: object, atol: float = 1e-6, rtol: float = 1e-5) -> bool:
    """True when ``got`` matches ``want`` in structure, shape and value."""
    got_parts, want_parts = _as_parts(got), _as_parts(want)
    return len(got_parts) == len(want_parts) and all(
        g.shape == w.shape and np.allclose(g, w, atol=atol, rtol=rtol, equal_nan=True)
        for g, w in zip(got_parts, want_parts, strict=True)
    )


def _copy(args: Case) -> Case:
    return tuple(np.copy(a) if isinstance(a, np.ndarray) else a for a in args)


def _describe(args: Case) -> str:
    return ", ".join(f"shape {a.shape}" if isinstance(a, np.ndarray) else repr(a) for a in args)


def _judged(spec: HiddenCheck, result: object, args: Case) -> object:
    """What gets compared: the result itself, or its ``outcome`` when answers can differ."""
    return spec.outcome(result, _copy(args)) if spec.outcome else result


def _shape_message(
    name: str, got: object, want: object, args: Case, parts: tuple[str, ...] = ()
) -> str | None:
    """Shape first: the result's structure or shape, when it differs from the reference's."""
    got_parts, want_parts = _as_parts(got), _as_parts(want)
    if len(got_parts) != len(want_parts):
        return (
            f"Hidden check: `{name}` returned {len(got_parts)} array(s), expected "
            f"{len(want_parts)}, on a random input ({_describe(args)})."
        )
    for i, (g, w) in enumerate(zip(got_parts, want_parts, strict=True)):
        if g.shape != w.shape:
            expected = "one number" if w.shape == () else f"shape {w.shape}"
            what = f"{parts[i]} of shape" if i < len(parts) else "shape"
            return (
                f"Hidden check: `{name}` returned {what} {g.shape} where {expected} was "
                f"expected, on a random input ({_describe(args)})."
            )
    return None


def spec(name: str) -> HiddenCheck:
    """The registered hidden checks of exercise ``name`` (loads the hidden modules if needed)."""
    if name not in REGISTRY:
        _load_all()
    return REGISTRY[name]


def _named(name: str, entry: HiddenCheck, got: object, args: Case) -> str | None:
    """The message of the catalogue mistake whose result on ``args`` is ``got``, if any."""
    for mistake in entry.mistakes:
        if not mistake.message:
            continue
        try:
            with np.errstate(all="ignore"):
                wrong = _judged(entry, _named_mistake(name, mistake.label)(*_copy(args)), args)
            if same(got, wrong, entry.atol, entry.rtol):
                return f"Hidden check: {mistake.message}"
        except Exception:  # noqa: BLE001 (a mistake may crash on this input: not this one)
            continue
    return None


def check_case(name: str, args: Case, got: object) -> None:
    """Compare the learner's result ``got`` on ``args`` with the reference (trusted side).

    Raises CheckFailed naming a recognised mistake where it can. The autograder calls this
    outside the student's kernel, on results recorded inside it.
    """
    entry = spec(name)
    if problem := precision_problem(got, args, name):
        raise CheckFailed(f"Hidden check: {problem}")
    want = _judged(entry, entry.reference(*_copy(args)), args)
    try:
        got = _judged(entry, got, args)
        if same(got, want, entry.atol, entry.rtol):
            return
        message = _named(name, entry, got, args) or _shape_message(
            name, got, want, args, entry.parts
        )
    except (TypeError, ValueError, IndexError) as err:
        raise CheckFailed(f"Hidden check: `{name}` returned {err}.") from None
    raise CheckFailed(
        message
        or f"Hidden check: `{name}` gave a wrong result on a random input ({_describe(args)})."
    )


def verify(name: str, fn: Callable[..., object]) -> None:
    """Run the hidden checks of exercise ``name`` on the learner's ``fn``."""
    for args in spec(name).cases(rng_for(name)):
        # attnlib's `call` has no annotations: what it returns is the learner's result.
        got = call(fn, *_copy(args), name=name)  # type: ignore[no-untyped-call]
        check_case(name, args, got)
    print(f"✓ `{name}`: hidden checks passed.")
