"""The LMS's own verdict on lateness beside the one computed here (issue 51): Canvas's
``LATE_`` is kept by `grader collect` (collect_report.csv), recorded with each notebook's
time by grading, and stated beside the computed lateness in the feedback line, grades.csv's
late row and the report's "Late work", with a note where they disagree; the zip's times are
read in ``c.GraderSettings.zip_timezone``, which collect states."""

from datetime import UTC, datetime
from types import SimpleNamespace

from test_collect import NB, _collect

from grader import cli
from grader.intake.collect import lms_late
from grader.results import deadlines, report

FILE = f"{NB}.ipynb"
POLICY = SimpleNamespace(due_dates={NB: "2026-12-02 09:00"}, extensions={"cy": 48},
                         late_policy="none", late_penalty=0.1)  # fmt: skip


def _collected_with_marks(tmp_path, capsys):
    subs, argv = _collect(tmp_path, {
        f"lovelaceada_LATE_101_1_{FILE}": ("ada's", (2026, 12, 2, 9, 30, 0)),  # 08:30 UTC
        f"libo_102_2_{FILE}": ("bo's", (2026, 12, 2, 11, 0, 0)),  # 10:00 UTC: late
        f"youngcy_LATE_103_3_{FILE}": ("cy's", (2026, 12, 3, 11, 0, 0)),  # in her extension
    }, zip_timezone="Europe/Paris")  # fmt: skip
    assert cli.main(argv) == 0
    return subs, capsys.readouterr().out


def test_collect_keeps_canvas_s_late_marker_and_states_the_zone_it_reads(tmp_path, capsys):
    subs, said = _collected_with_marks(tmp_path, capsys)
    assert "the zip's times read as Europe/Paris (c.GraderSettings.zip_timezone)" in said
    mtime = (subs / "ada" / FILE).stat().st_mtime
    assert mtime == datetime(2026, 12, 2, 8, 30, tzinfo=UTC).timestamp()
    assert lms_late(subs) == {("ada", FILE): True, ("bo", FILE): False, ("cy", FILE): True}


def test_an_unknown_zone_is_refused_in_one_line(tmp_path, capsys):
    _subs, argv = _collect(tmp_path, {}, zip_timezone="Mars/Olympus")
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --GraderSettings.zip_timezone: ") and err.count("\n") == 1


def test_the_lms_verdict_stands_beside_the_computed_lateness_with_a_note_where_they_differ(
    tmp_path, capsys
):
    subs, _ = _collected_with_marks(tmp_path, capsys)
    students = [SimpleNamespace(student=s, notebooks={NB: SimpleNamespace(name=FILE)})
                for s in ("ada", "bo", "cy")]  # fmt: skip
    entries = {s.student: [subs / s.student] for s in students}
    deadlines.record_submissions(tmp_path, students, entries, [NB], lms_late(subs))
    times = deadlines.load_times(tmp_path)
    late = {s: deadlines.lateness(POLICY, s, NB, times) for s in ("ada", "bo", "cy")}
    # ada: on time here, late for Canvas; bo: late here only; cy: her extension, not Canvas's
    assert {s: deadlines.disagrees(lt) for s, lt in late.items()} == {
        "ada": True, "bo": True, "cy": True}  # fmt: skip
    assert deadlines.describe(late["ada"]).endswith(
        "on time. The LMS marked it late: they disagree; check its submission time and due date."
    )
    assert "1 hour late; no penalty. The LMS did not mark it late: they disagree" in (
        deadlines.describe(late["bo"])
    )
    times["bo"][NB]["lms_late"] = True
    assert deadlines.describe(deadlines.lateness(POLICY, "bo", NB, times)).endswith(
        "The LMS marked it late too."
    )
    extra = {(s, NB): {"late": lt} for s, lt in late.items()}
    section = "".join(report._late_section([], extra))
    assert section.count("late (disagrees)") == 2 and "on time (disagrees)" in section


def test_grades_csv_s_late_row_says_what_the_lms_said():
    due = datetime(2026, 12, 2, 9, tzinfo=UTC)
    late: deadlines.Lateness = {"hours": 30.0, "due": due, "time": due, "source": "zip",
                                "fraction": 0.2, "policy": "per_day", "lms_late": True}  # fmt: skip
    rows = [{"student": "bo", "notebook": NB, "exercise": "softmax", "points": "2",
             "max_points": "2", "message": "", "comment": "", "by_hand": ""}]  # fmt: skip
    row = report._late_row(rows, late)
    assert row["points"] == "-0.4" and row["message"].endswith("The LMS marked it late too.")
