"""An LMS's bulk download laid out as grading expects (grader.intake.collect, `grader collect`):
Canvas's names and Moodle's folders, the roster's ids and names, each student's latest file,
and every file it could not match listed. Grading what it lays out is
tests/test_instructor_grades.py."""

import zipfile
from datetime import UTC, datetime
from pathlib import Path

import pytest

from grader import cli
from grader.intake import collect, roster

NB = "01_soft_lookup"
ROSTER = 'student,name,id\nada,Ada Lovelace,101\nbo,"Li, Bo",102\ncy,Cy Young,103\n'


def _zip(path: Path, members: dict) -> Path:
    """``members``: {name: (text, (y, m, d, H, M, S))}."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, (text, when) in members.items():
            zf.writestr(zipfile.ZipInfo(name, when), text)
    return path


def _collect(tmp_path, members: dict, **settings) -> tuple[Path, str]:
    (tmp_path / "roster.csv").write_text(ROSTER)
    archive = _zip(tmp_path / "download.zip", members)
    argv = ["collect", str(archive), "--roster", str(tmp_path / "roster.csv"),
            "--into", str(tmp_path / "subs")]  # fmt: skip
    argv += [f"--GraderSettings.{k}={v}" for k, v in settings.items()]
    return tmp_path / "subs", argv


def test_a_canvas_download_is_laid_out_per_roster_student(tmp_path, capsys):
    early, late = (2026, 12, 1, 10, 0, 0), (2026, 12, 2, 9, 30, 0)
    subs, argv = _collect(tmp_path, {
        f"lovelaceada_101_5001_{NB}.ipynb": ("first", early),
        f"lovelaceada_LATE_101_5002_{NB}-1.ipynb": ("again", late),  # handed in again
        f"libo_777_5003_{NB}.ipynb": ("bo's", early),  # no such id: found by name
        f"strangerzed_999_5004_{NB}.ipynb": ("who?", early),  # in no roster
        "readme.txt": ("not a submission", early),
    })  # fmt: skip
    assert cli.main(argv) == 0
    said = capsys.readouterr().out
    assert (subs / "ada" / f"{NB}.ipynb").read_text() == "again"
    assert (subs / "bo" / f"{NB}.ipynb").read_text() == "bo's"
    assert sorted(p.name for p in subs.iterdir()) == ["ada", "bo"]  # nothing hidden left
    mtime = (subs / "ada" / f"{NB}.ipynb").stat().st_mtime
    assert mtime == datetime(*late, tzinfo=UTC).timestamp()  # what deadlines reads
    assert said.startswith("collected 2 files of 2 of the roster's 3 students into ")
    assert f"older, left out: lovelaceada_101_5001_{NB}.ipynb" in said
    assert (
        f"not collected: strangerzed_999_5004_{NB}.ipynb: no roster student has its id or name"
        in said
    )
    assert "not collected: readme.txt: its name does not follow the pattern" in said


def test_a_moodle_download_and_a_pattern_of_ones_own(tmp_path, capsys):
    when = (2026, 12, 1, 10, 0, 0)
    subs, argv = _collect(tmp_path, {
        f"Ada Lovelace_55_assignsubmission_file_/{NB}.ipynb": ("ada's", when),
        f"Cy Young_56_assignsubmission_file_/{NB}.ipynb": ("cy's", when),
    }, lms="moodle")  # fmt: skip
    assert cli.main(argv) == 0
    assert (subs / "ada" / f"{NB}.ipynb").read_text() == "ada's"
    assert (subs / "cy" / f"{NB}.ipynb").read_text() == "cy's"

    subs, argv = _collect(tmp_path, {f"103-{NB}.ipynb": ("by id", when)},
                          lms_pattern=r"(?P<id>\d+)-(?P<file>.+)")  # fmt: skip
    assert cli.main(argv) == 0
    assert (subs / "cy" / f"{NB}.ipynb").read_text() == "by id"


def test_unsafe_members_are_listed_not_written(tmp_path, capsys):
    archive = tmp_path / "download.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        link = zipfile.ZipInfo(f"lovelaceada_101_1_{NB}.ipynb")
        link.external_attr = 0o120777 << 16  # a symbolic link
        zf.writestr(link, "/etc/passwd")
        zf.writestr("../libo_102_2_x.ipynb", "outside")
    done = collect.collect(archive, roster.read(_roster(tmp_path)), tmp_path / "subs", _settings())
    assert done.files == {}
    assert [why for _, why in done.unmatched] == ["a link", "an unsafe path"]
    assert not (tmp_path / "subs" / "ada").exists()


def test_a_name_two_roster_students_share_is_not_guessed():
    index = collect.RosterIndex({"ann1": {"Student": "Ann Lee"}, "ann2": {"Student": "Lee, Ann"}})
    assert index.student({"name": "leeann"}) == (
        None,
        "matches 2 roster students: ann1, ann2",
    )


def _roster(tmp_path) -> Path:
    (tmp_path / "roster.csv").write_text(ROSTER)
    return tmp_path / "roster.csv"


def _settings():
    from grader import settings

    return settings.load()


@pytest.mark.parametrize("bad", ["no_file_group", "(unclosed"])
def test_a_bad_pattern_is_refused_before_anything_is_read(tmp_path, capsys, bad):
    pattern = {"no_file_group": r"(?P<id>\d+)_.*", "(unclosed": "(?P<file>"}[bad]
    _subs, argv = _collect(tmp_path, {}, lms_pattern=pattern)
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --GraderSettings.lms_pattern: ") and err.count("\n") == 1
