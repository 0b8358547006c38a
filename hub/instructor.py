"""The instructor's side of the workshop server: their course folder, and their commands.

``prepare`` (run as root by ``python -m hub start``) lays out ``ROOT/instructor``, readable
and writable by the instructors' unix group only:

- ``course/``: a copy of the checkout (solutions, the course grader, its hidden checks),
  read-only; the instructors' servers import ``grader`` and ``hub`` from it;
- ``grading/``: the course grader's OUT (``grades.csv``, ``totals.csv``, ``feedback/``,
  ``report/``, ``gradebook.db``), with nbgrader's course folder in ``grading/nbgrader``
  (release, submitted, autograded, feedback), where formgrader, collect and feedback work;
- ``collected/``: the collected notebooks as the course grader reads them.

The commands run as an instructor, in a terminal of their Lab (``python -m hub ...``):
``release`` puts notebooks in the exchange (formgrader's Release button does the same),
``grade`` collects the submissions and grades them with the course grader (sandboxed), never
stock ``nbgrader autograde``, and ``feedback`` renders nbgrader's feedback from the graded
notebooks and releases it to the students' Assignments tab.

Deadlines hold on the hub: collect (``ReceivedCollect``) records when the exchange received
each submission from the file system's change times, which the student cannot set, and the
course grader takes that time over the student's own ``timestamp.txt``
(``grader.results.deadlines``); nbgrader's feedback states it and takes off the late penalty
(``LateWork``).
"""

import functools
import importlib.util
import logging
import os
import pwd
import shutil
import stat
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, TypedDict

import jinja2.filters
from nbconvert.exporters import NotebookExporter
from nbconvert.preprocessors import Preprocessor
from nbformat import NotebookNode
from nbformat.v4 import new_markdown_cell
from nbgrader.api import Gradebook
from nbgrader.exchange.default import ExchangeCollect
from nbgrader.utils import ignore_patterns, parse_utc
from traitlets import Unicode, default

from attnlib.lab import write_profile
from grader import course, settings
from grader.commands import bundle, formgrader
from grader.commands.totals import current as current_grades
from grader.configfile import config_file
from grader.judging import trusted
from grader.results import csvfile, deadlines, formgrade_csp, gradebook
from hub import graderun, nofollow
from hub.settings import REPO_ROOT, Settings

# Kept next to the graded notebook, as nbgrader's own autograde keeps them: generate_feedback
# copies them into the feedback folder, where release_feedback needs both.
SUBMISSION_FILES = ("timestamp.txt", "submission_secret.txt")
log = logging.getLogger(__name__)
PRIVATE_COPY_IGNORE = shutil.ignore_patterns(
    ".venv", ".git", "artifacts", "handouts", "dist", "out", "work", "__pycache__", "node_modules",
    ".pytest_cache", ".ruff_cache", "*.egg-info", ".ipynb_checkpoints", "gradebook.db",
)  # fmt: skip
REFUSAL = (
    "Formgrader's Autograde is off for this course:\n"
    "it would run student code outside the course grader's sandbox and without its checks.\n"
    "Grade with the course grader, in a terminal: python -m hub grade {assignment}\n"
    "After hand grading here: python -m hub totals"
)


class HubGraderOnly(NotebookExporter):
    """``Autograde.exporter_class`` on the hub: Autograde makes its exporter before it
    touches any file, so refusing here leaves everything as it was
    (see grader.commands.formgrader)."""

    # Overrides nbgrader internals (pinned in pyproject.toml); guarded by
    # tests/test_overrides.py::test_formgrader_s_autograde_makes_its_exporter_before_it_converts

    def __init__(self, *args: object, **kwargs: object) -> None:
        # nbconvert's Exporter.__init__ is untyped; untyped_calls_exclude misses super() calls
        super().__init__(*args, **kwargs)  # type: ignore[no-untyped-call]
        coursedir = getattr(self.parent, "coursedir", None)
        assignment = getattr(coursedir, "assignment_id", "") or "NOTEBOOK"
        message = REFUSAL.format(assignment=assignment)
        self.log.error(message)
        raise RuntimeError(message)


def config_path(s: Settings) -> list[Path]:
    """The instructors' Jupyter config folders, first first: the hub's nbgrader settings,
    then formgrader's launch profile (instructor tools on)."""
    return [s.profiles / "instructor", s.course_root / ".jupyter"]


