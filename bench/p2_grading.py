"""Grading speed: the course grader against stock sequential `nbgrader autograde`, in one run.

The same synthetic class (30 students × every notebook; two in three type in the solution's
answers, the rest hand in the untouched release) is graded five ways:

1. the course grader, ``python -m grader autograde`` (all cores, every kernel in its OS
   sandbox, judged outside, demo cells left out where no check needs them);
2. the same grader with ``--no-sandbox`` (the same kernel, records and judge, without the
   bubblewrap sandbox around the kernel), on a sample of the class (a fifth, at least 3
   students) graded four times in turn: sandboxed, ``--no-sandbox``, ``--no-sandbox``,
   sandboxed, so that a change in the machine's load during the runs weighs on both sides;
2b. the same grader with ``--full-run`` (every cell, demo cells too);
3. stock nbgrader 0.9.6, ``nbgrader autograde <assignment>`` for each assignment in turn,
   in an nbgrader course folder built the documented way (generate_assignment first, untimed;
   likewise the course grader's trusted release and empty gradebook are made before (1));
4. bare execution: every submitted notebook executed with nbclient and nothing else, on
   the same number of processes as (1).

Rows: the speed ratio (3) / (1) (target ≥ 3× on 2 cores); the overhead (1) / (4) of the
whole grading pipeline over bare execution at equal parallelism; the sandbox's overhead per
notebook, (2)'s sandboxed runs over its ``--no-sandbox`` runs, from the mean time each
notebook took in a worker (target ≤ 1.10×), with the machine's load average during both
(other work on the machine makes these numbers noisy); and the cost of a notebook in (1)
against its floor, a sandboxed kernel in the same grader that starts and runs only the
imports cell (the same notebooks cut down, as many at a time as there are workers). That
cost is given twice: for the submissions graded without their demo cells (target ≤ 1.5×:
what leaving them out buys), and over every submission, the untouched releases included,
whose failing checks make them run in full (no target: a full run costs what the notebook's
demo cells cost). ``ATTN_BENCH_STUDENTS`` changes the class size.
"""

import dataclasses
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import nbformat

from grader.course import REPO_ROOT, assignments, release_path, source_path

TIMEOUT = 60
IMPORTS = "imports"  # the grade_id of every notebook's imports cell


def _answers(assignment):
    nb = nbformat.read(source_path(assignment), as_version=4)
    return {
        c.metadata["nbgrader"]["grade_id"]: c.source
        for c in nb.cells
        if c.metadata.get("nbgrader", {}).get("solution")
    }


def make_class(folder: Path, students: int) -> list[tuple[str, str, Path]]:
    """Write the synthetic class; return [(student, assignment, path)]."""
    made = []
    for a in assignments():
        answers = _answers(a)
        for i in range(students):
            nb = nbformat.read(release_path(a), as_version=4)
            if i % 3 != 2:  # two in three hand in the solution's answers
                for cell in nb.cells:
                    gid = cell.metadata.get("nbgrader", {}).get("grade_id")
                    if gid in answers:
                        cell.source = answers[gid]
            student = f"s{i:02d}"
            path = folder / student / f"{a}.ipynb"
            path.parent.mkdir(parents=True, exist_ok=True)
            nbformat.write(nb, path)
            made.append((student, a, path))
    return made


# nbgrader runs `alembic` when it creates a gradebook: put the venv's bin first on PATH.
ENV = {**os.environ, "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"]}


def _run(cmd, cwd):
    start = time.perf_counter()
    subprocess.run(
        cmd, cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=ENV
    )
    return time.perf_counter() - start


def autograde(subs: Path, out: Path, *extra) -> list[str]:
    """The grading command every bench run times (or counts): one draw, so runs compare."""
    return [sys.executable, "-m", "grader", "autograde", str(subs), "--out", str(out),
            "--quiet", "--cell-timeout", str(TIMEOUT), "--seed", "0", *extra]  # fmt: skip


def _grade(subs: Path, out: Path, *extra) -> tuple[float, float, float]:
    """(wall time, mean seconds per notebook in a worker, mean load average meanwhile)."""
    before = os.getloadavg()[0]
    wall = _run(autograde(subs, out, *extra), REPO_ROOT)
    load = (before + os.getloadavg()[0]) / 2
    times = [
        json.loads(p.read_text())["timings"]["total"]
        for p in (out / "work" / "results").glob("*/*.json")
    ]
    return wall, sum(times) / len(times), load


