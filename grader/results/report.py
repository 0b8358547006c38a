"""What the instructor and the learners get out of a grading run.

- ``grades.csv``: student, notebook, exercise, points, max_points, message, comment (one
  row per exercise per student; ``comment``: what the instructor typed for that answer in
  formgrader). Written answers (graded by hand): the score entered in formgrader if there
  is one, else empty points and "graded by hand" (pending: never counted as 0); 0 with "No
  answer written." when the answer cell was left as released; 0 when the notebook was not
  submitted. A late notebook under a penalty has one more row, ``late_penalty``, with
  negative points (``grader.results.deadlines``).
- ``totals.csv``: per student, points per notebook, the total, the maximum, and the points
  still waiting for hand grading.
- ``feedback/<student>.html``: points and the learner-facing message per exercise. It is built
  from the results only, so no hidden test source can appear in it.
- ``report/``: ``index.html`` (pass rates per exercise, most common failure messages, score
  histogram, flagged submissions with reasons, timings), ``exercises.csv``, ``flags.csv``,
  ``histogram.png``.
"""

import html
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import TypedDict

from grader.results import annotated, csvfile, handgrades
from grader.results import out as out_files
from grader.results.annotated import GradeRow
from grader.results.deadlines import LATE_ROW, Lateness, describe, disagrees
from grader.results.result import GRADED, NO_RESULT, Result

GRADES_COLUMNS = [
    *("student", "notebook", "exercise", "points", "max_points", "message", "comment"),
    "by_hand",  # what formgrader set (grader.results.handgrades); the contract's columns first
]
NOT_SUBMITTED = "Notebook not submitted."  # grader.batch.job's message for a missing notebook
TotalsRow = dict[str, str]  # totals.csv's row: student, one column per notebook, the sums


class FeedbackExtra(TypedDict, total=False):
    """What a notebook's feedback says beside its grade rows (``grader.commands.totals``
    gives every key but ``annotated``, which comes once the annotated page is written)."""

    handed: str  # when it was handed in, with a due date ("" without one)
    late_hours: float | None  # None without a due date or a submission
    late: Lateness | None
    comments: list[str]  # formgrader comments on no exercise
    annotated: bool  # whether feedback/<student>/<notebook>.html was written


class ExerciseStat(TypedDict):
    """One row of report/exercises.csv."""

    notebook: str
    exercise: str
    max_points: str
    students: int
    scored: int
    pending: int
    mean_points: str
    full_marks_rate: str
    top_messages: str


class FlagRow(TypedDict):
    """One row of report/flags.csv."""

    student: str
    notebook: str
    reason: str


def _num(value: float | str | None) -> str:
    return "" if value == "" or value is None else f"{float(value):g}"


def _one_line(text: object) -> str:
    return " ".join(str(text).split())


def _paragraphs(text: str) -> str:
    """A comment with its paragraphs and line breaks kept, its ends and line ends trimmed."""
    return "\n".join(line.rstrip() for line in text.replace("\r\n", "\n").strip().split("\n"))


def rows(
    results: list[Result], hand: handgrades.HandGrades, late: Mapping[handgrades.Key, Lateness]
) -> list[GradeRow]:
    """grades.csv rows, sorted; ``hand``: what formgrader holds (scores, overrides, extra
    credit, comments), ``late[(student, notebook)]`` its lateness when late under a penalty
    (``grader.results.deadlines.lateness``)."""
    out: list[GradeRow] = []
    for res in sorted(results, key=lambda r: (r.student, r.notebook)):
        key = (res.student, res.notebook)
        notes = hand.comments.get(key, {})
        mine: list[GradeRow] = []
        for row in res.rows:
            points, message, by_hand = handgrades.exercise_points(res, row, hand)
            mine.append(
                {
                    "student": res.student,
                    "notebook": res.notebook,
                    "exercise": row.exercise,
                    "points": _num(points),
                    "max_points": _num(row.max_points),
                    "message": _one_line(message),
                    "comment": _paragraphs(notes.get(row.exercise, "")),
                    "by_hand": by_hand,
                }
            )
        if key in late:
            mine.append(_late_row(mine, late[key]))
        out += mine
    return out


