"""Which file of a student's folder is graded as which notebook, and the notes that say so."""

import shutil

from grader.course import FORMER_NAMES, release_path
from grader.intake import collect_student
from grader.rebuild import release_notes

OLD, CURRENT = next(iter(FORMER_NAMES.items()))


def _collect(folder, tmp_path):
    return collect_student("s", folder, [CURRENT], {CURRENT: set()}, tmp_path / "unpack")


def test_a_notebook_under_its_former_name_is_graded_with_what_to_do(tmp_path):
    folder = tmp_path / "s"
    folder.mkdir()
    shutil.copy(release_path(CURRENT), folder / f"{OLD}.ipynb")
    sub = _collect(folder, tmp_path)
    assert sub.notebooks[CURRENT].name == f"{OLD}.ipynb"
    assert f"hand it in as `{CURRENT}.ipynb` next time" in sub.notes[CURRENT][0]


def test_the_current_name_wins_over_the_former_one(tmp_path):
    """Both handed in (an old copy kept after the update): the current file is graded,
    although the former name sorts first."""
    folder = tmp_path / "s"
    folder.mkdir()
    shutil.copy(release_path(CURRENT), folder / f"{OLD}.ipynb")
    shutil.copy(release_path(CURRENT), folder / f"{CURRENT}.ipynb")
    sub = _collect(folder, tmp_path)
    assert sub.notebooks[CURRENT].name == f"{CURRENT}.ipynb"
    assert sub.notes[CURRENT] == [f"2 candidate files; graded `{CURRENT}.ipynb`"]


def test_an_older_release_says_what_to_do():
    unversioned = release_notes({"metadata": {}}, CURRENT, "v2", f"{CURRENT}.ipynb")
    older = release_notes(
        {"metadata": {"attn_release": {"notebook": CURRENT, "version": "v1"}}},
        CURRENT, "v2", f"{CURRENT}.ipynb",
    )  # fmt: skip
    for notes in (unversioned, older):
        assert len(notes) == 1 and "copy your answers into the current release" in notes[0]
    assert "made from release v1" in older[0]
