"""The instructor's grader, end to end through the real CLI.

One session-scoped run grades a class of adversarial and broken submissions
(``fixtures/adversarial.py``, one student per item of issue 5), the attack class of issue 9
(``fixtures/attacks.py``, one student per hole), a student who submits every solution
notebook and one who submits every untouched release notebook. The tests then read its
outputs and look at the machine afterwards; two small extra runs check determinism,
isolation and resuming.
"""

import contextlib
import csv
import fcntl
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import tempfile
import time
from pathlib import Path

import nbformat
import pytest
from fixtures import attacks, intake_attacks, leaks, limits, short_run
from fixtures.adversarial import NB, _write, honest
from fixtures.batch import BEHIND, CLI, FAST, MISTAKES, USES_WRONG
from fixtures.batch import grade as _grade
from fixtures.batch import rows as _rows
from fixtures.validate import failed_cells

from grader.course import RELEASE, REPO_ROOT, assignments, exercises
from grader.judging.judge import FAILED_IN_KERNEL, WITHHELD
from grader.results import csvfile
from grader.results.messages import NOT_RUN
from grader.results.report import feedback_path

WRITTEN_IN = "02_projections"  # the notebook of the written answer keys_vs_values


def _mine(rows, student, notebook=NB):
    return {r["exercise"]: r for r in rows if r["student"] == student and r["notebook"] == notebook}


# ----------------------------------------------------------------------------- the contract


def test_grades_csv_has_exactly_the_contract_columns(graded):
    _, out, cases, rows, _, _ = graded
    header = (out / "grades.csv").read_text().splitlines()[0]
    assert header == "student,notebook,exercise,points,max_points,message,comment,by_hand"
    students = set(cases) | set(MISTAKES)
    expected = {(s, a, e.grade_id) for s in students for a in assignments() for e in exercises(a)}
    assert {(r["student"], r["notebook"], r["exercise"]) for r in rows} == expected
    assert len(rows) == len(expected)


@pytest.mark.parametrize("assignment", assignments())
def test_every_solution_scores_full_marks(graded, assignment):
    rows = _mine(graded[3], "all_solutions", assignment)
    for ex in exercises(assignment):
        row = rows[ex.grade_id]
        if ex.autograded:
            assert (row["points"], row["message"]) == (f"{ex.max_points:g}", ""), row
        else:
            assert (row["points"], row["message"]) == ("", "graded by hand"), row
    result = graded[4][("all_solutions", assignment)]
    assert not result["flags"]
    assert not result["notes"], "the solution's own outputs were cut (figures over the cap?)"


@pytest.mark.parametrize("assignment", assignments())
def test_untouched_release_scores_zero_with_a_reason(graded, assignment):
    rows = _mine(graded[3], "all_release", assignment)
    for ex in exercises(assignment):
        row = rows[ex.grade_id]
        assert row["points"] == "0", row
        assert row["message"], row
        if ex.autograded:
            assert "isn't written yet" in row["message"], row
        else:
            assert row["message"] == "No answer written."


@pytest.mark.parametrize("assignment", assignments())
def test_the_untouched_release_stops_in_one_line_per_cell(graded, assignment):
    """What a learner sees running a notebook before writing anything (its full run, in the
    graded copy): every cell that stops shows one line, hint first, and no figure."""
    path = graded[1] / "nbgrader" / "autograded" / "all_release" / assignment
    nb = nbformat.read(path / f"{assignment}.ipynb", as_version=4)
    stopped = 0
    for i, cell in enumerate(c for c in nb.cells if c.cell_type == "code"):
        errors = [o for o in cell.outputs if o.output_type == "error"]
        if not errors:
            continue
        stopped += 1
        (error,) = errors
        assert len(error.traceback) == 1, f"code cell {i} shows a traceback: {error.traceback}"
        assert error.traceback[0].startswith("\x1b[1;31m✗ "), f"code cell {i}: {error.traceback}"
        assert not any("image/png" in o.get("data", {}) for o in cell.outputs), f"code cell {i}"
    assert stopped, "no cell stopped: the untouched release was not run in full"