def _stock_course(root: Path, made) -> None:
    """An nbgrader course folder: source = solutions, submissions copied in, DB generated."""
    root.mkdir(parents=True)
    (root / "nbgrader_config.py").write_text(
        "c = get_config()\n"
        f"c.CourseDirectory.root = {str(root)!r}\n"
        f"c.Execute.timeout = {TIMEOUT}\n"
        "c.IgnorePattern.enabled = True\n"
    )
    for a in assignments():
        (root / "source" / a).mkdir(parents=True)
        shutil.copy(source_path(a), root / "source" / a / f"{a}.ipynb")
        subprocess.run(
            [
                sys.executable,
                "-m",
                "nbgrader",
                "generate_assignment",
                a,
                "--force",
                "--log-level=ERROR",
            ],
            cwd=root,
            check=True,
            capture_output=True,
            env=ENV,
        )
    for student, a, path in made:
        dest = root / "submitted" / student / a
        dest.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, dest / f"{a}.ipynb")


def _bare(path: str) -> None:
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    NotebookClient(
        nb,
        timeout=TIMEOUT,
        kernel_name="python3",
        allow_errors=True,
        resources={"metadata": {"path": str(Path(path).parent)}},
    ).execute(stderr=subprocess.DEVNULL)


def _imports_only(made) -> list:
    """One job per submission of ``made``, its notebook cut down to the imports cell."""
    from grader import settings
    from grader.batch.job import Job
    from grader.judging import trusted

    config = settings.load()
    models = trusted.models(assignments(), config.release_cache)
    # a run settles its seed before making jobs (grader.results.out): the course grader's
    # runs here use --seed 0
    snapshot = dataclasses.replace(config.snapshot(), seed=0)
    jobs = []
    for student, a, _ in made:
        nb = nbformat.reads(models[a].release, as_version=4)
        nb.cells = [
            c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == IMPORTS
        ]
        text = nbformat.writes(nb)
        cut = dataclasses.replace(models[a], release=text, exercises=(), tests=(), demo=frozenset())
        jobs.append(Job(student, a, text.encode(), cut, snapshot))
    return jobs


def _warm(folder: Path) -> None:
    """What the course grader makes once per version of solutions/ (untimed, as stock
    nbgrader's generate_assignment): the trusted release and its empty gradebook."""
    from grader import settings
    from grader.judging import trusted
    from grader.results import gradebook

    cache = settings.load().release_cache
    models = trusted.models(assignments(), cache)
    gradebook.prepare(folder, {a: m.release for a, m in models.items()}, cache)


def _floor(jobs, workers: int) -> dict[str, float]:
    """{notebook: mean seconds of its imports-only run}, ``workers`` jobs at a time."""
    from grader.batch.job import grade
    from grader.judging.judge import warm

    with ProcessPoolExecutor(max_workers=workers, initializer=warm) as pool:  # as the grader
        results = list(pool.map(grade, jobs))
    found: dict[str, list] = {}
    for r in results:
        assert r.status == "graded", r.flags
        found.setdefault(r.notebook, []).append(r.timings["total"])  # as _per_notebook
    return {a: _mean(t) for a, t in found.items()}


def _per_notebook(out: Path) -> dict[str, dict[str, list]]:
    """{notebook: {"all": seconds per submission, "short": those of the submissions graded
    without their demo cells}}; the others ran in full (a check failed, or a cell was unclear)."""
    found: dict[str, dict[str, list]] = {}
    for p in (out / "work" / "results").glob("*/*.json"):
        r = json.loads(p.read_text())
        times = found.setdefault(r["notebook"], {"all": [], "short": []})
        times["all"].append(r["timings"]["total"])
        if r.get("demo_cells_left_out"):
            times["short"].append(r["timings"]["total"])
    return found


def _vs_floor(a: str, times: dict[str, list], floor: float) -> tuple[str, str, str]:
    short, every = times["short"], times["all"]
    left_out = (
        f"{_mean(short):.1f} s / {floor:.1f} s = {_mean(short) / floor:.2f}× "
        f"({len(short)} of {len(every)} submissions)"
        if short
        else f"none of {len(every)} submissions"
    )
    return (
        f"p2 {a}: graded / floor (imports only), per notebook: demo cells left out; "
        "every submission",
        f"{left_out}; {_mean(every):.1f} s = {_mean(every) / floor:.2f}×",
        "≤ 1.5× (left out)",
    )