def _late_row(mine: list[GradeRow], late: Lateness) -> GradeRow:
    """The penalty of a late notebook: its share of the maximum, never more than the points
    scored so far (a notebook never goes below 0)."""
    scored = sum(float(r["points"]) for r in mine if r["points"] != "")
    maximum = sum(float(r["max_points"]) for r in mine)
    penalty = min(late["fraction"] * maximum, scored)
    return {
        **mine[0],
        "exercise": LATE_ROW,
        "points": _num(-penalty) if penalty else "0",
        "max_points": "0",
        "message": describe(late),
        "comment": "",
        "by_hand": "",
    }


def write_grades(out: Path, grade_rows: list[GradeRow]) -> None:
    csvfile.write(out / out_files.GRADES.path, GRADES_COLUMNS, grade_rows)


def totals(grade_rows: list[GradeRow], notebooks: list[str]) -> list[TotalsRow]:
    by_student: dict[str, dict[str, float]] = {}
    for row in grade_rows:
        entry = by_student.setdefault(
            row["student"],
            {
                **{n: 0.0 for n in notebooks},
                "total": 0.0,
                "max_total": 0.0,
                "pending_hand_grading": 0.0,
            },
        )
        entry["max_total"] += float(row["max_points"])
        if row["points"] == "":
            entry["pending_hand_grading"] += float(row["max_points"])
        else:
            entry[row["notebook"]] += float(row["points"])
            entry["total"] += float(row["points"])
    return [
        {"student": student, **{k: _num(v) for k, v in e.items()}}
        for student, e in sorted(by_student.items())
    ]


def write_totals(out: Path, total_rows: list[TotalsRow], notebooks: list[str]) -> None:
    cols = ["student", *notebooks, "total", "max_total", "pending_hand_grading"]
    csvfile.write(out / out_files.TOTALS.path, cols, total_rows)


_STYLE = """<style>body{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;
color:#222}table{border-collapse:collapse;width:100%;margin:1rem 0}td,th{border:1px solid #ccc;
padding:.3rem .5rem;text-align:left;vertical-align:top}th{background:#f3f3f3}.full{color:#176b2c}
.lost{color:#a1221b}.muted{color:#666}</style>"""


_message_html = annotated.message_html  # escaped, `code` spans as <code>


def _page(title: str, body: str) -> str:
    return (
        f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>"
        f"{html.escape(title)}</title>{_STYLE}</head><body>{body}</body></html>\n"
    )


def write_feedback(
    out: Path,
    grade_rows: list[GradeRow],
    results: list[Result],
    extra: Mapping[handgrades.Key, FeedbackExtra],
) -> None:
    """``extra[(student, notebook)]``: {"handed": a line on when it was handed in (with a
    due date), "comments": formgrader comments on no exercise}."""
    folder = out / out_files.FEEDBACK.path
    folder.mkdir(exist_ok=True)
    notes = {(r.student, r.notebook): list(r.notes) for r in results}
    left_out = {(r.student, r.notebook): r.demo_cells_left_out or 0 for r in results}
    students = sorted({r["student"] for r in grade_rows})
    for student in students:
        mine = [r for r in grade_rows if r["student"] == student]
        body = [f"<h1>Feedback for {html.escape(student)}</h1>", _headline(mine)]
        for notebook in sorted({r["notebook"] for r in mine}):
            key = (student, notebook)
            body.append(f"<h2>{html.escape(notebook)}</h2>")
            if handed := extra.get(key, {}).get("handed"):
                body.append(f"<p>{html.escape(handed)}</p>")
            for note in notes.get(key, []):
                body.append(f"<p class='muted'>Note: {_message_html(note)}</p>")
            if n := left_out.get(key):
                body.append(
                    f"<p class='muted'>{n} demo cells were not re-run when grading: they only "
                    "teach, and no check depends on them.</p>"
                )
            for text in extra.get(key, {}).get("comments", []):
                body.append(
                    f"<div><b>Comment from your instructor:</b>{annotated.paragraphs(text)}</div>"
                )
            if extra.get(key, {}).get("annotated"):
                body.append(
                    f"<p><a href='{annotated.link(student, notebook)}'>Your notebook, with "
                    "each check's message under its cell</a></p>"
                )
            body.append("<table><tr><th>Exercise</th><th>Points</th><th>What to fix</th></tr>")
            body += [_feedback_row(r) for r in mine if r["notebook"] == notebook]
            body.append("</table>")
        feedback_path(out, student).write_text(_page(f"Feedback: {student}", "".join(body)))


