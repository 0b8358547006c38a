"""`python -m grader autograde SUBMISSIONS --out OUT`: grade a class, fairly and in parallel.

SUBMISSIONS holds one folder (or zip) per student, named by student id, with the notebooks
under their released names (see ``grader.intake`` for what else is accepted). For every
student and notebook, a worker process (one per core):

1. rebuilds the notebook from the trusted release, taking only answer-cell sources from the
   submission (``grader.rebuild``) and flags edits to anything else;
2. scans the answers for suspicious code, to flag for a human (``grader.scan``);
3. runs it in a sandboxed kernel in a folder holding only that submission, with time and
   memory limits, surviving crashes cell by cell (``grader.execute``, ``grader.sandbox_kernel``);
4. judges every test cell OUTSIDE the kernel from the recorded results (``grader.judge``).

The main process is the only writer of the nbgrader gradebook (``OUT/gradebook.db``; course
folder ``OUT/nbgrader`` for formgrader) and writes ``OUT/grades.csv``, ``OUT/totals.csv``,
``OUT/feedback/`` and ``OUT/report/`` (``grader.report``). Finished notebooks are kept in
``OUT/work/results``: rerunning after an interruption regrades only what is missing, and the
results are the same on every rerun (hidden inputs are seeded from the student and notebook;
``--seed`` or ``ATTN_GRADER_SEED`` changes them for everyone). Nothing outside OUT changes.
"""

import json
import os
import signal
import sys
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from multiprocessing import get_context
from pathlib import Path
from time import monotonic

from grader import course, report
from grader.cli import UserError


def add_arguments(parser):
    parser.add_argument("submissions", type=Path, help="folder with one folder or zip per student")
    parser.add_argument("--out", type=Path, required=True, help="output folder")
    parser.add_argument(
        "--notebooks",
        nargs="+",
        metavar="NAME",
        help="grade only these notebooks (default: every course notebook that "
        "at least one student submitted)",
    )
    parser.add_argument(
        "--jobs",
        type=int,
        default=os.cpu_count() or 1,
        help="parallel workers (default: all cores)",
    )
    parser.add_argument("--cell-timeout", type=int, default=30, help="seconds per cell")
    parser.add_argument("--notebook-timeout", type=int, default=300, help="seconds per notebook")
    parser.add_argument("--memory-mb", type=int, default=3072, help="memory cap per kernel")
    parser.add_argument(
        "--seed",
        type=int,
        default=int(os.environ.get("ATTN_GRADER_SEED", 0)),
        help="seed of the hidden inputs (default: ATTN_GRADER_SEED or 0)",
    )
    parser.add_argument(
        "--fresh",
        action="store_true",
        help="regrade everything instead of resuming from OUT/work/results",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def _check_paths(args) -> tuple[Path, Path]:
    subs, out = args.submissions.resolve(), args.out.resolve()
    if out == subs or subs in out.parents:
        raise UserError(f"--out {args.out} must not be inside the submissions folder")
    if out.exists() and not out.is_dir():
        raise UserError(f"--out {args.out} exists and is not a folder")
    if out in subs.parents:
        raise UserError("the submissions folder must not be inside --out")
    for name in (args.cell_timeout, args.notebook_timeout, args.jobs):
        if name < 1:
            raise UserError("--jobs, --cell-timeout and --notebook-timeout must be at least 1")
    return subs, out


def _answer_ids() -> dict:
    return {a: {e.grade_id for e in course.exercises(a)} for a in course.assignments()}


def _check_release(assignments: list[str]) -> None:
    import nbformat

    for a in assignments:
        path = course.release_path(a)
        if not path.is_file():
            raise UserError(f"{path} is missing: run `make release` first")
        ids = {
            c.metadata.get("nbgrader", {}).get("grade_id")
            for c in nbformat.read(path, as_version=4).cells
        }
        wanted = {e.grade_id for e in course.exercises(a)}
        wanted |= {t for e in course.exercises(a) for t in e.test_ids}
        if not wanted <= ids:
            raise UserError(
                f"{path} is out of date with solutions/ (missing "
                f"{sorted(wanted - ids)[0]}): run `make release`"
            )


def _choose(args, students) -> list[str]:
    known = course.assignments()
    if args.notebooks:
        names = [n.removesuffix(".ipynb") for n in args.notebooks]
        unknown = [n for n in names if n not in known]
        if unknown:
            raise UserError(f"unknown notebook {unknown[0]!r}; the course has: {', '.join(known)}")
        return sorted(set(names), key=known.index)
    chosen = [a for a in known if any(a in s.notebooks for s in students)]
    if not chosen:
        seen = sorted({x for s in students for x in s.extra})[:3]
        raise UserError(
            "no submitted file is a course notebook (expected names like "
            f"{known[0]}.ipynb; found {', '.join(seen) or 'no files'})"
        )
    return chosen


def _write_json(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True))
    os.replace(tmp, path)