@dataclasses.dataclass
class Overhead:
    """Runs of the sample class: (wall s, mean s per notebook in a worker, load average)."""

    sandboxed: list
    unsandboxed: list

    def __str__(self) -> str:
        return f"{self.ratio():.2f}×"

    def per_notebook(self) -> tuple[float, float]:
        """Mean seconds per notebook in a worker: (sandboxed, --no-sandbox)."""
        return _mean(r[1] for r in self.sandboxed), _mean(r[1] for r in self.unsandboxed)

    def ratio(self) -> float:
        sandboxed, unsandboxed = self.per_notebook()
        return sandboxed / unsandboxed

    def rows(self, students: int, notebooks: int, workers: int) -> list[tuple[str, str, str]]:
        def walls(runs):
            return " and ".join(f"{r[0]:.1f} s" for r in runs)

        def loads(runs):
            return f"{_mean(r[2] for r in runs):.1f}"

        return [
            (
                f"p2 sandbox sample ({students} students × {notebooks} notebooks, graded "
                "sandboxed, --no-sandbox, --no-sandbox, sandboxed), wall times",
                f"sandboxed {walls(self.sandboxed)}; --no-sandbox {walls(self.unsandboxed)}",
                "",
            ),
            (
                "p2 sandbox overhead per notebook (in a worker: sandboxed / --no-sandbox)",
                "{} ({:.2f} s vs {:.2f} s)".format(self, *self.per_notebook()),
                "≤ 1.10×",
            ),
            (
                "p2 load average during the sandboxed / --no-sandbox runs",
                f"{loads(self.sandboxed)} / {loads(self.unsandboxed)} ({workers} cores)",
                "",
            ),
        ]


def _mean(xs) -> float:
    xs = list(xs)
    return sum(xs) / len(xs)


def _sandbox_overhead(folder: Path, students: int) -> Overhead:
    """Grade a sample class sandboxed and not, in the order A B B A."""
    make_class(folder / "submissions", students)
    found = Overhead([], [])
    for i, sandboxed in enumerate((True, False, False, True)):
        extra = () if sandboxed else ("--no-sandbox",)
        run = _grade(folder / "submissions", folder / f"out-{i}", *extra)
        (found.sandboxed if sandboxed else found.unsandboxed).append(run)
    return found


def run() -> list[tuple[str, str, str]]:
    students = int(os.environ.get("ATTN_BENCH_STUDENTS", 30))
    workers = os.cpu_count() or 1
    with tempfile.TemporaryDirectory(prefix="attn-bench-") as tmp:
        tmp = Path(tmp)
        made = make_class(tmp / "submissions", students)
        n = len(made)
        _warm(tmp / "warm")

        ours, _, _ = _grade(tmp / "submissions", tmp / "out")
        print(f"course grader: {ours:.1f} s", file=sys.stderr)
        graded = _per_notebook(tmp / "out")
        floor = _floor(_imports_only(made[:: max(1, students // 4)]), workers)
        full, _, load_full = _grade(tmp / "submissions", tmp / "out-full", "--full-run")
        print(f"course grader --full-run: {full:.1f} s", file=sys.stderr)
        sample = max(3, students // 5)
        overhead = _sandbox_overhead(tmp / "sample", sample)
        print(f"sandbox overhead: {overhead}", file=sys.stderr)
        stock_root = tmp / "stock"
        _stock_course(stock_root, made)
        stock = 0.0
        for a in assignments():
            stock += _run(
                [sys.executable, "-m", "nbgrader", "autograde", a, "--force", "--log-level=ERROR"],
                stock_root,
            )

        print(f"stock nbgrader: {stock:.1f} s", file=sys.stderr)
        start = time.perf_counter()
        with ProcessPoolExecutor(max_workers=workers) as pool:
            list(pool.map(_bare, [str(p) for _, _, p in made]))
        bare = time.perf_counter() - start

    vs_floor = [_vs_floor(a, graded[a], floor[a]) for a in assignments()]
    return [
        ("p2 class graded", f"{students} students × {len(assignments())} notebooks = {n}", ""),
        (
            "p2 course grader, wall time",
            f"{ours:.1f} s ({ours / n:.2f} s/notebook, {workers} workers)",
            "",
        ),
        (
            "p2 stock nbgrader autograde (sequential), wall time",
            f"{stock:.1f} s ({stock / n:.2f} s/notebook)",
            "",
        ),
        ("p2 speed-up over stock nbgrader", f"{stock / ours:.2f}×", "≥ 3× on 2 cores"),
        (
            "p2 course grader --full-run (every cell), wall time",
            f"{full:.1f} s ({full / n:.2f} s/notebook; load average {load_full:.1f})",
            "",
        ),
        (
            "p2 speed-up from leaving out demo cells (--full-run / default)",
            f"{full / ours:.2f}×",
            "",
        ),  # fmt: skip
        *vs_floor,
        ("p2 bare execution (nbclient only, same workers)", f"{bare:.1f} s", ""),
        ("p2 course grader / bare execution of every cell", f"{ours / bare:.2f}×", ""),
        *overhead.rows(sample, len(assignments()), workers),
    ]


if __name__ == "__main__":
    for row in run():
        print(" | ".join(row))
