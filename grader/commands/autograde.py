"""`python -m grader autograde SUBMISSIONS --out OUT`: grade a class, fairly and in parallel.

SUBMISSIONS holds one folder (or zip) per student, named by student id, with the notebooks
under their released names (see ``grader.intake.submissions`` for what else is accepted).
The trusted release is built from ``solutions/`` (``grader.judging.trusted``). For every
student and notebook, a worker process (one per core) runs ``grader.batch.job.grade``, a pure
function from the job (the submission's bytes, the trusted facts, the settings) to a result:

1. reads the submission and rebuilds the notebook from the trusted release, taking only
   answer-cell sources from it (``grader.intake.rebuild``), flagging edits to anything else;
2. scans the answers for suspicious code, to flag for a human (``grader.intake.scan``);
3. runs it in a fresh OS sandbox per kernel (``grader.run.sandbox``, ``grader.run.execute``,
   ``grader.kernel``), with time, memory, process and file limits, surviving crashes cell by
   cell, with the kernel's records and logs streamed out as they happen (``grader.run.stream``);
4. judges every test cell OUTSIDE the kernel, in a bounded process (``grader.judging.judge``).

The main process writes everything in OUT: the nbgrader gradebook (``OUT/gradebook.db``;
course folder ``OUT/nbgrader`` for formgrader, with the autograded notebooks),
``OUT/grades.csv``, ``OUT/totals.csv``, ``OUT/feedback/`` and ``OUT/report/``
(``grader.results.report``). Finished notebooks are kept in ``OUT/work/results`` as they arrive:
SIGTERM or Ctrl-C stop the run cleanly (workers and sandboxes included), and rerunning
resumes, regrading only what is missing; a killed grader takes its workers and kernels with
it (parent-death signals). Results are the same on every rerun into the same OUT (hidden
inputs are seeded from OUT's seed, the student and the notebook: ``grader.seeds``; a new OUT
draws a fresh seed, ``--seed`` chooses one). Settings come from
``nbgrader_config.py`` (``c.GraderSettings``, see ``grader.settings``); options override them.
With ``--scheduler ADDRESS`` the same jobs run on a Dask cluster instead of local worker
processes (``grader.batch.cluster``); everything else, OUT included, stays the same.
"""

import argparse
import json
import logging
import os
import shutil
import signal
import sys
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from time import monotonic
from types import FrameType
from typing import TYPE_CHECKING, NoReturn

from grader import course
from grader.batch import pool
from grader.batch.progress import Progress
from grader.errors import UserError
from grader.intake import roster as class_roster
from grader.printable import printable
from grader.results import out as out_files
from grader.run import sandbox

if TYPE_CHECKING:  # imported where used: the grading code loads when a run starts
    from grader.batch.cluster import RunJobs
    from grader.batch.job import Job
    from grader.intake.submissions import Submission
    from grader.judging.trusted import Trusted
    from grader.results.result import Result
    from grader.settings import GraderSettings

TAKES_SETTINGS = True  # grader.cli parses the settings' options (grader.settings.ALIASES)
log = logging.getLogger(__name__)
Key = tuple[str, str]  # (student, notebook)
Entries = dict[str, list[Path]]  # {student: [folder or zip, ...]} (submissions.student_entries)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("submissions", type=Path, help="folder with one folder or zip per student")
    parser.add_argument("--out", type=Path, required=True, help="output folder")
    parser.add_argument(
        "--notebooks",
        nargs="+",
        metavar="NAME",
        help="grade only these notebooks (default: every course notebook that "
        "at least one student submitted); OUT keeps the others' grades",
    )
    parser.add_argument(
        "--students",
        nargs="+",
        metavar="NAME",
        help="grade only these students (folder or zip names in SUBMISSIONS); OUT keeps "
        "the others' grades",
    )
    parser.add_argument(
        "--fresh",
        action="store_true",
        help="regrade everything instead of resuming from OUT/work/results",
    )
    parser.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="grade on the Dask cluster whose scheduler is at ADDRESS, e.g. "
        "tcp://head:8786 (default: worker processes on this machine)",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.add_argument(
        "--roster",
        type=Path,
        help="CSV: student,name,id,... (as export's): its students go into the gradebook, "
        "so formgrader and every output list those who handed in nothing",
    )


