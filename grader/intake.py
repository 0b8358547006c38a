"""Find each student's notebooks in a submissions folder, however they arrived.

``SUBMISSIONS/<student>/`` may hold the notebooks flat (``01_soft_lookup.ipynb``), nested
(``01_soft_lookup/01_soft_lookup.ipynb``), under a slightly wrong name
(``01_soft_lookup (1).ipynb``, ``alice_01_soft_lookup.ipynb``, ``Untitled.ipynb`` whose cells
belong to the assignment) or inside zip files, as learning platforms export them;
``SUBMISSIONS/<student>.zip`` works too. Zips are unpacked safely into OUT (no paths
outside it, no links, size limits). Everything unusual becomes a note for the report.
"""

import json
import re
import shutil
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from grader.cli import UserError
from grader.course import FORMER_NAMES

MAX_ZIP_BYTES = 200 * 2**20
MAX_ZIP_FILES = 2000
SKIP_DIRS = {".ipynb_checkpoints", "__MACOSX", "__pycache__", ".git"}


@dataclass
class Submission:
    student: str
    notebooks: dict = field(default_factory=dict)  # assignment -> Path
    notes: dict = field(default_factory=dict)  # assignment -> [note]
    extra: list = field(default_factory=list)  # files not used


def _safe_extract(archive: Path, dest: Path) -> list[str]:
    notes = []
    try:
        with zipfile.ZipFile(archive) as zf:
            infos = zf.infolist()
            if len(infos) > MAX_ZIP_FILES or sum(i.file_size for i in infos) > MAX_ZIP_BYTES:
                return [f"{archive.name}: zip too large, not opened"]
            for info in infos:
                name = info.filename.replace("\\", "/")
                parts = [p for p in name.split("/") if p not in ("", ".")]
                is_link = (info.external_attr >> 16) & 0o170000 == 0o120000
                if not parts or ".." in parts or name.startswith("/") or is_link:
                    if parts:
                        notes.append(f"{archive.name}: skipped unsafe entry {name!r}")
                    continue
                if info.is_dir():
                    continue
                target = dest.joinpath(*parts)
                target.parent.mkdir(parents=True, exist_ok=True)
                with zf.open(info) as src, open(target, "wb") as out:
                    shutil.copyfileobj(src, out)
    except (zipfile.BadZipFile, OSError, RuntimeError, NotImplementedError) as err:
        notes.append(f"{archive.name}: not a readable zip ({type(err).__name__})")
    return notes


def _files(root: Path, unpack: Path, notes: list, depth: int = 0) -> list[Path]:
    """All files under ``root``, zips unpacked (two levels at most)."""
    found = []
    entries = [root] if root.is_file() else sorted(root.rglob("*"))
    for path in entries:
        if any(
            part in SKIP_DIRS or part.startswith(".")
            for part in path.relative_to(root.parent if root.is_file() else root).parts
        ):
            continue
        if path.is_symlink() or not path.is_file():
            continue
        if path.suffix.lower() == ".zip" and depth < 2:
            dest = unpack / f"{path.stem}-{len(found)}"
            notes.extend(_safe_extract(path, dest))
            found.extend(_files(dest, unpack / "nested", notes, depth + 1))
        else:
            found.append(path)
    return found


def _norm(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")


def _grade_ids(path: Path) -> set[str]:
    try:
        data = json.loads(path.read_bytes().decode("utf-8", errors="replace"))
        cells = data.get("cells") or [c for ws in data.get("worksheets", []) for c in ws["cells"]]
        return {
            c["metadata"]["nbgrader"]["grade_id"]
            for c in cells
            if isinstance(c, dict) and "nbgrader" in c.get("metadata", {})
        }
    except Exception:  # noqa: BLE001 (unreadable: matched by name or reported as extra)
        return set()


def collect_student(
    student: str, root: Path, assignments: list[str], answer_ids: dict, unpack: Path
) -> Submission:
    sub = Submission(student)
    notes: list[str] = []
    files = _files(root, unpack, notes)
    candidates: dict[str, list[tuple[int, str, Path]]] = {a: [] for a in assignments}
    for path in files:
        rel = path.name
        stem = _norm(path.stem)
        matched = False
        for a in assignments:
            if path.name == f"{a}.ipynb":
                candidates[a].append((0, "", path))
                matched = True
            elif FORMER_NAMES.get(path.stem) == a and path.suffix == ".ipynb":
                candidates[a].append(  # after a file under the current name
                    (
                        1,
                        f"submitted as `{rel}`, this notebook's name before it was renamed "
                        f"{a}: graded as {a}; hand it in as `{a}.ipynb` next time",
                        path,
                    )
                )
                matched = True
            elif path.suffix.lower() == ".ipynb" and _norm(a) in stem:
                candidates[a].append((1, f"submitted as `{rel}`", path))
                matched = True
        if not matched and path.suffix.lower() in (".ipynb", ".json", ".txt"):
            ids = _grade_ids(path)
            for a in assignments:
                if ids & answer_ids[a]:
                    candidates[a].append(
                        (2, f"submitted as `{rel}` (recognised by its cells)", path)
                    )
                    matched = True
        if not matched:
            sub.extra.append(rel)
    for a, found in candidates.items():
        if not found:
            continue
        found.sort(key=lambda item: (item[0], len(item[2].parts), str(item[2])))
        rank, note, path = found[0]
        sub.notebooks[a] = path
        sub.notes[a] = [note] if note else []
        if len(found) > 1:
            sub.notes[a].append(f"{len(found)} candidate files; graded `{path.name}`")
        if unpack in path.parents:
            sub.notes[a].append("taken from a zip file")
    for a in assignments:
        sub.notes.setdefault(a, []).extend(notes)
    return sub


def student_entries(submissions: Path) -> tuple[dict[str, Path], list[str]]:
    """({student: folder or zip}, ignored names) of a submissions folder, checked before
    anything is unpacked or written."""
    if not submissions.exists():
        raise UserError(f"submissions folder {submissions} does not exist")
    if not submissions.is_dir():
        raise UserError(f"{submissions} is not a folder (expected one folder per student)")
    found: dict[str, list[Path]] = {}
    ignored = []
    for entry in sorted(p for p in submissions.iterdir() if not p.name.startswith((".", "__"))):
        if entry.is_dir() and not entry.is_symlink():
            found.setdefault(entry.name, []).append(entry)
        elif entry.is_file() and entry.suffix.lower() == ".zip":
            found.setdefault(entry.stem, []).append(entry)
        else:
            ignored.append(entry.name)
    if not found:
        raise UserError(_no_students(submissions, ignored))
    twice = sorted(name for name, paths in found.items() if len(paths) > 1)
    if twice:
        raise UserError(f"student {twice[0]!r} appears both as a folder and as a zip")
    return {name: paths[0] for name, paths in found.items()}, ignored


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


def collect(entries: dict[str, Path], assignments: list[str], answer_ids: dict, work: Path):
    """[Submission] for each student of ``entries`` (from `student_entries`), in name order."""
    students = []
    for student, entry in sorted(entries.items()):
        unpack = work / "intake" / student
        shutil.rmtree(unpack, ignore_errors=True)
        students.append(collect_student(student, entry, assignments, answer_ids, unpack))
    return students