# On for both roles: nbgrader then takes the exchange's folders as `hub start` laid them out
# (root's, see hub.exchange), where it would otherwise demand a root writable by everyone and
# course folders owned by whoever releases. Its other effect, group-writable files, stays in
# the instructors' folder (their group's) and in each attendee's home (their own group).
GROUPSHARED: dict[str, object] = {"groupshared": True}


def _nbgrader_config(s: Settings) -> str:
    course_directory = {"course_id": s.course_id, "root": str(s.course_root),
                        "db_url": gradebook.db_url(s.grading)} | GROUPSHARED  # fmt: skip
    values: dict[str, dict[str, object]] = {
        "CourseDirectory": course_directory,
        "Exchange": {"root": str(s.exchange)},
        "ExchangeFactory": {"collect": f"{__name__}.{ReceivedCollect.__name__}"},
        "ReceivedCollect": {"out": str(s.grading)},
        "Autograde": {"exporter_class": f"{__name__}.{HubGraderOnly.__name__}"},
        "GenerateFeedback": {"preprocessors": FEEDBACK_PREPROCESSORS},
        "LateWork": {"out": str(s.grading), "course": str(s.private_course)},
        "HTMLExporter": formgrade_csp.exporter_config(
            {"float": f"{__name__}.score_float", "round": f"{__name__}.score_round"}
        ),
    }  # fmt: skip
    header = "Written by `python -m hub start`: nbgrader for the instructors' servers."
    return config_file(header, values)


def _student_config(s: Settings) -> str:
    """The attendees' nbgrader settings: the exchange, and Validate's settings taken from the
    course's nbgrader_config.py (as the student bundle carries them)."""
    own: dict[str, dict[str, object]] = {
        "CourseDirectory": {"course_id": s.course_id} | GROUPSHARED,
        "Exchange": {"root": str(s.exchange)},
    }
    header = "Written by `python -m hub start`: nbgrader for the attendees' servers."
    return config_file(header, own | bundle.validate_config())


# Lab terminals: bash, not the login shell Jupyter starts under a spawner, whose
# /etc/profile resets PATH and so loses the course environment (`python -m hub` not found).
# A config file, not jupyter_server_config.d (the server reads only extensions from there).
TERMINAL = config_file(
    "Written by `python -m hub start`: Lab terminals keep the course environment's PATH.",
    {"ServerApp": {"terminado_settings": {"shell_command": ["/bin/bash"]}}},
)


def write_profiles(s: Settings) -> None:
    """The attendees' launch profile (Assignments and Validate only) and the instructors'
    nbgrader settings, readable by everyone (they hold no secret)."""
    student = write_profile(s.profiles / "student", instructor=False)
    (student / "nbgrader_config.py").write_text(_student_config(s))
    (s.profiles / "instructor").mkdir(parents=True, exist_ok=True)
    (s.profiles / "instructor" / "nbgrader_config.py").write_text(_nbgrader_config(s))
    for role in ("student", "instructor"):
        (s.profiles / role / "jupyter_server_config.py").write_text(TERMINAL)
    for folder, _dirs, files in os.walk(s.profiles):
        os.chmod(folder, 0o755)
        for name in files:
            os.chmod(Path(folder, name), 0o644)


def prepare(s: Settings, release: Path, gid: int) -> None:
    """Lay out ``ROOT/instructor`` (as root) for the instructors' group ``gid``."""
    s.instructor.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(s.private_course, ignore_errors=True)
    shutil.copytree(REPO_ROOT, s.private_course, ignore=PRIVATE_COPY_IGNORE, symlinks=True)
    if not (s.grading / "gradebook.db").is_file():
        cache = settings.load().release_cache
        models = trusted.models(course.assignments(), cache)
        gradebook.prepare(s.grading, {a: m.release for a, m in models.items()}, cache)
    formgrader.prepare(s.grading, s.exchange)
    for path in sorted(release.glob("*/*.ipynb")):
        target = s.course_root / "release" / path.parent.name / path.name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
    s.collected.mkdir(exist_ok=True)
    _share_with_group(s.instructor, gid, writable=True)
    _share_with_group(s.private_course, gid, writable=False)


