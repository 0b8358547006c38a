"""Hand grades are tied to the answer they graded (issue 51).

On a copy of the small graded class, formgrader's grades go in through nbgrader's API: an
override and a comment on bob's first exercise, points and a comment on his written answer,
and alice's own. bob hands in again with only that answer changed and is regraded alone
(``--students bob``): the hand grades of his changed answer are dropped with a note in
grades.csv, the report and the terminal; his unchanged written answer keeps its own, and
alice, not regraded, keeps all of hers. The setting that keeps them, and the comparison of
answers, are checked without a kernel.
"""

import json
import shutil

import nbformat
import pytest
from fixtures.small_class import NB, STUDENTS, WRITTEN, copy_out
from nbgrader.api import Gradebook
from test_deadlines import _cli  # the one `python -m grader` helper of the tests

from grader.course import exercises, release_path, source_path
from grader.results import csvfile, gradebook, handgrades
from grader.results.result import Result

TEST = {e.grade_id: e.test_ids[0] for e in exercises(NB) if e.autograded}
FIRST, SECOND = list(TEST)[:2]  # bob changes FIRST's answer; alice's SECOND is overridden
LINE = f"bob/{NB} {FIRST}: graded by hand on an earlier submission; check again in formgrader"


def _with_answer(exercise):
    """The release with ``exercise``'s answer taken from the solution: one cell changed."""
    nb, solved = (nbformat.read(p, as_version=4) for p in (release_path(NB), source_path(NB)))
    answer = {c.metadata.get("nbgrader", {}).get("grade_id"): c.source for c in solved.cells}
    for cell in nb.cells:
        if cell.metadata.get("nbgrader", {}).get("grade_id") == exercise:
            cell.source = answer[exercise]
    return nbformat.writes(nb)


def _type_grades(out):
    with Gradebook(gradebook.db_url(out), gradebook.COURSE_ID) as gb:
        gb.find_grade(TEST[FIRST], NB, NB, "bob").manual_score = 0.5
        gb.find_comment(FIRST, NB, NB, "bob").manual_comment = "one character off"
        gb.find_grade(WRITTEN.grade_id, NB, NB, "bob").manual_score = 1.0
        gb.find_comment(WRITTEN.grade_id, NB, NB, "bob").manual_comment = "keys, not values"
        gb.find_grade(TEST[SECOND], NB, NB, "alice").manual_score = 0.25
        gb.find_grade(WRITTEN.grade_id, NB, NB, "alice").manual_score = 2.0
        gb.db.commit()


def _rows(out):
    return {(r["student"], r["exercise"]): r for r in csvfile.read(out / "grades.csv")}


def _result(out, student):
    path = out / "work" / "results" / student / f"{NB}.json"
    return Result.from_json(json.loads(path.read_text()))


def _checks_gave(out, student, exercise):
    return next(r.points for r in _result(out, student).rows if r.exercise == exercise)


@pytest.fixture(scope="module")
def regraded(small_class, tmp_path_factory):
    """(OUT, grades.csv rows before, the regrade's stdout) after bob's one-cell resubmission."""
    tmp = tmp_path_factory.mktemp("regrade")
    out = copy_out(small_class, tmp / "out")
    _type_grades(out)
    _cli("totals", out)
    before = _rows(out)
    subs = tmp / "subs"
    for student in STUDENTS:
        (subs / student).mkdir(parents=True)
    shutil.copy(STUDENTS["alice"], subs / "alice" / f"{NB}.ipynb")
    (subs / "bob" / f"{NB}.ipynb").write_text(_with_answer(FIRST))
    graded = _cli("autograde", subs, "--out", out, "--students", "bob", "--quiet")
    return out, before, graded.stdout


def test_a_changed_answer_loses_its_hand_grades_with_a_note_everywhere(regraded):
    out, before, stdout = regraded
    rows = _rows(out)
    assert before[("bob", FIRST)]["by_hand"].startswith("set in formgrader")
    row = rows[("bob", FIRST)]
    assert (float(row["points"]), row["by_hand"], row["comment"]) == (
        _checks_gave(out, "bob", FIRST),
        "",
        "",
    )
    assert row["message"].endswith(handgrades.DROPPED_NOTE)
    assert LINE in stdout.splitlines()
    report = (out / "report" / "index.html").read_text()
    assert "Hand grades of an earlier submission" in report and handgrades.DROPPED_NOTE in report
    for page in (out / "feedback" / "bob.html", out / "feedback" / "bob" / f"{NB}.html"):
        assert handgrades.EARLIER not in page.read_text()  # a note to the instructor only
    with Gradebook(gradebook.db_url(out), gradebook.COURSE_ID) as gb:
        assert gb.find_grade(TEST[FIRST], NB, NB, "bob").manual_score is None
        assert gb.find_comment(FIRST, NB, NB, "bob").manual_comment is None


def test_unchanged_answers_and_students_not_regraded_keep_theirs(regraded):
    out, before, _ = regraded
    rows = _rows(out)
    written = rows[("bob", WRITTEN.grade_id)]
    assert (written["points"], written["comment"]) == ("1", "keys, not values")
    assert handgrades.EARLIER not in written["message"]
    for key in [k for k in before if k[0] == "alice"]:
        assert rows[key] == before[key]
    assert rows[("alice", SECOND)]["by_hand"].startswith("set in formgrader")
    assert [r["student"] for r in rows.values() if handgrades.EARLIER in r["message"]] == ["bob"]


def test_the_note_goes_once_the_answer_is_graded_again(regraded, tmp_path):
    out = shutil.copytree(regraded[0], tmp_path / "out")
    assert LINE in _cli("totals", out).stdout  # still to check: said again
    with Gradebook(gradebook.db_url(out), gradebook.COURSE_ID) as gb:
        gb.find_grade(TEST[FIRST], NB, NB, "bob").manual_score = 1.5
        gb.db.commit()
    assert LINE not in _cli("totals", out).stdout
    row = _rows(out)[("bob", FIRST)]
    assert handgrades.EARLIER not in row["message"] and row["by_hand"].startswith("set in")


def test_the_setting_keeps_a_changed_answer_s_hand_grades_with_a_note(small_class, tmp_path):
    out = copy_out(small_class, tmp_path / "out")
    _type_grades(out)
    handgrades.answers_changed(out, ("bob", NB), {FIRST, SECOND}, keep=True)
    hand = handgrades.read(out)
    assert hand.scores[("bob", NB)][TEST[FIRST]] == 0.5
    assert hand.changed == {("bob", NB): {FIRST: "kept"}}  # bob's SECOND held nothing typed
    result = _result(out, "bob")
    row = next(r for r in result.rows if r.exercise == FIRST)
    points, message, by_hand = handgrades.exercise_points(result, row, hand)
    assert message.endswith(handgrades.KEPT_NOTE) and by_hand.startswith("set in formgrader")


def test_only_the_answer_cells_whose_source_changed_count():
    release = release_path(NB).read_text()
    assert handgrades.changed_answers(release, release) == set()
    assert handgrades.changed_answers(release, _with_answer(FIRST)) == {FIRST}