def test_totals_and_missing_notebooks(graded):
    _, out, cases, rows, _, _ = graded
    totals = {r["student"]: r for r in csvfile.read(out / "totals.csv")}
    assert set(totals) == set(cases) | set(MISTAKES)
    full = sum(e.max_points for a in assignments() for e in exercises(a) if e.autograded)
    assert float(totals["all_solutions"]["total"]) == full
    assert float(totals["all_release"]["total"]) == 0
    if len(assignments()) > 1:  # the others submitted notebook 01 only
        other = next(a for a in assignments() if a != NB)
        assert all(
            r["points"] == "0" and r["message"] == "Notebook not submitted."
            for r in _mine(rows, "honest", other).values()
        )


# ----------------------------------------------------------------------------- pinned class


CASE_IDS = (
    """
    honest monkeypatch_np patch_checks input_transformer custom_exc showtraceback settrace
    event_hook deleted_tests skip_tags test_to_markdown forged_cells duplicated_answer reordered
    eq_object ndarray_subclass read_secrets write_gradebook shortcut_torch course_helper
    shortcut_alias shortcut_tamper torch_building_block shortcut_sdpa
    loop_in_cell loop_in_function os_exit_cell os_exit_function memory_hog system_exit
    syntax_error output_flood warnings corrupt_json empty_file old_nbformat latin1 wrong_name
    untitled nested zip_inside zoe not_submitted
""".split()
    + list(attacks.ATTACKS)
    + list(limits.ATTACKS)
    + list(leaks.ATTACKS)
    + list(short_run.attacks())
    + list(intake_attacks.ATTACKS)
    + [BEHIND]
)


@pytest.mark.parametrize("student", CASE_IDS)
def test_pinned_points_flags_and_messages(graded, student):
    _, _, cases, rows, results, _ = graded
    assert set(CASE_IDS) | {"all_solutions", "all_release"} == set(cases)
    assert not set(MISTAKES) & set(cases)
    case = cases[student]
    mine = _mine(rows, student, case.notebook)
    result = results[(student, case.notebook)]
    for ex in exercises(case.notebook):
        want = case.points.get(ex.grade_id, "full" if ex.autograded else "")
        if want is None:
            continue
        want = f"{ex.max_points:g}" if want == "full" else ("" if want == "" else f"{want:g}")
        assert mine[ex.grade_id]["points"] == want, (ex.grade_id, mine[ex.grade_id])
        if ex.autograded and want == f"{ex.max_points:g}":
            assert mine[ex.grade_id]["message"] == ""
        elif ex.autograded:
            assert mine[ex.grade_id]["message"], "lost points need a reason"
    for flag in case.flags:
        assert any(flag in f for f in result["flags"]), (flag, result["flags"])
    for note in case.notes:
        assert any(note in n for n in result["notes"]), (note, result["notes"])
    for ex, text in case.messages.items():
        assert text in mine[ex]["message"], mine[ex]
    if case.unflagged:
        assert result["flags"] == []
    if case.flags:  # every attempt appears in the instructor's report, with its reason
        report = (graded[1] / "report" / "index.html").read_text()
        assert f"{student} · {case.notebook}" in report


def test_nothing_outside_the_sandbox_was_touched(graded):
    subs, out, _, rows, _, _ = graded
    assert (subs / "honest" / f"{NB}.ipynb").read_text().startswith("{")
    with sqlite3.connect(out / "gradebook.db") as con:
        assert con.execute(
            "select count(*) from grade where manual_score is not null"
        ).fetchone() == (0,)
    assert not (subs.parent / "escape.txt").exists() and not (out / "work" / "escape.txt").exists()
    assert "hacked" not in (out / "grades.csv").read_text()


def test_gradebook_matches_grades_csv(graded):
    _, out, _, rows, _, _ = graded
    with sqlite3.connect(out / "gradebook.db") as con:
        (auto,) = con.execute(
            "select sum(g.auto_score) from grade g join submitted_notebook n on g.notebook_id = "
            "n.id join submitted_assignment a on n.assignment_id = a.id join student s on "
            "a.student_id = s.id where s.id = 'all_solutions'"
        ).fetchone()
        hidden = con.execute(
            "select count(*) from source_cell where source like '%BEGIN HIDDEN TESTS%'"
        ).fetchone()
    full = sum(e.max_points for a in assignments() for e in exercises(a) if e.autograded)
    assert auto == pytest.approx(full)
    assert hidden == (0,), "the gradebook must not store hidden test sources"
    assert (out / "nbgrader" / "nbgrader_config.py").is_file()