def _share_with_group(top: Path, gid: int, writable: bool) -> None:
    """Owned by root and the group, nothing for others; group-writable folders keep new
    files in the group (setgid)."""
    dir_mode, file_mode = (0o2770, 0o660) if writable else (0o2750, 0o640)
    for folder, _dirs, files in os.walk(top):
        os.chown(folder, 0, gid)
        os.chmod(folder, dir_mode)
        for name in files:
            path = Path(folder, name)
            if not path.is_symlink():
                os.chown(path, 0, gid)
                os.chmod(path, file_mode | (os.stat(path).st_mode & 0o110))


# --- the instructor's commands ----------------------------------------------------------


def _nbgrader(s: Settings, *args: str) -> int:
    """Run an nbgrader command in the course folder, with the instructors' settings."""
    env = dict(os.environ, JUPYTER_CONFIG_PATH=os.pathsep.join(map(str, config_path(s))))
    cmd = [sys.executable, "-m", "nbgrader", *args, "--log-level=WARN"]
    return subprocess.run(cmd, cwd=s.course_root, env=env,
                          preexec_fn=graderun.dies_with_parent).returncode  # fmt: skip


def release(s: Settings, assignments: list[str]) -> int:
    """Into the exchange's ``outbound``, which ``hub.exchange`` laid out (any instructor)."""
    for a in assignments:
        if code := _nbgrader(s, "release_assignment", a):
            return code
        print(f"released {a} to the exchange: attendees see it in their Assignments tab")
    return 0


class Record(TypedDict):
    """nbgrader's record of an inbound folder (``ExchangeCollect._path_to_record``)."""

    username: str | None  # None: refused (``ReceivedCollect.init_src`` drops it)
    filename: str
    timestamp: datetime


class ReceivedCollect(ExchangeCollect):  # type: ignore[misc]  # nbgrader is untyped
    """nbgrader's collect (``ExchangeFactory.collect`` on the hub) that takes a submission
    only from the attendee it names, and records, for each submission it copies, when the
    exchange received it (``grader.results.deadlines`` reads it).

    nbgrader takes the student from the inbound folder's name, which the submitter writes:
    a folder counts only when it is a real folder (no link in it) made by the unix account
    of that name (attendees are unix users named after their hub name). Any other is left
    in place, said in one line and listed in ``OUT/report/refused_submissions.csv``."""

    out = Unicode(help="The course grader's OUT, where the times are recorded.").tag(config=True)
    src_records: list[Record]

    # Overrides nbgrader internals (pinned in pyproject.toml); guarded by
    # tests/test_hub_exchange.py::test_a_submission_counts_only_for_the_attendee_who_made_it
    # (so do _path_to_record, copy_files and do_copy below)
    def init_src(self) -> None:
        self._refused: list[tuple[str, str]] = []
        super().init_src()
        hidden = Path(self.inbound_path).glob(f".*+{self.coursedir.assignment_id}+*")
        for path in sorted(hidden):  # `..`: nbgrader's glob skips these; say so
            self._refuse(str(path), "a hidden name (nbgrader collects none)")
        self.src_records = [r for r in self.src_records if r["username"] is not None]
        _write_refusals(Path(self.out), self.coursedir.assignment_id, self._refused)

    # Overrides nbgrader internals: see init_src
    def _path_to_record(self, path: str) -> Record:
        claimed = os.path.basename(path).rsplit("+", 3)[0]
        reason = refusal(Path(path), claimed)
        if not reason:
            try:
                record: Record = super()._path_to_record(path)
                return record
            except (ValueError, OverflowError):  # the name's timestamp is no time
                reason = "its name holds no submission time"
        self._refuse(path, reason)
        return {"username": None, "filename": path, "timestamp": datetime.min}  # init_src drops it

    def _refuse(self, path: str, reason: str) -> None:
        self.log.warning("refused %s: %s; left in place", path, reason)
        self._refused.append((os.path.basename(path), reason))

    # Overrides nbgrader internals: see init_src
    def copy_files(self) -> None:
        for rec in self.src_records:  # a copy interrupted before its record: copy it again
            student = rec["username"]
            assert student is not None  # init_src dropped the refused
            dest = self.coursedir.format_path(
                self.coursedir.submitted_directory, student, self.coursedir.assignment_id
            )
            if os.path.isdir(dest) and not self._record(student).is_file():
                shutil.rmtree(dest)
        super().copy_files()
        _write_refusals(Path(self.out), self.coursedir.assignment_id, self._refused)

    # Overrides nbgrader internals: see init_src
    def do_copy(self, src: str, dest: str, log: logging.Logger | None = None) -> None:
        """nbgrader's copy (its size limits and ignore patterns), never following a link: the
        attendee may swap one in after ``refusal`` looked. A folder over the limits or with a
        link is refused, not collected, and the other submissions are collected."""
        record = self._record(Path(dest).parent.name)
        record.unlink(missing_ok=True)
        c = self.coursedir
        try:
            if self.get_size(src) > 1000 * c.max_dir_size:
                return self._refuse(src, "larger than CourseDirectory.max_dir_size allows")
            ignore = ignore_patterns(c.ignore, c.include, c.max_file_size, self.log)
            nofollow.copy_tree(src, dest, ignore)
        except OSError as err:
            shutil.rmtree(dest, ignore_errors=True)
            return self._refuse(src, str(err))
        deadlines.write_received(record, received_at(Path(src), Path(dest)))

    def _record(self, student: str) -> Path:
        return deadlines.received_record(Path(self.out), student, self.coursedir.assignment_id)


