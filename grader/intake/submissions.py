"""Find each student's notebooks in a submissions folder, however they arrived.

``SUBMISSIONS/<student>/`` may hold the notebooks flat (``01_soft_lookup.ipynb``), nested
(``01_soft_lookup/01_soft_lookup.ipynb``), under a slightly wrong name
(``01_soft_lookup (1).ipynb``, ``alice_01_soft_lookup.ipynb``, ``Untitled.ipynb`` whose cells
belong to the assignment) or inside zip files, as learning platforms export them;
``SUBMISSIONS/<student>.zip`` works too (a student with both: the folder is graded, the zip
ignored, and a note says so). Everything unusual becomes a note for the report.

Zips are hostile input unpacked in the grader's own process, so unpacking is bounded by
what it really writes, never by the sizes a zip's headers claim: each member is streamed
(stored or deflated only), every chunk charged to the student's budget and to the batch's
(bytes and files, ``c.GraderSettings.unpack_*`` and ``batch_unpack_*``) before it is
written, and zips inside zips are opened ``unpack_depth`` levels deep at most. A student
over a budget is not graded (one line says why) and the batch goes on. Each student is
unpacked into ``OUT/work/intake``, removed when that student's intake ends: what is kept
is the chosen notebooks' bytes.
"""

import re
import shutil
import zipfile
import zlib
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from itertools import count
from pathlib import Path

from grader.course import FORMER_NAMES
from grader.errors import UserError
from grader.printable import holds_control, printable
from grader.results.messages import not_graded_because
from grader.settings import GraderSettings

MB = 2**20
GRADE_ID = re.compile(rb'"grade_id"\s*:\s*"([^"\\]{1,200})"')  # as nbgrader's metadata has it
CHUNK = 64 * 1024  # bytes unpacked between two charges to the budgets
SKIP_DIRS = {".ipynb_checkpoints", "__MACOSX", "__pycache__", ".git"}
# bzip2 and lzma members are refused: zipfile decompresses them without an output bound per
# read, so one small chunk could fill memory before any budget sees it.
METHODS = {zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED}
UNREADABLE = (zipfile.BadZipFile, zlib.error, EOFError, OSError, RuntimeError, ValueError)
# zipfile parses a zip's whole directory (about 600 bytes of memory per entry) before the first
# member: a zip is opened only if its directory fits the files left at this many bytes each.
ENTRY_BYTES = 1024
END, END64 = b"PK\x05\x06", b"PK\x06\x06"  # the signatures of the end records (APPNOTE 4.3)


@dataclass(frozen=True)
class Handed:
    """A notebook as handed in: its bytes outlive the intake's scratch folder."""

    name: str  # the file's name as submitted
    data: bytes


@dataclass
class Submission:
    student: str
    notebooks: dict[str, Handed] = field(default_factory=dict)  # assignment -> Handed
    notes: dict[str, list[str]] = field(default_factory=dict)  # assignment -> [note]
    extra: list[str] = field(default_factory=list)  # files not used
    refused: str = ""  # why none of it is graded (over a budget), for every row


class OverBudget(Exception):
    """Unpacking went over a budget; the message is the student's rows, one line."""


@dataclass
class Budget:
    """What unpacking may still write, charged as it writes; ``within`` (the batch's budget,
    shared by every student) is charged too."""

    bytes_left: int
    files_left: int
    too_big: str  # the row of a student over it
    too_many: str
    within: "Budget | None" = None

    def charge(self, n_bytes: int = 0, n_files: int = 0) -> None:
        self.bytes_left -= n_bytes
        self.files_left -= n_files
        if self.bytes_left < 0:
            raise OverBudget(self.too_big)
        if self.files_left < 0:
            raise OverBudget(self.too_many)
        if self.within is not None:
            self.within.charge(n_bytes, n_files)

    def admit_directory(self, n_bytes: int) -> None:
        if n_bytes > ENTRY_BYTES * self.files_left:
            raise OverBudget(self.too_many)
        if self.within is not None:
            self.within.admit_directory(n_bytes)