def test_feedback_and_report_never_show_hidden_tests(graded):
    _, out, cases, _, _, _ = graded
    pages = list((out / "feedback").glob("*.html"))
    assert len(pages) == len(cases) + len(MISTAKES)
    autograded = list((out / "nbgrader" / "autograded").rglob("*.ipynb"))
    assert autograded
    for path in [*pages, *autograded, out / "report" / "index.html"]:
        text = path.read_text()
        assert "BEGIN HIDDEN TESTS" not in text and "verify(" not in text, path
    honest = (out / "feedback" / "monkeypatch_np.html").read_text()
    assert "hard_lookup" in honest and "SMALLEST" in honest


def test_class_report_files(graded):
    _, out, _, _, _, stdout = graded
    report = out / "report"
    assert (report / "histogram.png").read_bytes()[:4] == b"\x89PNG"
    with open(report / "exercises.csv", newline="") as fh:
        stats = {(r["notebook"], r["exercise"]): r for r in csv.DictReader(fh)}
    assert float(stats[(NB, "hard_lookup")]["full_marks_rate"]) < 1
    assert "SMALLEST" in stats[(NB, "hard_lookup")]["top_messages"]
    with open(report / "flags.csv", newline="") as fh:
        flagged = {r["student"] for r in csv.DictReader(fh)}
    assert {"monkeypatch_np", "read_secrets", "skip_tags"} <= flagged
    assert "honest" not in flagged
    assert "flagged for review" in stdout


# ----------------------------------------------------------------------------- attacks


def _sandbox_uids():
    from grader.settings import load

    settings = load()
    return range(settings.sandbox_uid, settings.sandbox_uid + settings.sandbox_slots)


def _sandbox_leftovers() -> list[int]:
    """Live processes of the sandbox uids no grading run holds (`make test` grades in two
    workers at once), their slot locks held meanwhile so that no run starts on one: each
    outlived its notebook."""
    from grader.run.sandbox import SLOT_LOCKS, processes_of

    with contextlib.ExitStack() as held:
        idle = []
        for uid in _sandbox_uids():
            handle = held.enter_context(open(SLOT_LOCKS / f"uid-{uid}.lock", "a"))
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                continue
            idle.append(uid)
        return [pid for uid in idle for pid in processes_of(uid)]


def _sandbox_top_level():
    """What / may hold in the sandbox: the system folders, the scratch home, /tmp and the
    top folder of each read-only root (wherever the checkout and the interpreter live)."""
    from grader.run.kernelrun import SANDBOX_HOME
    from grader.run.sandbox import LINKS, read_roots

    tops = {Path(p).parts[1] for p in [*read_roots(), *LINKS, str(SANDBOX_HOME)]}
    return {".", "..", "dev", "proc", "tmp", *tops}


def test_the_sandbox_is_on(graded):
    """The probe reports who it is, what network it has and what it sees of the machine."""
    seen = attacks.seen(graded[1], "probe")
    if os.geteuid() == 0:
        assert seen["uid"] in _sandbox_uids() and seen["gid"] == seen["uid"], seen
    else:
        assert seen["uid"] == os.getuid()
    assert seen["CapEff"] == "0000000000000000" and seen["NoNewPrivs"] == "1"
    assert seen["Seccomp"] == "2", "the kernel runs under the system-call filter"
    assert seen["interfaces"] == ["lo"] and seen["hostname"] == "sandbox"
    repo = str(REPO_ROOT)
    assert sorted(seen["repo"]) == sorted([".", "..", ".venv", "attnlib", "data", "grader"])
    assert sorted(seen["grader"]) == [".", "..", "__init__.py", "kernel", "wire.py"]
    assert set(seen["root"]) <= _sandbox_top_level(), seen["root"]
    assert not any(m.startswith(f"{repo}/solutions") or "/out" in m for m in seen["mounts"])
    assert int(seen["processes"]) < 20, "the sandbox sees only its own processes"