def refusal(folder: Path, claimed: str) -> str:
    """Why the inbound ``folder`` does not count as ``claimed``'s submission ("" if it does):
    read without following links, so a link cannot lend it another owner or contents (a link
    inside would copy whatever the instructor can read, e.g. the solutions)."""
    info = os.lstat(folder)
    if not stat.S_ISDIR(info.st_mode):
        return "a link or file, not a folder"
    try:
        maker = pwd.getpwuid(info.st_uid).pw_name
    except KeyError:
        maker = f"uid {info.st_uid}"
    if maker != claimed:
        return f"it names {claimed!r} but {maker!r} made it"
    for inner, dirs, files in os.walk(folder):
        links = [n for n in dirs + files if os.path.islink(os.path.join(inner, n))]
        if links:
            return f"it holds a link ({Path(inner, links[0]).relative_to(folder)})"
    return ""


REFUSED_COLUMNS = ["notebook", "folder", "reason"]


def _write_refusals(out: Path, assignment: str, refused: list[tuple[str, str]]) -> None:
    """This collect's refusals replace the notebook's earlier ones (a rerun says it again)."""
    path = out / "report" / "refused_submissions.csv"
    earlier = csvfile.read(path) if path.is_file() else []
    rows = [r for r in earlier if r["notebook"] != assignment]
    rows += [{"notebook": assignment, "folder": f, "reason": why} for f, why in refused]
    path.parent.mkdir(parents=True, exist_ok=True)
    csvfile.write(path, REFUSED_COLUMNS, rows)


def received_at(src: Path, dest: Path) -> datetime:
    """The latest status change (ctime) of the inbound folder ``src`` and of everything
    copied from it into ``dest``, links followed and not, read after the copy. The kernel
    sets a ctime on every change and no student can set it back (``touch -d`` sets atime and
    mtime, and changes the ctime to now), so nothing collected changed after this time."""
    times = []
    for path in [src, *(src / p.relative_to(dest) for p in dest.rglob("*"))]:
        for follow in (True, False):
            try:
                times.append(os.stat(path, follow_symlinks=follow).st_ctime)
            except OSError:
                pass  # removed since the copy: its folder's ctime is later
    return datetime.fromtimestamp(max(times, default=datetime.now(UTC).timestamp()), UTC)


def _stage(s: Settings, assignment: str) -> list[str]:
    """Copy each collected ``submitted/<student>/<assignment>/`` into ``collected/`` without
    its secret; return the students. Their times are ``ReceivedCollect``'s records."""
    students = []
    for folder in sorted((s.course_root / "submitted").glob(f"*/{assignment}")):
        student = folder.parent.name
        target = s.collected / student / assignment
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(folder, target, ignore=shutil.ignore_patterns("submission_secret.txt"))
        students.append(student)
    return students


