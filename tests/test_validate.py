"""nbgrader's Validate (the toolbar button; its API, since `nbgrader validate` exits 0 on
failures): every solution passes, on the untouched release every visible check fails, and on
submissions that carry the mistake catalogue (``fixtures.batches``) each mistake the visible
check must catch fails its exercise's visible test cell with its words, while every other
exercise (hidden-only mistakes and alternatives included) passes. In a terminal its output
fits 80 columns, and a check that fails behind an earlier wrong exercise says so, in Validate
and in grading alike."""

import subprocess
import sys
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context

import nbformat
import pytest
from fixtures import batch as graded_batch
from fixtures.adversarial import _write, honest, with_answer
from fixtures.batches import batches
from fixtures.validate import course_validator, failed_cells, validate
from nbgrader.validator import Validator

from attnlib.checks import _cells
from grader.course import REPO_ROOT, assignments, exercises, release_path, source_path
from grader.hidden import Mistake


@pytest.mark.parametrize("assignment", assignments())
def test_solution_passes_validate(assignment):
    result = Validator().validate(str(source_path(assignment)))
    assert result == {}, f"Validate on the solution of {assignment}: {result}"


@pytest.mark.parametrize("assignment", assignments())
def test_release_fails_every_visible_check(assignment):
    result = Validator(invert=True).validate(str(release_path(assignment)))
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


BATCHES = [b for a in assignments() for b in batches(a)]


@pytest.fixture(scope="module")
def validated(tmp_path_factory):
    """{batch: its failed test cells}: every batch validated once, three kernels at a time
    (each in its own process: Validator changes the working directory while it runs)."""
    folder = tmp_path_factory.mktemp("batches")
    notebooks, paths = [], []
    for i, batch in enumerate(BATCHES):
        nb = batch.submission(demos=False)  # Validate judges test cells only: demos cost time
        path = folder / f"{i:03d}" / f"{batch.notebook}.ipynb"
        path.parent.mkdir()
        nbformat.write(nb, path)
        notebooks.append(nb)
        paths.append(str(path))
    with ProcessPoolExecutor(max_workers=3, mp_context=get_context("spawn")) as pool:
        results = list(pool.map(validate, paths))
    return {
        b: (path, _failed_test_cells(nb, r))
        for b, nb, path, r in zip(BATCHES, notebooks, paths, results, strict=True)
    }


@pytest.mark.parametrize("batch", BATCHES, ids=lambda b: f"{b.notebook}:{b.label}")
def test_validate_names_every_mistake_of_the_catalogue(batch, validated):
    _, failed = validated[batch]
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


def test_no_message_is_cut_on_the_command_line(validated):
    """`nbgrader validate` cuts each line at Validator.width - 3 characters, indent included:
    the checks wrap every message the catalogue produces within the course's width, and the
    command uses it."""
    validator = course_validator()
    room = validator.width - 3 - len(validator.indent)
    lines = [
        line for _, failed in validated.values() for e in failed.values() for line in e.split("\n")
    ]
    longest = max(lines, key=len)
    assert len(longest) <= room, f"{len(longest)} > {room} characters: {longest}"
    assert _cells.WIDTH <= room, "the checks' wrapping is wider than Validate's lines"

    path, failed = next(v for v in validated.values() if v[1])
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


def test_a_check_behind_a_wrong_earlier_exercise_says_so_in_validate_and_grading(tmp_path):
    """A right `qkv` behind a wrong `project` (a bias added: no crash): Validate and grading
    fail `qkv` and say it uses `project`, which fails its own check, first; `project`'s own
    message and an honest control's grades say nothing of the kind."""
    nb = with_answer("project", "def project(X, W):\n    return X @ W.T + 1\n",
                     honest("02_projections"))  # fmt: skip
    subs, name = tmp_path / "subs", "02_projections.ipynb"
    path = _write(subs, "wrong-project", nb, name)
    _write(subs, "honest", honest("02_projections"), name)
    says = "This check uses your `project`, which fails its own check: fix `project` first."

    failed = _failed_test_cells(nb, validate(str(path)))
    assert set(failed) == {"test_project", "test_qkv"}, failed
    assert " ".join(failed["test_qkv"].split()).startswith(f"✗ {says} `qkv` gave"), failed
    assert "This check uses" not in failed["test_project"], failed

    graded_batch.grade(subs, tmp_path / "out")
    rows = {(r["student"], r["exercise"]): r for r in graded_batch.rows(tmp_path / "out")}
    assert rows["wrong-project", "qkv"]["message"].startswith(f"{says} `qkv` gave"), rows
    assert float(rows["wrong-project", "qkv"]["points"]) == 0
    assert "This check uses" not in rows["wrong-project", "project"]["message"], rows
    assert all(float(rows["honest", e]["points"]) == 2 for e in ("project", "qkv")), rows