def test_native_code_is_refused_then_walled_in(graded):
    out = graded[1]
    plain = attacks.seen(out, "native_ctypes")
    assert plain == {"np.ctypeslib": "PermissionError", "ctypes": "PermissionError"}
    reads = attacks.seen(out, "native_reads")
    secrets = [k for k in reads if k.startswith("/")]
    assert len(secrets) == 4
    for path in secrets:
        status, text = reads[path]
        assert status != 0 and "No such file or directory" in text, (path, text)
    assert reads["repo"][1].split() == ["attnlib", "data", "grader"]
    for path, (status, text) in attacks.seen(out, "native_writes").items():
        assert status != 0 and ("nonexistent" in text or "denied" in text), (path, text)
    sockets = attacks.seen(out, "sockets")
    assert sockets["localhost"] == sockets["network"] == "PermissionError"
    assert "refused" in sockets["native localhost"][1]
    assert "unreachable" in sockets["native network"][1]
    assert sockets["interfaces"] == ["lo"]
    disk = attacks.seen(out, "hidden_from_disk")
    assert disk["find"][1] == "", "no hidden inputs or records on the kernel's disk"
    assert "kernel.json" in disk["ipc"][1] and "grader.sock" not in disk["ipc"][1]


def test_nothing_the_attacks_did_outlived_their_notebook(graded, listener):
    """No file written outside the sandbox, no late rewrite of grades.csv by a leftover
    process, no connection to this machine's localhost, no process of a sandbox uid."""
    subs, out = graded[0], graded[1]
    time.sleep(max(0.0, listener["ended"] + 6 - time.monotonic()))  # the leftover's delay
    assert "hacked" not in (out / "grades.csv").read_text()
    assert not (REPO_ROOT / "escape-native.txt").exists()
    assert not (REPO_ROOT / "grades.csv").exists(), "write_gradebook wrote into the repository"
    assert not (subs / "honest" / "escape.txt").exists()
    assert listener["connections"] == []
    if os.geteuid() == 0:
        assert _sandbox_leftovers() == []
    left = attacks.seen(out, "leftover_process")
    assert left["background"][0] == 0 and left["detached"][0] == 0, "the attempt really ran"


def test_no_hidden_source_reaches_feedback(graded):
    _, out, _, rows, _, _ = graded
    message = _mine(rows, "leak_feedback")["hard_lookup"]["message"]
    # Its error text came after hidden inputs: only the exception's type is named.
    assert "raised ValueError" in message and "LEAK" not in message, message
    status, text = attacks.seen(out, "leak_feedback")["hidden source"]
    assert status != 0 and "No such file or directory" in text, (status, text)
    hidden = [
        line.strip()
        for path in (REPO_ROOT / "grader" / "hidden").glob("*.py")
        for line in path.read_text().splitlines()
        if len(line.strip()) > 30
    ]
    shown = (out / "grades.csv").read_text() + (out / "feedback" / "leak_feedback.html").read_text()
    assert not [line for line in hidden if line in shown]


def test_hostile_records_are_judged_within_limits(graded):
    """A 10⁵-value record and an array header that claims 8 TB are refused in milliseconds;
    a 10⁵ × 20 MB result is never sent; the rest of the class is graded as usual."""
    from grader.settings import load

    results = graded[4]
    limit = load().judge_seconds
    for student in ("forged_frames", "huge_record", "rewrite_record"):
        timings = results[(student, NB)]["timings"]
        assert timings["judge"] < limit / 2, (student, timings)
    flags = results[("forged_frames", NB)]["flags"]
    assert any("a sequence of 200000 is more than allowed" in f for f in flags), flags
    assert any("does not match its" in f for f in flags), flags
    assert _mine(graded[3], "honest")["hard_lookup"]["points"] == "2"


def test_mutation_fails_as_in_validate(graded):
    """The in-place softmax fails its visible and its hidden check with call()'s message."""
    tests = graded[4][("mutating_softmax", NB)]["tests"]
    for gid in ("test_softmax", "test_softmax_hidden"):
        assert tests[gid]["points"] == 0
        assert "`softmax` changed its input arrays in place (`x`)" in tests[gid]["message"]


