"""The learner's own copy (`make lab` / `update` / `reset`, ``attnlib.lab.workspace``).

Each test makes a release folder from the course's release notebooks and a work folder in
``tmp_path``; a "new release" is that folder edited the way a course update would be.
"""

import json
import os
import shutil
import subprocess
import sys

import nbformat
import pytest

from attnlib.lab import workspace
from attnlib.paths import FORMER_NAMES, moved_to
from grader.course import RELEASE, REPO_ROOT

NB = "01_soft_lookup"
NB02 = "02_projections"  # with a written question
MINE = "def softmax(x, axis=-1):\n    return 'my answer'\n"
WRITTEN = "Keys decide *where* to look; values are *what* comes back."


def _cells(path):
    return nbformat.read(path, as_version=4).cells


def _answer(path, gid):
    return next(c for c in _cells(path) if c.metadata.get("nbgrader", {}).get("grade_id") == gid)


def _edit(path, change):
    nb = nbformat.read(path, as_version=4)
    change(nb)
    nbformat.write(nb, path)


def _set_answer(gid, source):
    def change(nb):
        _cell_of(nb, gid).source = source

    return change


def _cell_of(nb, gid):
    return next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == gid)


@pytest.fixture(autouse=True)
def not_under_make(monkeypatch):
    """Messages spell commands the way the learner runs them; here, not through make."""
    monkeypatch.delenv("MAKELEVEL", raising=False)


@pytest.fixture
def course(tmp_path):
    release, work = tmp_path / "notebooks", tmp_path / "work"
    shutil.copytree(RELEASE, release)
    return release, work


def test_first_launch_copies_the_release_and_never_overwrites(course):
    release, work = course
    assert workspace.ensure(release, work) == [f"made your work folder {work} from the release"]
    for name, path in workspace.released(release).items():
        assert (work / name / f"{name}.ipynb").read_bytes() == path.read_bytes()
    copy = work / NB / f"{NB}.ipynb"
    _edit(copy, _set_answer("softmax", MINE))
    assert workspace.ensure(release, work) == []
    assert _answer(copy, "softmax").source == MINE
    assert workspace.update(release, work) == ["your work folder already has the latest release"]
    assert _answer(copy, "softmax").source == MINE


def test_update_keeps_answers_and_own_cells_and_backs_up(course):
    """In notebook 02, which has a written question."""
    release, work = course
    workspace.ensure(release, work)
    copy = work / NB02 / f"{NB02}.ipynb"
    _edit(copy, _set_answer("project", MINE))
    _edit(copy, _set_answer("keys_vs_values", WRITTEN))
    scratch = nbformat.v4.new_code_cell("print('my own experiment')")
    anchor = _answer(release / NB02 / f"{NB02}.ipynb", "project").id
    _edit(copy, lambda nb: nb.cells.insert(
        next(i for i, c in enumerate(nb.cells) if c.id == anchor) + 1, scratch))  # fmt: skip
    old = copy.read_bytes()

    # A new release: a reworded prompt, a new exercise stub, the written question dropped.
    new_cell = nbformat.v4.new_markdown_cell("A new paragraph in the release.")

    def new_release(nb):  # noqa: E306
        nb.cells[0].source += "\n\nUpdated."
        nb.cells.insert(1, new_cell)
        nb.cells = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id")
                    != "keys_vs_values"]  # fmt: skip

    _edit(release / NB02 / f"{NB02}.ipynb", new_release)
    assert any("newer version" in line for line in workspace.ensure(release, work))
    lines = workspace.update(release, work)
    assert len(lines) == 1 and lines[0].startswith(f"{NB02}: updated; your answers kept: project")
    assert "no longer in the course (only in the backup): keys_vs_values" in lines[0]

    cells = _cells(copy)
    assert cells[0].source.endswith("Updated.") and cells[1].source == new_cell.source
    assert _answer(copy, "project").source == MINE
    sources = [c.source for c in cells]
    assert sources.index(scratch.source) == sources.index(MINE) + 1, "own cell moved"
    backup = work / lines[0].split("old file in ")[1].removeprefix(f"{work.name}/")
    assert backup.read_bytes() == old
    assert workspace.update(release, work) == ["your work folder already has the latest release"]