def _headline(mine: list[GradeRow]) -> str:
    got = sum(float(r["points"]) for r in mine if r["points"] != "")
    waiting = sum(float(r["max_points"]) for r in mine if r["points"] == "")
    pending = f" ({waiting:g} more pending: written answers not graded yet)" if waiting else ""
    return (
        f"<p>Autograded and hand-graded points so far: <b>{got:g}</b> of "
        f"{sum(float(r['max_points']) for r in mine):g}{pending}.</p>"
    )


def _feedback_row(r: GradeRow) -> str:
    if r["exercise"] == LATE_ROW:
        return (
            f"<tr><td>Late penalty</td><td class='lost'>{html.escape(r['points'])}</td>"
            f"<td>{html.escape(r['message'])}</td></tr>"
        )
    pts = "pending" if r["points"] == "" else r["points"]
    cls = "full" if full_marks(r) else "lost"
    comment = (
        f"<div><b>Comment from your instructor:</b>{annotated.paragraphs(r['comment'])}</div>"
        if r["comment"]
        else ""
    )
    by_hand = (
        f"<p class='muted'>Points by your instructor: {html.escape(r['by_hand'])}</p>"
        if r.get("by_hand")
        else ""
    )
    return (
        f"<tr><td><code>{html.escape(r['exercise'])}</code></td>"
        f"<td class='{cls}'>{html.escape(pts)} / {r['max_points']}</td>"
        f"<td>{_message_html(r['message'])}{by_hand}{comment}</td></tr>"
    )


def full_marks(r: GradeRow) -> bool:
    """Whether a grades.csv row has every point (extra credit may put it above)."""
    return r["points"] != "" and float(r["points"]) >= float(r["max_points"])


def feedback_path(out: Path, student: str) -> Path:
    """``OUT/feedback/<student>.html``, ``<student>`` one name per id on any disk, a
    lower-case id's own (``annotated.safe_name``; the page names its student)."""
    return out / out_files.FEEDBACK.path / f"{annotated.safe_name(student)}.html"


def exercise_stats(grade_rows: list[GradeRow]) -> list[ExerciseStat]:
    """Per exercise, in course order (notebook, then the exercise's place in it): how the class
    did, and how many written answers still wait for hand grading (``pending``)."""
    stats: list[ExerciseStat] = []
    seen = dict.fromkeys(  # notebook order; a late penalty is no exercise
        (r["notebook"], r["exercise"]) for r in grade_rows if r["exercise"] != LATE_ROW
    )
    for notebook, exercise in sorted(seen, key=lambda key: key[0]):
        mine = [r for r in grade_rows if (r["notebook"], r["exercise"]) == (notebook, exercise)]
        scored = [r for r in mine if r["points"] != ""]
        full = [r for r in scored if full_marks(r)]
        messages = Counter(r["message"] for r in scored if r["message"])
        stats.append(
            {
                "notebook": notebook,
                "exercise": exercise,
                "max_points": mine[0]["max_points"],
                "students": len(mine),
                "scored": len(scored),
                "pending": len(mine) - len(scored),
                "mean_points": f"{sum(float(r['points']) for r in scored) / len(scored):.2f}"
                if scored
                else "",
                "full_marks_rate": f"{len(full) / len(scored):.2f}" if scored else "",
                "top_messages": " | ".join(f"{n}× {m}" for m, n in messages.most_common(3)),
            }
        )
    return stats


def _mean_text(stat: ExerciseStat) -> str:
    """The mean over the scored answers; written answers still to grade show as pending."""
    if not stat["pending"]:
        return stat["mean_points"]
    pending = f"{stat['pending']} of {stat['students']} pending hand grading"
    return f"{stat['mean_points']} ({pending})" if stat["scored"] else pending