def test_a_check_behind_a_wrong_earlier_exercise_says_so(graded):
    """A right `qkv` behind a wrong `project` (``fixtures.batch.behind_wrong_project``, given to
    Validate by tests/test_validate.py): grading fails `qkv` and says it uses `project`, which
    fails its own check, first; `project`'s own message and the solutions' say nothing of it."""
    rows = _mine(graded[3], BEHIND, "02_projections")
    assert rows["qkv"]["message"].startswith(f"{USES_WRONG} `qkv` gave"), rows
    assert float(rows["qkv"]["points"]) == 0
    assert "This check uses" not in rows["project"]["message"], rows
    control = _mine(graded[3], "all_solutions", "02_projections")
    assert all(float(control[e]["points"]) == 2 for e in ("project", "qkv")), control


def test_grading_names_every_mistake_it_grades(graded):
    """What the Validate test asks of Validate, asked of grading: each catalogue mistake the
    visible check catches fails that check with its words, every other exercise passes it;
    a mistake the hidden check catches costs the exercise its points."""
    from grader.hidden import Mistake

    results, seen, kernel_only, withheld = graded[4], set(), set(), set()
    for student, batch in MISTAKES.items():
        tests = results[(student, batch.notebook)]["tests"]
        for ex in exercises(batch.notebook):
            entry = batch.entry(ex.grade_id)
            if not ex.autograded or batch.needs_wrong(ex.grade_id):
                continue
            visible = tests[f"test_{ex.grade_id}"]
            if isinstance(entry, Mistake) and entry.caught_by != "hidden":
                assert visible["points"] == 0, (student, ex.grade_id, entry.label)
                if visible["message"] == FAILED_IN_KERNEL:  # the kernel's text is not shown
                    kernel_only.add(entry.label)
                    continue
                if WITHHELD in visible["message"]:  # a crash after hidden checks: type only
                    assert f"`{ex.grade_id}` raised " in visible["message"], visible
                    withheld.add(entry.label)
                    continue
                text = visible["message"].lower()
                assert all(w.lower() in text for w in entry.says), (entry.says, visible)
                seen.add(entry.label)
            else:
                assert visible["message"] == "", (student, ex.grade_id, visible)
            row = _mine(graded[3], student, batch.notebook)[ex.grade_id]
            if isinstance(entry, Mistake):
                assert float(row["points"]) < ex.max_points, (student, ex.grade_id, row)
    # A check that measures the learner's function (its memory) fails as it did in the kernel,
    # with a fixed message (Validate, in the learner's own session, says why).
    assert "whole-score-matrix" in kernel_only
    # A crash whose hint rests on the error's text, in a cell after a hidden check (issue 23).
    assert "splits-keys-into-n_heads" in withheld
    assert seen, "no mistake's words were checked"


# ----------------------------------------------------------------------------- Validate


def _one_line(result: dict) -> dict:
    """{visible test source: its one-line message} of the cells a Validate ``result`` fails
    (what the cell printed on stderr before it, e.g. a RuntimeWarning, left out)."""
    found = failed_cells(result)
    return {source: " ".join(text.rpartition("✗ ")[2].split()) for source, text in found.items()}


def _says_the_same(graded: str, validated: str) -> bool:
    """The grader's message is in Validate's line (an earlier exercise it blames named in
    both, first or in the crash's hint); for a crash, the same function and error
    (the hint before the error may differ: in the learner's session it can name an earlier
    exercise that failed, which the grader's replay does not know); for a check that measures
    the function in the kernel, the grader's fixed message (the kernel's text is not shown); for
    a crash after a hidden check (its text withheld), the same function and error type."""
    if graded in validated or graded == FAILED_IN_KERNEL:
        return True
    earlier = re.match(r"This check uses your (`\w+`), which [^:]*: \w+ \1 first\. ", graded)
    if earlier:  # Validate names that exercise too, first or in its crash hint
        return f"{earlier[1]} first" in validated and _says_the_same(
            graded[earlier.end() :], validated
        )
    withheld = re.fullmatch(rf"(`\w+`) raised (\w+): {re.escape(WITHHELD)}", graded)
    if withheld:  # after a hidden check only the error's type is known: the same in both
        return withheld[1] in validated and f"{withheld[2]}:" in validated
    crash = re.fullmatch(r"(`\w+`) (?:crashed[^:]*: .* \((.+)\)|raised (.+))", graded)
    return bool(crash) and crash[1] in validated and (crash[2] or crash[3]) in validated