def test_update_carries_a_renamed_notebook_over_with_its_answers(course):
    """A work folder made before a notebook was renamed: `update` moves the learner's
    answers into the notebook's new name and the old file into the backups."""
    release, work = course
    old_name, name = next(iter(FORMER_NAMES.items()))
    workspace.ensure(release, work)
    copy = work / name / f"{name}.ipynb"
    gid = workspace.exercises(copy)[0]
    _edit(copy, _set_answer(gid, MINE))
    old = work / old_name / f"{old_name}.ipynb"  # as the release before the rename made it
    old.parent.mkdir()
    copy.rename(old)
    copy.parent.rmdir()
    lines = workspace.update(release, work)
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"{name}: added to {work}, the course's new name for {old_name}")
    assert f"your answers kept: {gid}" in lines[0]
    assert _answer(copy, gid).source == MINE
    assert not old.parent.exists(), "the old notebook is still in the work folder"
    backup = work / lines[0].split("old file in ")[1].removeprefix(f"{work.name}/")
    assert _answer(backup, gid).source == MINE
    assert workspace.update(release, work) == ["your work folder already has the latest release"]


def test_update_moves_answers_of_exercises_moved_to_another_notebook(course):
    """A copy of 01 made before design_keys_values and keys_vs_values moved to 02: `update`
    puts the answers the learner wrote into their copy of 02, and says so."""
    release, work = course
    workspace.ensure(release, work)
    copy, copy02 = (work / n / f"{n}.ipynb" for n in (NB, NB02))
    moved = [c for c in _cells(copy02)
             if moved_to(NB, c.metadata.get("nbgrader", {}).get("grade_id", ""))]  # fmt: skip
    _edit(copy, lambda nb: nb.cells.extend(moved))
    _edit(copy, _set_answer("keys_vs_values", WRITTEN))
    manifest = json.loads((work / workspace.MANIFEST).read_text())
    (work / workspace.MANIFEST).write_text(json.dumps(manifest | {NB: "before the move"}))
    lines = workspace.update(release, work)
    assert lines[0].startswith(f"{NB}: updated; your answers kept: none written yet; moved to "
                               "another notebook: design_keys_values (02_projections), "
                               "keys_vs_values (02_projections); old file in ")  # fmt: skip
    assert lines[1:] == [
        f"{NB02}: `design_keys_values` moved here; you had not answered it yet",
        f"{NB02}: `keys_vs_values` moved here, with your answer",
    ]
    assert _answer(copy02, "keys_vs_values").source == WRITTEN
    assert workspace.exercises(copy) == ["softmax", "hard_lookup", "soft_lookup"]


def test_update_of_an_unreadable_copy_is_one_line_and_loses_nothing(course):
    release, work = course
    workspace.ensure(release, work)
    copy = work / NB / f"{NB}.ipynb"
    copy.write_text("{ not json")
    _edit(
        release / NB / f"{NB}.ipynb", lambda nb: nb.cells.append(nbformat.v4.new_markdown_cell("x"))
    )
    with pytest.raises(workspace.WorkspaceError) as err:
        workspace.update(release, work)
    assert "is not a readable notebook" in str(err.value) and "reset 01_soft_lookup" in str(
        err.value
    )
    assert copy.read_text() == "{ not json"


