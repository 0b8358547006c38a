"""The hub copies an attendee's submission without following any link (``hub.nofollow``),
even one swapped in while the copy runs."""

import os

import pytest

from hub.nofollow import NotAPlainFile, copy_tree


def _no_ignore(folder, names):
    return []


@pytest.fixture
def secret(tmp_path):
    path = tmp_path / "solutions.ipynb"
    path.write_text("the instructor's answers")
    return path


@pytest.fixture
def submission(tmp_path):
    folder = tmp_path / "inbound" / "ada+01+2026-12-03 10:00:00.000000 UTC+abc"
    (folder / "sub").mkdir(parents=True)
    (folder / "01.ipynb").write_text("ada's work")
    (folder / "sub" / "notes.txt").write_text("notes")
    return folder


def _copied(tmp_path):
    return {p.relative_to(tmp_path / "copy").as_posix(): p.read_text()
            for p in (tmp_path / "copy").rglob("*") if p.is_file()}  # fmt: skip


def test_a_plain_folder_is_copied_whole_with_nbgraders_ignore(tmp_path, submission):
    copy_tree(
        str(submission),
        str(tmp_path / "copy"),
        lambda d, names: [n for n in names if n.endswith(".txt")],
    )
    assert _copied(tmp_path) == {"01.ipynb": "ada's work"}


@pytest.mark.parametrize("where", ["01.ipynb", "sub"])
def test_a_link_anywhere_stops_the_copy(tmp_path, submission, secret, where):
    target = submission / where
    if target.is_dir():
        (target / "notes.txt").unlink()
        target.rmdir()
    else:
        target.unlink()
    target.symlink_to(secret if where == "01.ipynb" else secret.parent)
    with pytest.raises(NotAPlainFile, match="is a link"):
        copy_tree(str(submission), str(tmp_path / "copy"), _no_ignore)
    assert "the instructor's answers" not in _copied(tmp_path).values()


def test_the_submission_folder_itself_as_a_link_is_refused(tmp_path, submission):
    link = tmp_path / "inbound" / "bo+01+2026-12-03 10:00:00.000000 UTC+def"
    link.symlink_to(submission)
    with pytest.raises(NotAPlainFile, match="not a plain folder"):
        copy_tree(str(link), str(tmp_path / "copy"), _no_ignore)


def test_a_fifo_is_refused_without_hanging(tmp_path, submission):
    os.mkfifo(submission / "pipe")
    with pytest.raises(NotAPlainFile, match="not a plain file"):
        copy_tree(str(submission), str(tmp_path / "copy"), _no_ignore)


def test_a_link_swapped_in_while_the_copy_runs_is_not_followed(tmp_path, submission, secret):
    """The attendee owns the folder and can change it between any check and the copy: here
    the file becomes a link to the solutions after the folder was listed, just before it is
    opened (the ignore callback runs between the two)."""

    def swap(folder, names):
        notebook = submission / "01.ipynb"
        if notebook.is_file() and not notebook.is_symlink():
            notebook.unlink()
            notebook.symlink_to(secret)
        return []

    with pytest.raises(NotAPlainFile, match="01.ipynb is a link"):
        copy_tree(str(submission), str(tmp_path / "copy"), swap)
    assert "the instructor's answers" not in _copied(tmp_path).values()