def directory_bytes(archive: Path) -> int:
    """The most directory zipfile may parse before a zip's first member. It takes the size
    from an end record in the last 64 kB (or from the zip64 record just before it), so every
    candidate counts, whichever zipfile picks; it never reads past the file's end."""
    size = archive.stat().st_size
    with open(archive, "rb") as fh:
        fh.seek(max(size - 2**16 - 22 - 76, 0))
        tail = fh.read()
    claims = [0]
    at = tail.find(END)
    while at >= 0:
        claims.append(int.from_bytes(tail[at + 12 : at + 16], "little"))
        if at >= 76 and tail[at - 76 : at - 72] == END64:
            claims.append(int.from_bytes(tail[at - 36 : at - 28], "little"))
        at = tail.find(END, at + 1)
    return min(max(claims), size)


def batch_budget(settings: GraderSettings) -> Budget:
    mb, files = settings.batch_unpack_mb, settings.batch_unpack_files
    together = "the class's zip files, counted in name order up to this student's,"
    return Budget(
        mb * MB,
        files,
        not_graded_because(f"{together} unpack to more than {mb} MB together "
                   "(c.GraderSettings.batch_unpack_mb)"),
        not_graded_because(f"{together} hold more than {files} files together "
                   "(c.GraderSettings.batch_unpack_files)"),
    )  # fmt: skip


def student_budget(settings: GraderSettings, batch: Budget) -> Budget:
    mb, files = settings.unpack_mb, settings.unpack_files
    return Budget(
        mb * MB,
        files,
        not_graded_because(f"the zip files handed in unpack to more than {mb} MB "
                   "(c.GraderSettings.unpack_mb)"),
        not_graded_because(f"the zip files handed in hold more than {files} files "
                   "(c.GraderSettings.unpack_files)"),
        within=batch,
    )  # fmt: skip


@dataclass
class Unpacker:
    """Unpacks one student's zips into ``scratch``, within ``budget``, zips inside zips
    ``depth`` levels deep at most."""

    scratch: Path
    budget: Budget
    depth: int
    notes: list[str] = field(default_factory=list)  # for every notebook of the student
    folders: "count[int]" = field(default_factory=count)  # quoted: generic to type checkers only

    def files(self, root: Path, level: int = 0) -> list[Path]:
        """All files of ``root`` (a folder or one file), zips replaced by what they hold."""
        found = []
        for path in _walk(root):
            if path.suffix.lower() != ".zip":
                found.append(path)
            elif level >= self.depth:
                self.notes.append(
                    f"`{path.name}` not opened: zips are opened {self.depth} levels deep at "
                    "most (c.GraderSettings.unpack_depth)"
                )
            else:
                dest = self.scratch / str(next(self.folders))
                self.unpack(path, dest)
                found.extend(self.files(dest, level + 1))
        return found

    def unpack(self, archive: Path, dest: Path) -> None:
        try:
            self.budget.admit_directory(directory_bytes(archive))
            with zipfile.ZipFile(archive) as zf:
                self._note_twice(zf.infolist(), archive.name)
                for info in zf.infolist():
                    self._member(zf, info, dest, archive.name)
        except UNREADABLE as err:
            self.notes.append(f"{archive.name}: not a readable zip ({type(err).__name__})")

    def _note_twice(self, infos: list[zipfile.ZipInfo], zip_name: str) -> None:
        """A name a zip holds more than once: its last copy is the one unpacked."""
        names = Counter(i.filename.replace("\\", "/") for i in infos if not i.is_dir())
        self.notes += [
            f"{zip_name}: `{name}` stands {n} times in it; the last one is used"
            for name, n in names.items()
            if n > 1
        ]

    def _member(
        self, zf: zipfile.ZipFile, info: zipfile.ZipInfo, dest: Path, zip_name: str
    ) -> None:
        name = info.filename.replace("\\", "/")
        parts = [p for p in name.split("/") if p not in ("", ".")]
        is_link = (info.external_attr >> 16) & 0o170000 == 0o120000
        if parts and (".." in parts or name.startswith("/") or is_link):
            self.notes.append(f"{zip_name}: skipped unsafe entry {name!r}")
        elif parts and not info.is_dir() and info.compress_type not in METHODS:
            self.notes.append(f"{zip_name}: skipped {name!r} (neither stored nor deflated)")
        elif parts and not info.is_dir():
            self.budget.charge(n_files=1)
            target = dest.joinpath(*parts)
            try:  # a file and a folder of one name: the later one is skipped, the rest goes on
                target.parent.mkdir(parents=True, exist_ok=True)
                open(target, "wb").close()
            except (FileExistsError, NotADirectoryError, IsADirectoryError):
                self.notes.append(f"{zip_name}: skipped `{name}` (a file and a folder of one name)")
                return
            try:
                with zf.open(info) as src, open(target, "wb") as out:
                    while chunk := src.read(CHUNK):
                        self.budget.charge(n_bytes=len(chunk))  # before it is written
                        out.write(chunk)
            except UNREADABLE:
                target.unlink(missing_ok=True)  # half a member is not what was handed in
                raise


