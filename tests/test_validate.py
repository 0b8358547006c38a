"""nbgrader's Validate (the toolbar button; its API, since `nbgrader validate` exits 0 on
failures): every solution passes, on the untouched release every visible check fails, and on
submissions that carry the mistake catalogue (``fixtures.batches``' sample: every exercise
wrong at least once; ``tests/exercises`` checks every entry in-process) each mistake the visible
check must catch fails its exercise's visible test cell with its words, while every other
exercise (hidden-only mistakes and alternatives included) passes. In a terminal its output
fits 80 columns, and a check that fails behind an earlier wrong exercise says so (as grading
does, ``test_autograde.py``)."""

import subprocess
import sys

import pytest
from fixtures import batch as graded_batch
from fixtures.adversarial import _write, with_answer
from fixtures.batches import batches, sample
from fixtures.validate import (
    course_validator,
    failed_cells,
    in_processes,
    validate,
    validate_stock,
)

from attnlib.checks import _cells
from grader.course import REPO_ROOT, assignments, exercises, release_path, source_path
from grader.hidden import Mistake, catalogue


@pytest.fixture(scope="module")
def stock():
    """{(kind, assignment): stock Validate's result} on every solution and, inverted, on every
    release (kind "solution" or "release"), three notebooks at a time."""
    keys = [(kind, a) for kind in ("solution", "release") for a in assignments()]
    paths = [str(source_path(a) if kind == "solution" else release_path(a)) for kind, a in keys]
    results = in_processes(validate_stock, paths, [kind == "release" for kind, _ in keys])
    return dict(zip(keys, results, strict=True))


@pytest.mark.parametrize("assignment", assignments())
def test_solution_passes_validate(assignment, stock):
    result = stock["solution", assignment]
    assert result == {}, f"Validate on the solution of {assignment}: {result}"


@pytest.mark.parametrize("assignment", assignments())
def test_release_fails_every_visible_check(assignment, stock):
    result = stock["release", assignment]
    passed = [cell["source"] for cell in result.get("passed", [])]
    # Hidden-test cells ship as a comment only (their checks run at grading), so they pass.
    assert all(
        line.startswith("#") for source in passed for line in source.splitlines() if line.strip()
    ), f"visible checks pass on the unwritten release of {assignment}: {passed}"
    assert passed, "expected the hidden-test placeholders to be the only passing cells"


def _failed_test_cells(nb, result) -> dict[str, str]:
    """{grade_id of a failed test cell: its error text, without colours}."""
    by_source = {
        c.source.strip(): c.metadata["nbgrader"]["grade_id"]
        for c in nb.cells
        if c.metadata.get("nbgrader", {}).get("grade")
    }
    return {by_source[source]: text for source, text in failed_cells(result).items()}


BATCHES = [b for a in assignments() for b in sample(a)]


@pytest.mark.parametrize("assignment", assignments())
def test_the_sample_gets_every_catalogued_exercise_wrong(assignment):
    """Validate and grading run a sample of the batches: in it, every exercise with a
    catalogued mistake is wrong at least once, and so is every mistake only the visible check
    catches; every batch is one of the notebook's."""
    chosen = sample(assignment)
    wrong = {ex: m for batch in chosen for ex, m in batch.wrong().items()}
    assert set(wrong) == {ex for ex, spec in catalogue(assignment).items() if spec.mistakes}
    visible_only = {m for spec in catalogue(assignment).values() for m in spec.mistakes
                    if m.caught_by == "visible"}  # fmt: skip
    assert visible_only <= {m for batch in chosen for m in batch.wrong().values()}
    assert set(chosen) <= set(batches(assignment))


@pytest.fixture(scope="module")
def said(validated):
    """{batch: (where it was written, its failed test cells)} of the sampled batches."""
    return {b: (path, _failed_test_cells(nb, r)) for b, (nb, path, r) in validated.items()}


