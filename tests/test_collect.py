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


def test_a_file_whose_id_is_one_student_s_and_name_another_s_is_not_guessed(tmp_path, capsys):
    """Moodle's folder carries the participant number of that assignment, which may be
    another student's roster id: the file goes to neither (issue 51)."""
    when = (2026, 12, 1, 10, 0, 0)
    subs, argv = _collect(tmp_path, {
        f"Cy Young_102_assignsubmission_file_/{NB}.ipynb": ("cy's", when),
        f"Ada Lovelace_101_assignsubmission_file_/{NB}.ipynb": ("ada's", when),
    }, lms="moodle")  # fmt: skip
    assert cli.main(argv) == 0
    assert not (subs / "bo").exists() and not (subs / "cy").exists()
    assert (subs / "ada" / f"{NB}.ipynb").read_text() == "ada's"  # id and name agree
    said = capsys.readouterr().out
    assert (f"not collected: Cy Young_102_assignsubmission_file_/{NB}.ipynb: its id is bo's "
            "and its name cy's in the roster") in said  # fmt: skip


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


# ----------------------------------------------------------------------------- issue 46

EARLY, LATE = (2026, 12, 1, 10, 0, 0), (2026, 12, 2, 9, 30, 0)


def _collected(tmp_path, members: dict, **settings) -> dict:
    """{student: {file: text}} as `grader collect` lays out ``members``, each call in a
    folder of its own."""
    run = tmp_path / f"run{len(list(tmp_path.glob('run*')))}"
    run.mkdir()
    subs, argv = _collect(run, members, **settings)
    assert cli.main(argv) == 0
    return {s.name: {f.name: f.read_text() for f in s.iterdir()} for s in subs.iterdir()}


@pytest.mark.parametrize(
    ("lms", "honest", "attack"),
    [
        (
            "moodle",
            {f"Ada Lovelace_55_assignsubmission_file_/{NB}.ipynb": ("ada's", EARLY),
             f"Bo Li_57_assignsubmission_file_/{NB}.ipynb": ("bo's", EARLY),
             f"Cy Young_56_assignsubmission_file_/{NB}.ipynb": ("cy's", EARLY)},
            # in bo's own folder, a folder named as the LMS names ada's, with a newer file
            f"Bo Li_57_assignsubmission_file_/Ada Lovelace_55_assignsubmission_file_/{NB}.ipynb",
        ),
        (
            "canvas",
            {f"lovelaceada_101_5001_{NB}.ipynb": ("ada's", EARLY),
             f"libo_102_5002_{NB}.ipynb": ("bo's", EARLY),
             f"youngcy_103_5003_{NB}.ipynb": ("cy's", EARLY)},
            # a member in a sub-folder named with ada's Canvas prefix, newer
            f"libo_102_5004_work/lovelaceada_101_5009_{NB}.ipynb",
        ),
    ],
)  # fmt: skip
def test_nothing_inside_a_submission_files_a_notebook_under_another_student(
    tmp_path, capsys, lms, honest, attack
):
    """Only the LMS's top-level folder or file name says whose a file is (issue 46: bo's
    folder holding one named as ada's made bo's notebook ada's latest). The class collected
    with and without the look-alike is the same; the look-alike is listed, not collected."""
    control = _collected(tmp_path, honest, lms=lms)
    capsys.readouterr()
    attacked = _collected(tmp_path, honest | {attack: ("bo's, as ada", LATE)}, lms=lms)
    said = capsys.readouterr().out
    assert control == {s: {f"{NB}.ipynb": f"{s}'s"} for s in ("ada", "bo", "cy")}
    assert attacked == control
    assert f"not collected: {attack}: its name does not follow the pattern" in said
    assert "older, left out" not in said