def _record_submissions(s: Settings, assignment: str, students: list[str]) -> None:
    """Give each graded submission its nbgrader timestamp (the exchange's, as grading took it)
    and files, so formgrader counts it as autograded and generate_feedback / release_feedback
    work on it."""
    with Gradebook(gradebook.db_url(s.grading), s.course_id) as gb:
        for student in students:
            submitted = s.course_root / "submitted" / student / assignment
            graded = s.course_root / "autograded" / student / assignment
            stamp = submitted / "timestamp.txt"
            if not graded.is_dir() or not stamp.is_file():
                continue
            received = deadlines.received(s.grading, student, assignment)
            timestamp = parse_utc(received["time"] if received else stamp.read_text().strip())
            gb.update_or_create_submission(assignment, student, timestamp=timestamp)
            for name in SUBMISSION_FILES:
                if (submitted / name).is_file():
                    shutil.copyfile(submitted / name, graded / name)


def grade(s: Settings, assignments: list[str], scheduler: str | None = None) -> int:
    """Collect, then grade with the course grader into ``grading/``; safe to interrupt and
    rerun (``hub.graderun``). With ``scheduler`` (a Dask scheduler's address) the notebooks
    are graded on that cluster's workers, not inside this instructor's server and its limits
    (``--cpus``, ``--memory-mb``, ``--processes``)."""
    known = course.assignments()
    unknown = [a for a in assignments if a not in known]
    if unknown:
        print(f"error: unknown notebook {unknown[0]!r}; the course has: {', '.join(known)}",
              file=sys.stderr)  # fmt: skip
        return 2
    if scheduler is not None and (problem := _cluster_problem(scheduler)):
        print(f"error: {problem}", file=sys.stderr)
        return 2
    with graderun.one_at_a_time(s.grading):
        if graderun.begin(s.grading):
            log.warning("an earlier `hub grade` was interrupted: its gradebook changes are undone")
        code = _collect_and_grade(s, assignments, scheduler)
        if code == 0:
            graderun.finish(s.grading)
    return code


def _cluster_problem(scheduler: str) -> str:
    """Why ``--scheduler`` cannot be used from here, or "" (the address itself is tried by
    the grader, which says in one line when it cannot reach it)."""
    if not scheduler.strip():
        return "--scheduler needs a Dask scheduler's address, e.g. tcp://head:8786"
    if importlib.util.find_spec("distributed") is None:
        return (
            "--scheduler needs Dask, which the hub's environment lacks: on the host, run "
            "`make grader-setup`, then `make hub` again (it rebuilds the environment)"
        )
    return ""


def grader_command(s: Settings, assignments: list[str], scheduler: str | None) -> list[str]:
    """The course grader's autograde of ``assignments`` into the grading folder."""
    # The grading folder is the instructors' group's (hub.instructor.prepare), not one's.
    return [sys.executable, "-m", "grader", "autograde", str(s.collected),
            "--out", str(s.grading), "--notebooks", *assignments,
            "--GraderSettings.private_outputs=False",
            *(["--scheduler", scheduler] if scheduler else [])]  # fmt: skip


def _collect_and_grade(s: Settings, assignments: list[str], scheduler: str | None = None) -> int:
    staged = {}
    for a in assignments:
        if code := _nbgrader(s, "collect", a, "--update"):
            return code
        staged[a] = _stage(s, a)
        print(f"collected {a}: {len(staged[a])} submissions")
    if not any(staged.values()):
        print("nothing to grade: no student has submitted these notebooks yet")
        return 0
    cmd = grader_command(s, assignments, scheduler)
    grader = subprocess.run(cmd, cwd=s.private_course, preexec_fn=graderun.dies_with_parent)
    if grader.returncode:
        return grader.returncode
    for a, students in staged.items():
        _record_submissions(s, a, students)
    print(f"graded into {s.grading}; formgrader lists them; then: python -m hub feedback "
          + " ".join(assignments))  # fmt: skip
    return 0


def totals(s: Settings) -> int:
    """Hand-entered points (formgrader) into grading/'s CSVs, feedback pages and report."""
    cmd = [sys.executable, "-m", "grader", "totals", str(s.grading)]
    return subprocess.run(cmd, cwd=s.private_course).returncode


# nbconvert's resources: values of every kind (nbgrader's own under "nbgrader")
Resources = dict[str, Any]