def _walk(root: Path) -> list[Path]:
    """The files of a folder (or the file itself), without hidden, system or linked ones."""
    if root.is_file():
        return [root]
    return [
        path
        for path in sorted(root.rglob("*"))
        if not any(p in SKIP_DIRS or p.startswith(".") for p in path.relative_to(root).parts)
        and path.is_file()
        and not path.is_symlink()
    ]


def _norm(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")


def head(path: Path, max_bytes: int | None) -> bytes:
    """A file's bytes, at most ``max_bytes``: a notebook over its bound is refused by its
    size when read (``grader.intake.bounded``), so what lies past it never matters."""
    with open(path, "rb") as fh:
        return fh.read(-1 if max_bytes is None else max_bytes)


def _answers_named(path: Path, wanted: set[str], max_bytes: int | None) -> set[str]:
    """The answer grade ids of ``wanted`` a file's cells carry, found without parsing it as
    JSON (a few kB of ``[{},{},...]`` unpacked could be gigabytes of Python objects)."""
    found = set()
    for match in GRADE_ID.finditer(head(path, max_bytes)):
        if (grade_id := match.group(1).decode(errors="replace")) in wanted:
            found.add(grade_id)
    return found


def _by_name(path: Path, assignments: list[str]) -> list[tuple[str, int, str]]:
    """(assignment, rank, note) for each assignment ``path``'s name says it is; rank 0 best."""
    stem = _norm(path.stem)
    matches = []
    for a in assignments:
        if path.name == f"{a}.ipynb":
            matches.append((a, 0, ""))
        elif FORMER_NAMES.get(path.stem) == a and path.suffix == ".ipynb":
            matches.append(  # after a file under the current name
                (
                    a,
                    1,
                    f"submitted as `{path.name}`, this notebook's name before it was renamed "
                    f"{a}: graded as {a}; hand it in as `{a}.ipynb` next time",
                )
            )
        elif path.suffix.lower() == ".ipynb" and _norm(a) in stem:
            matches.append((a, 1, f"submitted as `{path.name}`"))
    return matches


def _candidates(
    files: list[Path],
    assignments: list[str],
    answer_ids: Mapping[str, set[str]],
    extra: list[str],
    max_bytes: int | None = None,
) -> dict[str, list[tuple[int, str, Path]]]:
    """{assignment: [(rank, note, path)]}; files that are no notebook go to ``extra``."""
    candidates: dict[str, list[tuple[int, str, Path]]] = {a: [] for a in assignments}
    for path in files:
        matches = _by_name(path, assignments)
        if not matches and path.suffix.lower() in (".ipynb", ".json", ".txt"):
            ids = _answers_named(path, set().union(*answer_ids.values()), max_bytes)
            note = f"submitted as `{path.name}` (recognised by its cells)"
            matches = [(a, 2, note) for a in assignments if ids & answer_ids[a]]
        for a, rank, note in matches:
            candidates[a].append((rank, note, path))
        if not matches and path.name != "timestamp.txt":  # nbgrader's: grader.results.deadlines
            extra.append(path.name)
    return candidates


def collect_student(
    student: str,
    root: Path,
    assignments: list[str],
    answer_ids: Mapping[str, set[str]],
    unpacker: Unpacker,
    max_bytes: int | None = None,
) -> Submission:
    """What ``student`` handed in; of each file, at most ``max_bytes`` are read."""
    sub = Submission(student)
    try:
        files = unpacker.files(root)
    except OverBudget as over:
        sub.refused = str(over)
        sub.notes = {a: list(unpacker.notes) for a in assignments}
        return _printable(sub)
    for a, found in _candidates(files, assignments, answer_ids, sub.extra, max_bytes).items():
        if not found:
            continue
        found.sort(key=lambda item: (item[0], len(item[2].parts), str(item[2])))
        rank, note, path = found[0]
        sub.notebooks[a] = Handed(path.name, head(path, max_bytes))
        sub.notes[a] = [note] if note else []
        if len(found) > 1:
            sub.notes[a].append(f"{len(found)} candidate files; graded `{path.name}`")
        if unpacker.scratch in path.parents:
            sub.notes[a].append("taken from a zip file")
    for a in assignments:
        sub.notes.setdefault(a, []).extend(unpacker.notes)
    return _printable(sub)


def _printable(sub: Submission) -> Submission:
    """``sub`` with the file names its notes quote escaped (grader.printable): the names are
    the student's, and the notes reach the CSVs, the feedback and the report."""
    sub.notes = {a: [printable(note) for note in notes] for a, notes in sub.notes.items()}
    sub.extra = [printable(name) for name in sub.extra]
    return sub


def student_entries(submissions: Path) -> tuple[dict[str, list[Path]], list[str]]:
    """({student: [folder or zip, ...]}, ["name: why it is no student", ...]) of a
    submissions folder, checked before anything is unpacked or written. A student's folder
    comes first: it is graded."""
    if not submissions.exists():
        raise UserError(f"submissions folder {submissions} does not exist")
    if not submissions.is_dir():
        raise UserError(f"{submissions} is not a folder (expected one folder per student)")
    found: dict[str, list[Path]] = {}
    ignored: dict[str, str] = {}
    for entry in sorted(submissions.iterdir()):
        if why := _no_student(entry):
            ignored[entry.name] = why
        elif entry.is_dir():
            found.setdefault(entry.name, []).insert(0, entry)
        else:
            found.setdefault(entry.stem, []).append(entry)
    if not found:
        shown = [name for name in ignored if not name.startswith((".", "__"))]
        raise UserError(_no_students(submissions, shown))
    return found, [f"{printable(name)}: {why}" for name, why in ignored.items()]


# Characters that end or open an HTML tag, attribute or entity, or a JavaScript string: the
# templates of nbgrader's formgrader print a student id as it is (grader.results.inert).
MARKUP = "<>&\"'`\\"


def _no_student(entry: Path) -> str:
    """Why an entry of SUBMISSIONS is no student's, or "" when it is one."""
    if entry.name.startswith("."):
        return "a hidden name (it starts with a dot)"
    if entry.name.startswith("__"):
        return "a system name (it starts with __, as __MACOSX)"
    if holds_control(entry.name):  # it would reach terminals and CSVs (grader.printable)
        return "its name holds a control character (shown escaped; rename it to grade it)"
    if any(c in MARKUP for c in entry.name):  # nbgrader's own pages print ids unescaped
        return f"its name holds one of {MARKUP} (formgrader would read it as markup; rename it)"
    if entry.is_symlink() and entry.is_dir():
        return "a link to a folder (never followed)"
    if entry.is_dir() or entry.is_file() and entry.suffix.lower() == ".zip":
        return ""
    return "not a folder or a zip"


def _no_students(submissions: Path, files: list[str]) -> str:
    layout = "one folder (or zip) per student, named by student id, e.g. SUBMISSIONS/ada/"
    notebooks = [f for f in files if f.lower().endswith(".ipynb")]
    if notebooks:
        return (
            f"{submissions} holds notebooks ({notebooks[0]}), not student folders: it looks "
            f"like one student's folder. Pass the folder that holds {layout}"
        )
    if files:
        return f"{submissions} holds no student folder or zip (only {files[0]}): expected {layout}"
    return f"submissions folder {submissions} is empty: expected {layout}"


def _shown(path: Path) -> str:
    return f"`{path.name}/`" if path.is_dir() else f"`{path.name}`"


def collect(
    entries: Mapping[str, list[Path]],
    assignments: list[str],
    answer_ids: Mapping[str, set[str]],
    work: Path,
    settings: GraderSettings,
) -> list[Submission]:
    """[Submission] for each student of ``entries`` (from `student_entries`), in name order,
    within the budgets of ``settings``; nothing stays unpacked in ``work/intake``."""
    scratch = work / "intake"
    shutil.rmtree(scratch, ignore_errors=True)  # left by a run killed while unpacking
    batch = batch_budget(settings)
    students = []
    for student, (handed, *others) in sorted(entries.items()):
        unpacker = Unpacker(
            scratch / student, student_budget(settings, batch), settings.unpack_depth
        )
        unpacker.notes += [
            f"{_shown(other)} ignored: {_shown(handed)} is graded (both were handed in)"
            for other in others
        ]
        try:
            students.append(collect_student(student, handed, assignments, answer_ids, unpacker,
                                            settings.notebook_mb * MB + 1))  # fmt: skip
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    return students