def test_a_pattern_of_ones_own_takes_no_id_from_below_the_top_level(tmp_path, capsys):
    """``lms_pattern`` may match any depth, but the id it takes must be the top level's."""
    pattern = r"(?:.*/)?(?P<id>\d+)-(?P<file>[^/]+)"
    honest = {f"101-{NB}.ipynb": ("ada's", EARLY), f"102-{NB}.ipynb": ("bo's", EARLY)}
    attack = f"102-work/101-{NB}.ipynb"
    control = _collected(tmp_path, honest, lms_pattern=pattern)
    attacked = _collected(tmp_path, honest | {attack: ("bo's, as ada", LATE)},
                             lms_pattern=pattern)  # fmt: skip
    assert attacked == control == {"ada": {f"{NB}.ipynb": "ada's"}, "bo": {f"{NB}.ipynb": "bo's"}}
    said = capsys.readouterr().out
    assert f"not collected: {attack}: it names its student below the zip's top level" in said


CONTROLS = {  # what a name may hold to take over the terminal, and how it is shown
    "\x1b]0;retitled\x07": "\\x1b]0;retitled\\x07",  # OSC: the window's title
    "\x1b[2J": "\\x1b[2J",  # ESC: clear the screen
    "\rzz FAKE": "\\rzz FAKE",  # CR: overwrite the line
}


def test_member_names_with_control_characters_are_listed_escaped_not_collected(tmp_path, capsys):
    """Through the CLI's printing: each such member is refused with its reason, its name
    escaped; the terminal never receives the raw characters. Ada's honest file is collected."""
    members = {f"lovelaceada_101_5001_{NB}.ipynb": ("ada's", EARLY)}
    members |= {f"libo_102_{i}_{NB}{c}.ipynb": ("bo's", EARLY) for i, c in enumerate(CONTROLS)}
    members[f"stranger{next(iter(CONTROLS))}.txt"] = ("who?", EARLY)  # unmatched as well
    laid = _collected(tmp_path, members)
    said = capsys.readouterr().out
    assert laid == {"ada": {f"{NB}.ipynb": "ada's"}}
    for i, shown in enumerate(CONTROLS.values()):
        assert (
            f"not collected: libo_102_{i}_{NB}{shown}.ipynb: its name holds a control character"
            in said
        )
    assert f"not collected: stranger{next(iter(CONTROLS.values()))}.txt: " in said
    assert not {"\x1b", "\x07", "\r"} & set(said)


def test_collect_keeps_every_file_taken_left_out_or_not_matched_in_a_private_report(
    tmp_path, capsys
):
    """collect_report.csv beside SUBMISSIONS: a row per member with its outcome and why,
    names escaped as on the terminal (an ESC and a CR stay one cell of one row), 0600."""
    from grader.commands.collect import REPORT
    from grader.results import csvfile

    early, late = (2026, 12, 1, 10, 0, 0), (2026, 12, 2, 9, 30, 0)
    subs, argv = _collect(tmp_path, {
        f"lovelaceada_101_5001_{NB}.ipynb": ("first", early),
        f"lovelaceada_LATE_101_5002_{NB}-1.ipynb": ("again", late),
        f"strangerzed_999_5004_{NB}.ipynb": ("who?", early),
        f"libo_102_5005_{NB}\x1b[2J\rzz.ipynb": ("bo's", early),
    })  # fmt: skip
    assert cli.main(argv) == 0
    report = tmp_path / REPORT
    assert f"every file and why: {report}" in capsys.readouterr().out
    assert report.stat().st_mode & 0o777 == 0o600
    assert subs.stat().st_mode & 0o777 == 0o700
    rows = [tuple(r.values()) for r in csvfile.read(report)]
    assert rows == [
        (f"lovelaceada_LATE_101_5002_{NB}-1.ipynb", "taken", "ada", f"{NB}.ipynb", "yes",
         "the latest"),
        (f"lovelaceada_101_5001_{NB}.ipynb", "older, left out", "ada", "", "",
         f"a later file of that name: lovelaceada_LATE_101_5002_{NB}-1.ipynb"),
        (f"strangerzed_999_5004_{NB}.ipynb", "not collected", "", "", "",
         "no roster student has its id or name"),
        (f"libo_102_5005_{NB}\\x1b[2J\\rzz.ipynb", "not collected", "", "", "",
         "its name holds a control character"),
    ]  # fmt: skip
    assert len(report.read_text().splitlines()) == 5  # a header and one line per member
