"""Every exercise of every notebook, through its real test cells.

The solution passes its visible and hidden test cells; the release stub fails each of
them with the one-line "isn't written yet"; the cells have the shape the grader relies on;
and each exercise has a mistake catalogue, which tests/exercises/ loops over.
"""

import re

import nbformat
import pytest

from attnlib.checks import CheckFailed
from grader.course import assignments, exercises, source_path
from grader.hidden import catalogue

EXERCISES = [(a, ex) for a in assignments() for ex in exercises(a) if ex.autograded]


def _test_cells(assignment, exercise):
    """The source (with hidden tests) of each test cell of ``exercise``, by grade_id."""
    nb = nbformat.read(source_path(assignment), as_version=4)
    by_id = {c.metadata.get("nbgrader", {}).get("grade_id"): c.source for c in nb.cells}
    return {test_id: by_id[test_id] for test_id in exercise.test_ids}


def _run(source, namespace):
    exec(compile(source, "<test cell>", "exec"), dict(namespace))


@pytest.mark.parametrize(
    ("assignment", "exercise"), EXERCISES, ids=lambda x: getattr(x, "grade_id", x)
)
def test_solution_passes_every_test_cell(assignment, exercise, solution):
    for source in _test_cells(assignment, exercise).values():
        _run(source, solution(assignment))


@pytest.mark.parametrize(
    ("assignment", "exercise"), EXERCISES, ids=lambda x: getattr(x, "grade_id", x)
)
def test_release_stub_fails_every_test_cell_saying_so(assignment, exercise, stub):
    for source in _test_cells(assignment, exercise).values():
        with pytest.raises(CheckFailed, match="isn't written yet"):
            _run(source, stub(assignment))


@pytest.mark.parametrize(
    ("assignment", "exercise"), EXERCISES, ids=lambda x: getattr(x, "grade_id", x)
)
def test_exercise_has_a_visible_and_a_hidden_test_cell(assignment, exercise):
    name = exercise.grade_id
    cells = _test_cells(assignment, exercise)
    assert set(cells) == {f"test_{name}", f"test_{name}_hidden"}, cells.keys()
    assert f"check_{name}({name})" in cells[f"test_{name}"]
    hidden = re.search(
        r"### BEGIN HIDDEN TESTS\n(.*)### END HIDDEN TESTS", cells[f"test_{name}_hidden"], re.S
    )
    assert hidden, "the hidden test cell must keep its checks between the HIDDEN TESTS markers"
    assert f'verify("{name}", {name})' in hidden.group(1)
    assert exercise.max_points > 0


@pytest.mark.parametrize(
    ("assignment", "exercise"), EXERCISES, ids=lambda x: getattr(x, "grade_id", x)
)
def test_exercise_has_a_catalogue(assignment, exercise):
    spec = catalogue(assignment).get(exercise.grade_id)
    assert spec is not None, f"grader/hidden has no checks for {exercise.grade_id}"
    labels = [entry.label for entry in spec.mistakes + spec.alternatives]
    assert len(set(labels)) == len(labels), f"labels must be unique: {labels}"
    assert len(spec.mistakes) >= 3 and spec.alternatives, "three mistakes and an alternative"