def _load_json(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _run_pool(todo, jobs: int, on_result, progress) -> None:
    """Grade ``todo`` in worker processes; a crashed pool is rebuilt and the rest retried."""
    from grader.job import grade, missing_result

    attempts = {id(j): 0 for j in todo}
    while todo:
        remaining = []
        with ProcessPoolExecutor(
            max_workers=min(jobs, len(todo)), mp_context=get_context("spawn")
        ) as pool:
            futures = {pool.submit(grade, job): job for job in todo}
            try:
                for future in as_completed(futures):
                    job = futures[future]
                    try:
                        result = future.result()
                    except BrokenProcessPool:
                        attempts[id(job)] += 1
                        remaining.append(job)
                        continue
                    on_result(job, result)
                    progress.update(1)
            except KeyboardInterrupt:
                pool.shutdown(wait=False, cancel_futures=True)
                for process in list(getattr(pool, "_processes", {}).values()):
                    process.terminate()  # their kernels exit with them (parent polling)
                raise
        todo = []
        for job in remaining:
            if attempts[id(job)] >= 3:
                on_result(
                    job,
                    missing_result(
                        job,
                        "Not graded: the grader crashed on this "
                        "notebook; your instructor will look at it.",
                        flags=["grader worker crashed 3 times"],
                    ),
                )
                progress.update(1)
            else:
                todo.append(job)


def run(args) -> int:
    from tqdm import tqdm

    from grader import gradebook, intake
    from grader.job import Job, job_key

    start = monotonic()
    subs, out = _check_paths(args)
    if args.notebooks:
        _choose(args, [])  # unknown names fail before anything is written
    out.mkdir(parents=True, exist_ok=True)
    # Kernel connection files go in OUT too, so nothing outside OUT changes.
    os.environ["JUPYTER_RUNTIME_DIR"] = str(out / "work" / "runtime")
    students, ignored = intake.collect(subs, course.assignments(), _answer_ids(), out / "work")
    assignments = _choose(args, students)
    _check_release(assignments)
    gradebook.prepare(out, assignments)

    jobs = []
    for sub in students:
        for a in assignments:
            notes = list(sub.notes.get(a, []))
            if sub.extra:
                notes.append(f"ignored extra files: {', '.join(sorted(sub.extra)[:8])}")
            path = sub.notebooks.get(a)
            jobs.append(
                Job(
                    sub.student,
                    a,
                    str(path) if path else None,
                    str(out),
                    args.seed,
                    args.cell_timeout,
                    args.notebook_timeout,
                    args.memory_mb,
                    tuple(notes),
                )
            )

    results_dir = out / "work" / "results"
    results: dict[tuple, dict] = {}
    todo = []
    for job in jobs:
        path = results_dir / job.student / f"{job.notebook}.json"
        previous = None if args.fresh else _load_json(path)
        if previous and previous.get("key") == job_key(job):
            results[(job.student, job.notebook)] = previous
        else:
            todo.append(job)
    reused = len(results)

    def on_result(job, result):
        results[(job.student, job.notebook)] = result
        _write_json(results_dir / job.student / f"{job.notebook}.json", result)

    progress = tqdm(
        total=len(jobs),
        initial=reused,
        desc="grading",
        unit="notebook",
        disable=True if args.quiet else None,
        file=sys.stderr,
    )

    def stop(signum, frame):  # `kill` and Ctrl-C both stop cleanly, keeping finished work
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    try:
        _run_pool(todo, args.jobs, on_result, progress)
    except KeyboardInterrupt:
        progress.close()
        print(
            f"interrupted: {len(results)} graded notebooks are kept in {results_dir}; "
            "run the same command again to finish",
            file=sys.stderr,
        )
        return 130
    progress.close()

    manual = {}
    for key, result in sorted(results.items()):  # the single writer of the gradebook
        manual[key] = gradebook.save(out, result)
    ordered = [results[k] for k in sorted(results)]
    grade_rows = report.rows(ordered, manual)
    report.write_grades(out, grade_rows)
    total_rows = report.totals(grade_rows, assignments)
    report.write_totals(out, total_rows, assignments)
    report.write_feedback(out, grade_rows, ordered)
    report.write_class_report(out, grade_rows, total_rows, ordered, ignored)

    times = [r["timings"].get("total", 0) for r in ordered if r["timings"].get("execute")]
    flagged = sorted({r["student"] for r in ordered if r.get("flags")})
    print(
        f"graded {len(jobs)} notebooks of {len(students)} students in "
        f"{monotonic() - start:.1f} s with {args.jobs} workers ({reused} reused from an "
        f"earlier run)" + (f"; {sum(times) / len(times):.1f} s per notebook" if times else "")
    )
    print(f"wrote {out / 'grades.csv'}, totals.csv, feedback/, report/index.html")
    if flagged:
        print(f"flagged for review: {', '.join(flagged)} (reasons in report/index.html)")
    return 0