def _settings(args: argparse.Namespace) -> "GraderSettings":
    settings: GraderSettings = args.settings  # checked by traitlets (grader.settings)
    if settings.sandbox:
        try:
            sandbox.check()
        except sandbox.Unavailable as err:
            raise UserError(str(err)) from None
    return settings


def _check_paths(args: argparse.Namespace) -> tuple[Path, Path]:
    subs, out = args.submissions.resolve(), args.out.resolve()
    if out == subs or subs in out.parents:
        raise UserError(f"--out {args.out} must not be inside the submissions folder")
    if out.exists() and not out.is_dir():
        raise UserError(f"--out {args.out} exists and is not a folder")
    if out in subs.parents:
        raise UserError("the submissions folder must not be inside --out")
    existing = next(p for p in (out, *out.parents) if p.exists())
    if not os.access(existing, os.W_OK | os.X_OK):
        raise UserError(f"--out {args.out}: {existing} is not writable by you")
    return subs, out


def _answer_ids() -> dict[str, set[str]]:
    return {a: {e.grade_id for e in course.exercises(a)} for a in course.assignments()}


def _unknown(kind: str, asked: list[str], known: list[str]) -> None:
    unknown = [n for n in asked if n not in known]
    if unknown:
        shown = ", ".join(known[:20]) + (f" and {len(known) - 20} more" if len(known) > 20 else "")
        raise UserError(f"unknown {kind} {unknown[0]!r}; known {kind}s: {shown}")


def _choose_students(args: argparse.Namespace, entries: Entries) -> Entries:
    if not args.students:
        return entries
    _unknown("student", args.students, sorted(entries))
    return {name: entries[name] for name in args.students}


def _choose(args: argparse.Namespace, students: list["Submission"]) -> list[str]:
    known = course.assignments()
    if args.notebooks:
        names = [n.removesuffix(".ipynb") for n in args.notebooks]
        names = [course.FORMER_NAMES.get(n, n) for n in names]
        _unknown("notebook", names, known)
        return sorted(set(names), key=known.index)
    chosen = [a for a in known if any(a in s.notebooks for s in students)]
    if not chosen:
        seen = sorted({x for s in students for x in s.extra})[:3]
        refused = [f"; {s.student}: {s.refused}" for s in students if s.refused]
        raise UserError(
            "no submitted file is a course notebook (expected names like "
            f"{known[0]}.ipynb; found {', '.join(seen) or 'no files'})" + "".join(refused[:1])
        )
    return chosen


def _with_graded(out: Path, assignments: list[str]) -> list[str]:
    """``assignments`` and every notebook OUT already holds results of, in course order."""
    graded = {p.stem for p in (out / out_files.RESULTS).glob("*/*.json")}
    return [a for a in course.assignments() if a in graded or a in assignments]


def _load_result(path: Path) -> "Result | None":
    """The result kept at ``path``, or None (none, or unreadable: it is graded again)."""
    from grader.results.result import Result

    try:
        return Result.from_json(json.loads(path.read_text()))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _jobs(
    students: list["Submission"],
    assignments: list[str],
    trusted: Mapping[str, "Trusted"],
    settings: "GraderSettings",
) -> list["Job"]:
    from grader.batch.job import Job

    jobs: list[Job] = []
    snapshot = settings.snapshot()  # frozen: every job shares it
    log.debug("settings: %s", snapshot)
    for sub in students:
        for a in assignments:
            notes = list(sub.notes.get(a, []))
            if sub.extra:
                notes.append(f"ignored extra files: {', '.join(sorted(sub.extra)[:8])}")
            handed = sub.notebooks.get(a)
            jobs.append(
                Job(
                    sub.student,
                    a,
                    handed.data if handed else None,
                    trusted[a],
                    snapshot,
                    tuple(notes),
                    handed.name if handed else "",
                    sub.refused,
                )
            )
    return jobs


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _connect(args: argparse.Namespace, settings: "GraderSettings") -> tuple["RunJobs", str]:
    """(how to run the jobs, where): the local pool, or the Dask cluster of --scheduler,
    connected before anything is written (an unreachable scheduler is one line)."""
    if not args.scheduler:
        return pool.run_pool, f"with {settings.jobs} workers"
    try:
        from grader.batch import cluster
    except ImportError as err:  # dask is in the instructor's extra, not the learner's set
        raise UserError(
            f"--scheduler needs Dask ({err.name} is missing): pip install -e '.[grader]'"
        ) from None
    return cluster.connect(args.scheduler), f"on the cluster {args.scheduler}"