def test_validate_and_grading_agree_on_every_mistake(graded, validated):
    """Each of the catalogue's wrong implementations the batch grades (``fixtures.mistakes``:
    the Validate test's sampled batches, handed in; validated once, ``conftest.validated``)
    gets the same verdict on every visible test cell from Validate as from the grader, and the
    check's message in both. (Validate's line may say more: the learner's session adds what it
    knows, e.g. "`soft_lookup` uses `softmax`, which hasn't passed its check: fix `softmax`
    first.", which the grader's feedback does not repeat.)"""
    from grader.judging import trusted
    from grader.settings import load

    results = graded[4]
    models = trusted.models(assignments(), load().release_cache)
    jobs = sorted((student, batch.notebook, batch) for student, batch in MISTAKES.items())
    disagree, compared = [], 0
    for student, notebook, batch in jobs:
        found = _one_line(validated[batch][2])
        graded_tests = results[(student, notebook)]["tests"]
        for test in models[notebook].tests:
            if test.hidden:
                continue
            got, message = graded_tests[test.id], found.get(test.source)
            passed = got["points"] == got["max_points"]
            compared += message is not None
            said = message is None or _says_the_same(got["message"], message)
            if (message is None) != passed or not said:
                disagree.append((student, test.id, message, got["message"]))
    assert not disagree, disagree[:5]
    assert len(jobs) >= len(assignments()) and compared >= len(jobs), "too few mistakes seen"


# ----------------------------------------------------------------------------- reruns


def test_rerun_is_identical_and_isolated(graded, stopped_and_resumed):
    """Three students graded apart from the batch (in the small class that
    ``stopped_and_resumed`` stops and resumes) get exactly the rows they got among crashing
    classmates."""
    rows = graded[3]
    alone = ("honest", "monkeypatch_np", "os_exit_function")
    again = [r for r in rows if r["student"] in alone and r["notebook"] == NB]
    assert again and [r for r in stopped_and_resumed["rows"] if r["student"] in alone] == again


def _one_per_notebook(keys: set) -> set:
    """One (student, notebook) of ``keys`` per notebook, from as few students as can be (each
    student is one more grading run): the student with the most notebooks left first."""
    chosen, left = set(), {n for _, n in keys}
    while left:
        count = {}
        for student, notebook in sorted(keys):
            count[student] = count.get(student, 0) + (notebook in left)
        student = max(count, key=count.get)
        chosen |= {(student, n) for s, n in keys if s == student and n in left}
        left -= {n for _, n in chosen}
    return chosen


def test_leaving_out_demo_cells_changes_no_grade(graded, tmp_path):
    """The batch ran each notebook without the demo cells no check depends on (issue 14). A
    result of that shorter run stands only with full marks; any other notebook ran again in
    full, and a notebook with an exercise left as released ran in full at once. Regrading with
    --full-run every result that stood, and the first one per notebook that ran again, gives
    the very same grades.csv rows."""
    subs, _, _, rows, results, _ = graded
    stood = {k for k, r in results.items() if r.get("demo_cells_left_out")}
    again = {k for k, r in results.items() if "full_run" in r["timings"]}
    assert stood and again and not stood & again
    for notebook in assignments():  # an unwritten exercise cannot pass: the full run at once
        result = results["all_release", notebook]
        assert "short_run" not in result["timings"] and not result.get("demo_cells_left_out")
    for key in stood:
        assert all(row["points"] == row["max_points"] or not row["autograded"]
                   for row in results[key]["rows"]), key  # fmt: skip
    student, notebook = min(stood)
    left_out = results[student, notebook]["demo_cells_left_out"]
    feedback = feedback_path(graded[1], student).read_text()
    assert f"{left_out} demo cells were not re-run when grading" in feedback
    copy = nbformat.read(graded[1] / "nbgrader" / "autograded" / student / notebook
                         / f"{notebook}.ipynb", as_version=4)  # fmt: skip
    marked = [c for c in copy.cells if any(o.get("text") == NOT_RUN for o in c.get("outputs", []))]
    assert len(marked) == left_out
    sample = _one_per_notebook(stood) | _one_per_notebook(again)
    # One run (each run costs a start-up): the sample's students and notebooks; the pairs
    # outside the sample are mostly not handed in, so cost next to nothing.
    students, notebooks = sorted({s for s, _ in sample}), sorted({n for _, n in sample})
    out = tmp_path / "full"
    _grade(subs, out, "--full-run", "--students", *students, "--notebooks", *notebooks)
    full = [r for r in _rows(out) if (r["student"], r["notebook"]) in sample]
    assert full == [r for r in rows if (r["student"], r["notebook"]) in sample]
    assert len(full) == sum(len(exercises(n)) for _, n in sample)


