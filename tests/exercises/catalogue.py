"""The one test idiom for every exercise's catalogue (``grader.hidden``'s Mistake and
Alternative entries): each mistake fails the checks it names with the words it names, each
alternative passes every check. A notebook's test module takes both tests with

    test_mistake_is_named, test_alternative_passes = catalogue_tests("01_soft_lookup")
"""

import importlib

import nbformat
import numpy as np
import pytest

from attnlib.checks import CheckFailed
from grader.course import source_path
from grader.hidden import catalogue, compile_answer, verify


def visible_check(notebook: str, exercise: str):
    """``attnlib.checks.nbNN_slug.check_<exercise>``."""
    return getattr(importlib.import_module(f"attnlib.checks.nb{notebook}"), f"check_{exercise}")


def failures(notebook: str, exercise: str, fn, checks=("visible", "hidden")) -> dict[str, str]:
    """{"visible": message, "hidden": message} of the ``checks`` that fail on ``fn``."""
    found = {}
    runs = {"visible": visible_check(notebook, exercise), "hidden": lambda f: verify(exercise, f)}
    for which, run in ((w, runs[w]) for w in checks):
        try:
            run(fn)
        except CheckFailed as err:
            found[which] = str(err)
    return found


def _params(notebook: str, kind: str) -> list:
    return [
        pytest.param(name, entry, id=f"{name}-{entry.label}")
        for name, ex in catalogue(notebook).items()
        for entry in getattr(ex, kind)
    ]


def catalogue_tests(notebook: str):
    """The two catalogue tests of ``notebook``, parametrized over its entries."""

    @pytest.mark.parametrize(("exercise", "mistake"), _params(notebook, "mistakes"))
    def test_mistake_is_named(exercise, mistake, solution):
        fn = compile_answer(mistake.source, exercise, solution(notebook))
        found = failures(notebook, exercise, fn)
        wanted = ("visible", "hidden") if mistake.caught_by == "both" else (mistake.caught_by,)
        for which in wanted:
            assert which in found, f"the {which} check passes {mistake.label!r}: {found}"
            missing = [w for w in mistake.says if w.lower() not in found[which].lower()]
            assert not missing, f"{which} message lacks {missing}: {found[which]!r}"

    @pytest.mark.parametrize(("exercise", "alternative"), _params(notebook, "alternatives"))
    def test_alternative_passes(exercise, alternative, solution):
        fn = compile_answer(alternative.source, exercise, solution(notebook))
        assert failures(notebook, exercise, fn) == {}

    return test_mistake_is_named, test_alternative_passes


def notebook_cells(notebook: str, kind: str) -> dict[str, str]:
    """``{cell id: source}`` of the ``kind`` cells ("markdown", "code") of a solution."""
    nb = nbformat.read(source_path(notebook), as_version=4)
    return {c.get("id"): c.source for c in nb.cells if c.cell_type == kind}


def notebook_prose(notebook: str) -> str:
    """A solution's markdown as one line, white space folded: claims span line breaks."""
    return " ".join("\n".join(notebook_cells(notebook, "markdown").values()).split())


def gap_test(notebook: str, comparisons):
    """The test that no catalogue mistake passes the visible check while the notebook's next
    cell would show a gap: ``comparisons[exercise](fn)`` is that cell's ``(got, want)``."""

    @pytest.mark.parametrize(
        ("exercise", "mistake"),
        [(n, m) for n, ex in catalogue(notebook).items() for m in ex.mistakes],
        ids=lambda v: getattr(v, "label", v),
    )
    def test_no_mistake_passes_the_check_and_shows_a_gap_in_the_next_cell(
        exercise, mistake, solution
    ):
        """Issue 24: scaling by √d_v passed ✓ while the comparison cell printed a 5.1e-01 gap."""
        fn = compile_answer(mistake.source, exercise, solution(notebook))
        try:
            with np.errstate(all="ignore"):
                got, want = comparisons[exercise](fn)
            gap = np.abs(np.asarray(got) - want).max()
        except Exception:  # noqa: BLE001 (a crash is its own message, the cell shows no gap)
            return
        if not gap < 1e-9:  # NaN too
            with pytest.raises(CheckFailed):
                visible_check(notebook, exercise)(fn)

    return test_no_mistake_passes_the_check_and_shows_a_gap_in_the_next_cell