def _collect(
    args: argparse.Namespace, entries: Entries, out: Path, settings: "GraderSettings"
) -> tuple[list["Submission"], list[str]]:
    """(students, assignments to grade); a run that cannot start leaves no OUT behind."""
    from grader.intake import submissions

    created = not out.exists()
    out.mkdir(parents=True, exist_ok=True)
    if settings.private_outputs:  # before a submission is unpacked or graded into it
        os.chmod(out, 0o700)
    try:
        students: list[Submission] = submissions.collect(
            entries, course.assignments(), _answer_ids(), out / "work", settings
        )
        assignments = _choose(args, students)
        if args.students and not args.notebooks:  # their record covers the class's notebooks
            assignments = _with_graded(out, assignments)
    except UserError:
        if created:
            shutil.rmtree(out)
        raise
    return students, assignments


def _reusable(jobs: list["Job"], out: Path, fresh: bool) -> tuple[dict[Key, "Result"], list["Job"]]:
    """({(student, notebook): result} an earlier run made with the same key, jobs to run)."""
    from grader.batch.job import job_key

    results: dict[Key, Result] = {}
    todo: list[Job] = []
    for job in jobs:
        previous = (
            None if fresh else _load_result(out_files.result_path(out, job.student, job.notebook))
        )
        if previous and previous.key == job_key(job):
            results[(job.student, job.notebook)] = previous
        else:
            todo.append(job)
    return results, todo


def _writer(out: Path, results: dict[Key, "Result"], keep_hand_grades: bool) -> pool.OnResult:
    """on_result(job, result): the only writer of OUT while the workers run."""
    from grader.results import gradebook, handgrades

    def on_result(job: "Job", result: "Result") -> None:
        if result.autograded is not None:
            graded = out_files.autograded_path(out, job.student, job.notebook)
            if graded.is_file():  # hand grades judged the answers graded before: still these?
                changed = handgrades.changed_answers(graded.read_text(), result.autograded)
                key = (job.student, job.notebook)
                handgrades.answers_changed(out, key, changed, keep_hand_grades)
            out_files.write_text(graded, result.autograded)
            result = replace(result, autograded=None)
        results[(job.student, job.notebook)] = result
        out_files.write_text(
            out_files.result_path(out, job.student, job.notebook),
            json.dumps(result.to_json(), indent=1, sort_keys=True),
        )
        gradebook.save(out, result)  # while the workers grade on, not after them

    return on_result


def _grade(
    todo: list["Job"],
    run_jobs: "RunJobs",
    settings: "GraderSettings",
    on_result: pool.OnResult,
    progress: Progress,
) -> bool:
    """Grade ``todo``, longest first; False if `kill` or Ctrl-C stopped it (finished work
    stays written)."""

    def stop(signum: int, frame: FrameType | None) -> NoReturn:
        raise KeyboardInterrupt

    from grader.batch.job import likely_cost

    previous_term = signal.signal(signal.SIGTERM, stop)
    todo.sort(key=likely_cost, reverse=True)  # stable: class order among equals
    try:
        with pool.workers_scratch():
            run_jobs(todo, settings.jobs, on_result, progress)
    except KeyboardInterrupt:
        return False
    finally:
        signal.signal(signal.SIGTERM, previous_term)
        progress.close()
    return True