def _leftovers(mark: str) -> list[int]:
    """Live processes of one grading run: its workers and judges (they carry ``mark`` in
    their environment) and, when the grader is root, any process of a sandbox uid."""
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                if mark.encode() in Path(f"/proc/{entry.name}/environ").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    if os.geteuid() == 0:
        found += _sandbox_leftovers()
    return found


def _gone(mark: str, seconds: float = 20) -> list[int]:
    deadline = time.monotonic() + seconds
    while (left := _leftovers(mark)) and time.monotonic() < deadline:
        time.sleep(0.2)
    return left


def _start(subs: Path, out: Path, mark: str):
    return subprocess.Popen(
        [*CLI, str(subs), "--out", str(out), *FAST, "--jobs", "2"],
        cwd=REPO_ROOT,
        env={**os.environ, "ATTN_TEST_RUN": mark},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def _wait_for_a_result(proc, out: Path) -> None:
    deadline = time.monotonic() + 300
    while not list((out / "work" / "results").glob("*/*.json")):
        assert proc.poll() is None and time.monotonic() < deadline, "no result before the stop"
        time.sleep(0.2)


def _copy_class(subs: Path, dest: Path, students) -> None:
    for student in students:
        (dest / student).mkdir(parents=True)
        (dest / student / f"{NB}.ipynb").write_bytes((subs / student / f"{NB}.ipynb").read_bytes())


# (not a looping case: the batch grades those under a shorter cell limit, fixtures.batch)
STOPPED = ("honest", "monkeypatch_np", "os_exit_function", "patch_checks", "syntax_error")


@pytest.fixture(scope="module")
def stopped_and_resumed(graded, tmp_path_factory):
    """A small class copied from the batch, stopped by SIGTERM once a result is written, then
    graded again: what each step left (one run for the SIGTERM and the rerun tests)."""
    small = tmp_path_factory.mktemp("stopped") / "subs"
    _copy_class(graded[0], small, STOPPED)
    out, mark = small.parent / "out", f"sigterm-{os.getpid()}-{time.time()}"
    proc = _start(small, out, mark)
    _wait_for_a_result(proc, out)
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=120)
    seen = {"returncode": proc.returncode, "stderr": stderr, "left": _gone(mark)}
    seen["csv_after_stop"] = (out / "grades.csv").exists()
    seen["finished"] = len(list((out / "work" / "results").glob("*/*.json")))
    seen["resumed"] = _grade(small, out).stdout
    seen["rows"] = _rows(out)
    return seen


def test_sigterm_stops_cleanly_and_the_rerun_resumes(graded, stopped_and_resumed):
    """SIGTERM mid-batch: exit 130 with a one-line note, no worker, judge or sandbox left;
    the rerun grades only what is missing and gives the same grades.csv as the batch."""
    seen = stopped_and_resumed
    assert seen["returncode"] == 130 and "interrupted:" in seen["stderr"], seen["stderr"][-2000:]
    assert seen["left"] == [], "workers, judges or sandboxes outlived the stopped grader"
    assert not seen["csv_after_stop"]
    assert f"({seen['finished']} reused" in seen["resumed"]
    want = [r for r in graded[3] if r["student"] in STOPPED and r["notebook"] == NB]
    assert seen["rows"] == want