def _histogram(path: Path, total_rows: list[TotalsRow]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    scores = [float(r["total"]) for r in total_rows]
    top = max([float(r["max_total"]) for r in total_rows] + [1.0])
    fig, ax = plt.subplots(figsize=(6, 3.2))
    ax.hist(scores, bins=min(20, max(5, len(scores))), range=(0, top), color="#3b6ea8")
    ax.set_xlabel("total points (autograded + hand-graded so far)")
    ax.set_ylabel("students")
    ax.set_title(f"Scores of {len(scores)} students (max {top:g})")
    fig.tight_layout()
    fig.savefig(path, dpi=100, metadata={"Software": None})
    plt.close(fig)


NO_SANDBOX = "graded WITHOUT the OS sandbox (--no-sandbox): trusted submissions only"


def submitted(result: Result) -> bool:
    """Whether the student handed this notebook in (graded or not: unreadable, refused)."""
    if result.status in (GRADED, NO_RESULT):  # no result: not graded into OUT yet
        return result.status == GRADED
    return any(row.message != NOT_SUBMITTED for row in result.rows)


def count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _late_section(
    grade_rows: list[GradeRow], extra: Mapping[handgrades.Key, FeedbackExtra]
) -> list[str]:
    """Every late notebook once, under any late policy (``none`` only states it), and every
    one the LMS marked late, with the LMS's verdict beside it."""
    late = {k: lt for k, e in sorted(extra.items())
            if (lt := e.get("late")) and (lt["hours"] or lt["lms_late"])}  # fmt: skip
    if not late:
        return []
    taken = {(r["student"], r["notebook"]): r["points"] for r in grade_rows
             if r["exercise"] == LATE_ROW}  # fmt: skip
    body = ["<h2>Late work</h2><table><tr><th>Student</th><th>Notebook</th><th>Penalty</th>"
            "<th>LMS</th><th>When</th></tr>"]  # fmt: skip
    for (student, notebook), lateness in late.items():
        lms = {None: "", True: "late", False: "on time"}[lateness["lms_late"]]
        lms += " (disagrees)" if disagrees(lateness) else ""
        cells = (student, notebook, taken.get((student, notebook), "0"), lms, describe(lateness))
        body.append("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells) + "</tr>")
    return [*body, "</table>"]


def _by_hand_section(grade_rows: list[GradeRow]) -> list[str]:
    """The points formgrader changed beyond grading written answers: overrides, extra credit."""
    changed = [r for r in grade_rows if r.get("by_hand", "") not in ("", handgrades.GRADED)]
    if not changed:
        return []
    body = ["<h2>Points set by hand</h2><table><tr><th>Student</th><th>Notebook</th>"
            "<th>Exercise</th><th>Points</th><th>How</th></tr>"]  # fmt: skip
    for r in changed:
        cells = (r["student"], r["notebook"], r["exercise"], r["points"], r["by_hand"])
        body.append("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells) + "</tr>")
    return [*body, "</table>"]


def _changed_section(grade_rows: list[GradeRow]) -> list[str]:
    """The answers graded by hand before a resubmission changed them (handgrades)."""
    changed = [r for r in grade_rows if handgrades.EARLIER in r["message"]]
    if not changed:
        return []
    body = ["<h2>Hand grades of an earlier submission</h2><table><tr><th>Student</th>"
            "<th>Notebook</th><th>Exercise</th><th>Points</th><th>Note</th></tr>"]  # fmt: skip
    for r in changed:
        note = r["message"][r["message"].index(handgrades.EARLIER) :]
        cells = (r["student"], r["notebook"], r["exercise"], r["points"], note)
        body.append("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells) + "</tr>")
    return [*body, "</table>"]


def _handed_nothing(results: list[Result]) -> str:
    """The students with no notebook handed in (a roster's, or an empty folder)."""
    students = sorted({r.student for r in results} - {r.student for r in results if submitted(r)})
    return f"<p>Handed in nothing: {html.escape(', '.join(students))}.</p>" if students else ""


def _flag_rows(results: list[Result], sandboxed: bool) -> list[FlagRow]:
    """flags.csv's rows: the run's own flags first, then each result's."""
    flag_rows: list[FlagRow] = [
        {"student": r.student, "notebook": r.notebook, "reason": f}
        for r in sorted(results, key=lambda r: (r.student, r.notebook))
        for f in r.flags
    ]
    if not sandboxed:
        flag_rows.insert(0, {"student": "(all)", "notebook": "(all)", "reason": NO_SANDBOX})
    if any(r.limits == "rlimits" for r in results):  # no cgroup could be made
        reason = "sandbox limits per process only (rlimits): no cgroup allowed on this host"
        flag_rows.insert(0, {"student": "(all)", "notebook": "(all)", "reason": reason})
    return flag_rows


def _exercises_table(stats: list[ExerciseStat]) -> list[str]:
    body = [
        "<h2>Exercises</h2><table><tr><th>Notebook</th><th>Exercise</th>"
        "<th>Max</th><th>Mean</th><th>Full marks</th><th>Most common failures</th></tr>",
    ]
    for s in stats:
        cells = [s["notebook"], s["exercise"], s["max_points"], _mean_text(s)]
        cells.append(s["full_marks_rate"] if s["scored"] else "")
        body.append(
            "<tr>"
            + "".join(f"<td>{html.escape(str(c))}</td>" for c in cells)
            + f"<td>{_message_html(s['top_messages'])}</td></tr>"
        )
    body.append("</table>")
    return body


def _flagged_section(flag_rows: list[FlagRow]) -> list[str]:
    body = ["<h2>Flagged submissions (for a human to review)</h2>"]
    flagged = sorted({(f["student"], f["notebook"]) for f in flag_rows if f["student"] != "(all)"})
    if not flagged:
        body.append("<p>None.</p>")
    for student, notebook in flagged:
        reasons = [
            f["reason"] for f in flag_rows if (f["student"], f["notebook"]) == (student, notebook)
        ]
        body.append(
            f"<h3>{html.escape(student)} · {html.escape(notebook)}</h3><ul>"
            + "".join(f"<li>{html.escape(x)}</li>" for x in reasons)
            + "</ul>"
        )
    return body


def _notes_section(results: list[Result], ignored: list[str]) -> list[str]:
    notes = [(r.student, r.notebook, n) for r in results for n in r.notes]
    if not notes and not ignored:
        return []
    body = ["<h2>Intake notes</h2><ul>"]
    body += [
        f"<li>{html.escape(s)} · {html.escape(n)}: {html.escape(x)}</li>"
        for s, n, x in sorted(set(notes))
    ]
    body += [f"<li>ignored in the submissions folder: {html.escape(x)}</li>" for x in ignored]
    body.append("</ul>")
    return body


def _timing_section(results: list[Result], sandboxed: bool) -> list[str]:
    timings = [r.timings["total"] for r in results if r.timings.get("total")]
    if not timings:
        return []
    return [
        f"<h2>Timing</h2><p>Per notebook: mean {sum(timings) / len(timings):.1f} s, "
        f"max {max(timings):.1f} s ({'sandboxed' if sandboxed else 'unsandboxed'} kernel, "
        "wall clock).</p>"
    ]


def write_class_report(
    out: Path,
    grade_rows: list[GradeRow],
    total_rows: list[TotalsRow],
    results: list[Result],
    ignored: list[str],
    extra: Mapping[handgrades.Key, FeedbackExtra],
) -> None:
    """``report/``; results graded without the sandbox say so in its header and flags.csv."""
    sandboxed = all(r.sandboxed for r in results)
    folder = out / out_files.REPORT.path
    folder.mkdir(exist_ok=True)
    stats = exercise_stats(grade_rows)
    csvfile.write(folder / "exercises.csv", list(stats[0]) if stats else ["notebook"], stats)
    flag_rows = _flag_rows(results, sandboxed)
    csvfile.write(folder / "flags.csv", ["student", "notebook", "reason"], flag_rows)
    _histogram(folder / "histogram.png", total_rows)
    body = [
        "<h1>Class report</h1>",
        "" if sandboxed else f"<p class='lost'><b>This run was {NO_SANDBOX}.</b></p>",
        f"<p>{count(len(total_rows), 'student')}: "
        f"{count(sum(map(submitted, results)), 'notebook')} submitted, "
        f"{sum(r.status == GRADED for r in results)} graded. "
        f"Files: <a href='../grades.csv'>grades.csv</a>, <a href='../totals.csv'>"
        "totals.csv</a>, <a href='exercises.csv'>exercises.csv</a>, "
        "<a href='flags.csv'>flags.csv</a>.</p>",
        _handed_nothing(results),
        "<img src='histogram.png' alt='score histogram'>",
        *_exercises_table(stats),
        *_late_section(grade_rows, extra),
        *_by_hand_section(grade_rows),
        *_changed_section(grade_rows),
        *_flagged_section(flag_rows),
        *_notes_section(results, ignored),
        *_timing_section(results, sandboxed),
    ]
    (folder / "index.html").write_text(_page("Class report", "".join(body)))