def _summary(out: Path, results: dict[Key, "Result"], graded: str, sandboxed: bool) -> None:
    """What the run did (``graded``: how many, how long, where), wrote and flagged, and
    the hand grades a changed answer dropped or kept."""
    from grader.results import handgrades

    ordered = [results[k] for k in sorted(results)]
    times = [r.timings["total"] for r in ordered if r.timings.get("execute")]
    flagged = sorted({r.student for r in ordered if r.flags})
    print(graded + (f"; {sum(times) / len(times):.1f} s per notebook" if times else ""))
    if not sandboxed:
        print("WITHOUT the OS sandbox (--no-sandbox): trusted submissions only")
    index = out_files.REPORT.path / "index.html"
    print(
        f"wrote {out / out_files.GRADES.path}, {out_files.TOTALS.path}, "
        f"{out_files.FEEDBACK.path}/, {index}"
    )
    if flagged:
        shown = printable(", ".join(flagged))  # student ids are names students chose
        print(f"flagged for review: {shown} (reasons in report/index.html)")
    for line in handgrades.pending_notes(handgrades.read(out)):
        print(line)


def run(args: argparse.Namespace) -> int:
    from grader.batch import progress as shown_progress
    from grader.batch.job import grade
    from grader.commands import totals
    from grader.intake import submissions
    from grader.intake.collect import lms_late
    from grader.judging import trusted
    from grader.results import deadlines, gradebook

    start = monotonic()
    settings = _settings(args)
    subs, out = _check_paths(args)
    roster = class_roster.read(args.roster) if args.roster else {}  # before anything runs
    if args.notebooks:
        _choose(args, [])  # unknown names fail before anything is written
    every_student, ignored = submissions.student_entries(subs)
    entries = _choose_students(args, every_student)
    run_jobs, workers = _connect(args, settings)
    students, assignments = _collect(args, entries, out, settings)
    settings.seed = out_files.settle_seed(out, settings.seed)  # before any result is made with it
    models = trusted.models(assignments, settings.release_cache)
    gradebook.prepare(out, {a: m.release for a, m in models.items()}, settings.release_cache)
    class_roster.import_into_gradebook(out, roster)
    jobs = _jobs(students, assignments, models, settings)
    marks = lms_late(subs)  # Canvas's LATE_, as `grader collect` kept it beside SUBMISSIONS
    deadlines.record_submissions(out, students, entries, assignments, marks)

    results, todo = _reusable(jobs, out, args.fresh)
    reused, kept = len(results), set(results)
    log.info("%d notebooks reused from an earlier run, %d to grade", reused, len(todo))
    on_result = _writer(out, results, settings.keep_changed_hand_grades)
    for job in [j for j in todo if j.submission is None]:  # nothing to run: no worker needed
        todo.remove(job)
        on_result(job, grade(job))
    progress = shown_progress.shown(len(jobs), len(results), args.quiet)
    if not _grade(todo, run_jobs, settings, on_result, progress):
        print(
            f"interrupted: {len(results)} graded notebooks are kept in {out / out_files.RESULTS}; "
            "run the same command again to finish",
            file=sys.stderr,
        )
        return 130

    for key in sorted(kept):  # an earlier run may have stopped before its gradebook was done
        gradebook.save(out, results[key])
    # OUT's outputs cover the whole class: this run's results and those an earlier run kept
    # for students or notebooks not chosen now (--students, --notebooks).
    totals.write_run(out, sorted(every_student), ignored)
    totals.rewrite(out, settings)
    graded = (
        f"graded {_count(len(jobs), 'notebook')} of {_count(len(students), 'student')} in "
        f"{monotonic() - start:.1f} s {workers} ({reused} reused from an earlier run)"
    )
    _summary(out, results, graded, settings.sandbox)
    for entry in ignored:  # every entry of SUBMISSIONS is graded or said here (and in the report)
        print(printable(f"ignored in {subs}: {entry}"))
    return 0