def test_a_killed_grader_takes_its_workers_and_sandboxes_with_it(graded, tmp_path):
    small = tmp_path / "subs"
    _copy_class(graded[0], small, ("loop_in_function", "leftover_process", "honest"))
    out, mark = tmp_path / "out", f"sigkill-{os.getpid()}-{time.time()}"
    proc = _start(small, out, mark)
    _wait_for_a_result(proc, out)
    os.kill(proc.pid, signal.SIGKILL)  # the main process alone: no chance to clean up
    proc.wait(30)
    assert _gone(mark) == [], "a worker, judge or sandbox outlived its killed grader"


def test_interrupted_run_resumes_without_regrading(graded, tmp_path):
    subs, _, _, rows, _, _ = graded
    small = tmp_path / "subs"
    students = ("honest", "patch_checks", "syntax_error")
    _copy_class(subs, small, students)
    _write(small, "honest", honest(WRITTEN_IN), f"{WRITTEN_IN}.ipynb")  # a written answer
    out = tmp_path / "out"
    proc = subprocess.Popen(
        [*CLI, str(small), "--out", str(out), *FAST, "--jobs", "1"],
        cwd=REPO_ROOT,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    _wait_for_a_result(proc, out)
    mine = f"attn-grade-{proc.pid}-*"  # a job's folder, made as each notebook starts
    deadline = time.monotonic() + 60
    while not list(Path(tempfile.gettempdir()).glob(mine)) and time.monotonic() < deadline:
        assert proc.poll() is None, "the run ended before it could be killed mid-notebook"
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert not (out / "grades.csv").exists()
    left = list(Path(tempfile.gettempdir()).glob(mine))
    assert left, "the killed run's temporary folder is not where the next run looks"
    finished = len(list((out / "work" / "results").glob("*/*.json")))
    resumed = _grade(small, out)
    assert f"({finished} reused" in resumed.stdout
    assert not [p for p in left if p.exists()], "the next run left the killed run's folder"
    want = [r for r in rows if r["student"] in students and r["notebook"] == NB]
    assert [r for r in _rows(out) if r["notebook"] == NB] == want
    # A written answer graded by hand in formgrader shows up in grades.csv on the next run.
    with sqlite3.connect(out / "gradebook.db") as con:
        con.execute(
            "update grade set manual_score = 1.5 where cell_id in (select id from base_cell "
            "where name = 'keys_vs_values') and notebook_id in (select n.id from "
            "submitted_notebook n join submitted_assignment a on n.assignment_id = a.id "
            "where a.student_id = 'honest')"
        )
    graded_before = len(list((out / "work" / "results").glob("*/*.json")))
    rerun = _grade(small, out)
    assert f"({graded_before} reused" in rerun.stdout, "a hand grade made the rerun regrade"
    written = _mine(_rows(out), "honest", WRITTEN_IN)["keys_vs_values"]
    assert (written["points"], written["message"]) == ("1.5", "")


# ----------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "setup, args, message",
    [
        ("missing", [], "does not exist"),
        ("empty", [], "is empty"),
        ("one-student", [], "looks like one student's folder"),
        ("ok", ["--students", "zed"], "unknown student 'zed'; known students: alice"),
        ("junk", [], "no submitted file is a course notebook"),
        ("ok", ["--notebooks", "99_nothing"], "unknown notebook '99_nothing'"),
        ("ok", ["--out-inside"], "must not be inside the submissions folder"),
    ],
)
def test_clear_one_line_errors(tmp_path, setup, args, message):
    subs = tmp_path / "subs"
    if setup != "missing":
        subs.mkdir()
    if setup == "junk":
        (subs / "alice").mkdir()
        (subs / "alice" / "homework.py").write_text("print(1)")
    if setup == "ok":
        (subs / "alice").mkdir()
    if setup == "one-student":
        shutil.copy(RELEASE / "01_soft_lookup" / "01_soft_lookup.ipynb", subs)
    out = tmp_path / "out"
    if "--out-inside" in args:
        args, out = [], subs / "out"
    proc = subprocess.run(
        [*CLI, str(subs), "--out", str(out), *args],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], lines
    assert not out.exists(), "a run that cannot start must not create OUT"