@pytest.mark.parametrize("batch", BATCHES, ids=lambda b: f"{b.notebook}:{b.label}")
def test_validate_names_every_mistake_of_the_catalogue(batch, said):
    _, failed = said[batch]
    for ex in exercises(batch.notebook):
        test_id, entry = f"test_{ex.grade_id}", batch.entry(ex.grade_id)
        if not ex.autograded or batch.needs_wrong(ex.grade_id):
            continue
        if isinstance(entry, Mistake) and entry.caught_by != "hidden":
            assert test_id in failed, f"Validate passes {ex.grade_id} with {entry.label!r}"
            said = " ".join(failed[test_id].lower().split())  # as one line, unwrapped
            missing = [w for w in entry.says if " ".join(w.lower().split()) not in said]
            assert not missing, f"{test_id} lacks {missing}: {failed[test_id]!r}"
        else:
            what = f"with {entry.label!r}" if entry else "with the solution"
            assert test_id not in failed, f"{test_id} fails {what}: {failed.get(test_id)!r}"


def test_no_message_is_cut_on_the_command_line(said):
    """`nbgrader validate` cuts each line at Validator.width - 3 characters, indent included:
    the checks wrap every message the catalogue produces within the course's width, and the
    command uses it."""
    validator = course_validator()
    room = validator.width - 3 - len(validator.indent)
    lines = [line for _, failed in said.values() for e in failed.values() for line in e.split("\n")]
    longest = max(lines, key=len)
    assert len(longest) <= room, f"{len(longest)} > {room} characters: {longest}"
    assert _cells.WIDTH <= room, "the checks' wrapping is wider than Validate's lines"

    path, failed = next(v for v in said.values() if v[1])
    out = subprocess.run(
        [sys.executable, "-m", "nbgrader", "validate", path],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=300,
    ).stdout  # fmt: skip
    for message in failed.values():
        for line in message.split("\n"):
            assert f"{validator.indent}{line}\n" in out, f"cut or missing: {line!r}\n{out[-2000:]}"


def _validate_command(path) -> str:
    out = subprocess.run(
        [sys.executable, "-m", "nbgrader", "validate", str(path)],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=300,
    ).stdout  # fmt: skip
    return out


def test_validate_in_a_terminal_fits_80_columns_and_warnings_follow_the_check(tmp_path):
    """`nbgrader validate` on a softmax that overflows (exp of large scores): every line,
    separators included, fits 80 columns; the failed check's ✗ line comes first and the
    learner's RuntimeWarning is folded into it, with the line that gave it."""
    overflow = (
        "def softmax(x, axis=-1):\n    e = np.exp(x)\n"
        "    return e / e.sum(axis=axis, keepdims=True)\n"
    )
    path = _write(tmp_path, "learner", with_answer("softmax", overflow))
    out = _validate_command(path)
    assert "VALIDATION FAILED" in out and "=" * 80 in out, out
    assert max(len(line) for line in out.splitlines()) <= 80, out
    block = out.split("checks.check_softmax(softmax)", 1)[1].split("=" * 80)[0]
    error = block.split("The error was:", 1)[1].strip()
    assert error.startswith("✗ `softmax` returned"), f"something comes before the ✗:\n{error}"
    said = " ".join(error.split())
    assert "RuntimeWarning: overflow encountered in exp (at `e = np.exp(x)`)" in said, error
    assert said.index("subtract each row's maximum") < said.index("RuntimeWarning"), error


def test_a_check_behind_a_wrong_earlier_exercise_says_so_in_validate(tmp_path):
    """A right `qkv` behind a wrong `project` (a bias added: no crash; the graded batch grades
    the same notebook, tests/test_autograde.py): Validate fails `qkv` and says it uses
    `project`, which fails its own check, first; `project`'s own message does not."""
    nb = graded_batch.behind_wrong_project()
    path = _write(tmp_path, "wrong-project", nb, "02_projections.ipynb")
    failed = _failed_test_cells(nb, validate(str(path)))
    assert set(failed) == {"test_project", "test_qkv"}, failed
    said = " ".join(failed["test_qkv"].split())
    assert said.startswith(f"✗ {graded_batch.USES_WRONG} `qkv` gave"), failed
    assert "This check uses" not in failed["test_project"], failed