class LateWork(Preprocessor):
    """Runs after nbgrader's GetGrades in generate_feedback: states when the notebook was
    handed in and due (``grader.results.deadlines.describe``) and takes off the late penalty, as the
    course grader's feedback and CSVs do (``grader totals``, with the course's settings)."""

    out = Unicode(help="The course grader's OUT.").tag(config=True)
    course = Unicode(help="The course whose nbgrader_config.py holds the grader's settings.").tag(
        config=True
    )

    @default("enabled")
    def _on(self) -> bool:
        return True

    def preprocess(self, nb: NotebookNode, resources: Resources) -> tuple[NotebookNode, Resources]:
        info = resources["nbgrader"]
        late = _late_work(self.out, self.course)
        handed, penalty = late.get((info["student"], info["notebook"]), ("", 0.0))
        if handed:
            nb.cells.insert(0, new_markdown_cell(f"**{handed}**"))
        info["score"] -= penalty
        info["late_penalty"] += penalty  # nbgrader's template shows it when above 0
        return nb, resources


@functools.cache
def _late_work(out: str, course_root: str) -> dict[tuple[str, str], tuple[str, float]]:
    """{(student, notebook): (the handed-in line, points taken off)}, as `grader totals`
    computes them: once per generate_feedback run."""
    grader_settings = settings.load(path=Path(course_root))
    _results, rows, _notebooks, extra = current_grades(Path(out), grader_settings)
    taken = {
        (r["student"], r["notebook"]): -float(r["points"])
        for r in rows
        if r["exercise"] == deadlines.LATE_ROW
    }
    return {key: (e["handed"], taken.get(key, 0.0)) for key, e in extra.items()}


Rounding = Literal["common", "ceil", "floor"]  # jinja2's round filter's methods


class Pending(str):
    """A score still to be given by hand, as nbgrader's feedback template shows it."""


class MarkPending(Preprocessor):
    """Runs after nbgrader's GetGrades in generate_feedback: a written answer not graded yet
    (formgrader has no score for it) shows "pending", not nbgrader's "Score: 0.0 / 2.0", and
    the notebook's score says how many points are pending."""

    @default("enabled")
    def _on(self) -> bool:  # nbconvert's preprocessors are off unless enabled
        return True

    def preprocess(self, nb: NotebookNode, resources: Resources) -> tuple[NotebookNode, Resources]:
        info = resources["nbgrader"]
        with Gradebook(info["db_url"]) as gb:
            grades = gb.find_submission_notebook(
                info["notebook"], info["assignment"], info["student"]
            ).grades
            waiting = {
                g.name: g.max_score
                for g in grades
                if g.cell.cell_type == "markdown"
                and g.needs_manual_grade
                and g.manual_score is None
            }
        for cell in nb.cells:
            meta = cell.metadata.get("nbgrader", {})
            if meta.get("grade_id") in waiting and meta.get("grade"):
                meta["score"] = Pending("pending")
        if waiting:
            score, pending = info["score"], sum(waiting.values())
            info["score"] = Pending(f"{score:.1f} + {pending:g} pending")
        return nb, resources


def score_float(value: object, default: float = 0.0) -> float | Pending:
    """The feedback template's ``float`` filter: a pending score stays "pending"."""
    return value if isinstance(value, Pending) else jinja2.filters.do_float(value, default)


def score_round(
    value: float | Pending, precision: int = 0, method: Rounding = "common"
) -> float | Pending:
    """The feedback template's ``round`` filter, likewise."""
    if isinstance(value, Pending):
        return value
    return jinja2.filters.do_round(value, precision, method)


FEEDBACK_PREPROCESSORS = [
    "nbgrader.preprocessors.GetGrades",
    f"{__name__}.{LateWork.__name__}",  # before MarkPending, which makes the score text
    f"{__name__}.{MarkPending.__name__}",
    "nbconvert.preprocessors.CSSHTMLHeaderPreprocessor",
]


def feedback(s: Settings, assignments: list[str]) -> int:
    """nbgrader's feedback from the graded notebooks, released to the students."""
    for a in assignments:
        for step in (("generate_feedback", a, "--force"), ("release_feedback", a)):
            if code := _nbgrader(s, *step):
                return code
        print(f"feedback on {a} released: attendees fetch it in their Assignments tab")
    return 0