def test_reset_one_exercise_touches_only_that_answer(course):
    release, work = course
    workspace.ensure(release, work)
    copy = work / NB / f"{NB}.ipynb"
    _edit(copy, _set_answer("softmax", MINE))
    _edit(copy, _set_answer("hard_lookup", "def hard_lookup(q, k, v):\n    return v[0]\n"))
    before = copy.read_bytes()
    line = workspace.reset("01", "softmax", release, work)  # a unique prefix is enough
    assert line.startswith(f"{NB}: `softmax` reset to the release; old file in work/backups/")
    stub = _answer(release / NB / f"{NB}.ipynb", "softmax").source
    assert _answer(copy, "softmax").source == stub
    assert _answer(copy, "hard_lookup").source.endswith("return v[0]\n")
    assert (work / line.split("old file in ")[1].removeprefix("work/")).read_bytes() == before


def test_reset_restores_a_deleted_answer_cell_in_place(course):
    release, work = course
    workspace.ensure(release, work)
    copy = work / NB / f"{NB}.ipynb"
    ids = [c.id for c in _cells(copy)]
    _edit(copy, lambda nb: nb.cells.remove(_cell_of(nb, "soft_lookup")))
    workspace.reset(NB, "soft_lookup", release, work)
    assert [c.id for c in _cells(copy)] == ids


def test_reset_a_whole_notebook(course):
    release, work = course
    workspace.ensure(release, work)
    copy = work / NB / f"{NB}.ipynb"
    copy.write_text("{ broken")
    line = workspace.reset(NB, None, release, work)
    assert line.startswith(f"{NB}: reset to the release; old file in work/backups/")
    assert copy.read_bytes() == (release / NB / f"{NB}.ipynb").read_bytes()
    assert (work / line.split("old file in ")[1].removeprefix("work/")).read_text() == "{ broken"


@pytest.mark.parametrize(
    "notebook, exercise, message",
    [
        ("99_nothing", None, "unknown notebook '99_nothing'; known: 01_soft_lookup, 02_"),
        (NB, "softmx", f"unknown exercise 'softmx' in {NB}; known: softmax, hard_lookup,"),
        ("0", None, "unknown notebook '0'; known: 01_soft_lookup"),  # ambiguous prefix
        ("", None, "say which notebook: one of 01_soft_lookup, 02_"),
    ],
)
def test_unknown_names_list_the_known_ones(course, notebook, exercise, message):
    release, work = course
    with pytest.raises(workspace.WorkspaceError) as err:
        workspace.reset(notebook, exercise, release, work)
    assert str(err.value).startswith(message), err.value
    assert not work.exists(), "nothing may be written for a wrong name"


def test_the_cli_update_and_reset(tmp_path):
    """`python -m attnlib.lab update|reset` on a work folder (`make update` / `make reset`)."""
    work = tmp_path / "work"

    def lab(*args):
        cmd = [sys.executable, "-m", "attnlib.lab", "--work", str(work), *args]
        return subprocess.run(cmd, cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)

    first = lab("update")
    assert first.returncode == 0 and f"made your work folder {work}" in first.stdout, first
    assert json.loads((work / ".release.json").read_text()).keys() == workspace.released().keys()
    again = lab("reset", NB, "softmax")
    assert again.returncode == 0 and "`softmax` reset to the release" in again.stdout, again
    wrong = lab("reset", NB, "nope")
    assert wrong.returncode == 2 and wrong.stderr.startswith("error: unknown exercise 'nope'")
    assert len(wrong.stderr.strip().splitlines()) == 1


def test_make_reset_names_the_make_spelling(monkeypatch):
    """`make reset` with a wrong name fails in one line, before touching any work folder."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAKE")}
    proc = subprocess.run(["make", "-s", "reset", "NOTEBOOK=99_nothing"], cwd=REPO_ROOT, env=env,
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert proc.returncode != 0
    assert "error: unknown notebook '99_nothing'; known: 01_soft_lookup" in proc.stderr
    assert workspace.command("update") == "python -m attnlib.lab update"
    monkeypatch.setenv("MAKELEVEL", "1")
    assert workspace.command("reset", NB, "softmax") == f"make reset NOTEBOOK={NB} EXERCISE=softmax"
