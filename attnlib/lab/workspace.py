"""The learner's own copy of the notebooks: ``work/``, made from the release ``notebooks/``.

JupyterLab opens ``work/``, so the release stays exactly as shipped (and git stays clean)
whatever a learner types or JupyterLab saves. ``work/.release.json`` records which release
each copy was made from, so:

- ``update`` brings a new release in: the new notebook, with the learner's answer cells
  (matched by grade_id) and the cells they added kept; the old file is backed up first;
- ``reset`` puts one exercise (or a whole notebook) back as released, after a backup.

Backups go to ``work/backups/<date_time>/``. Nothing is ever deleted.
"""

import contextlib
import hashlib
import json
import os
import shutil
from datetime import datetime
from pathlib import Path
from typing import Any

import nbformat
from nbformat import NotebookNode

from attnlib.paths import FORMER_NAMES, MOVED_EXERCISES, REPO_ROOT

RELEASE = REPO_ROOT / "notebooks"
WORK = REPO_ROOT / "work"
MANIFEST = ".release.json"  # {notebook: sha256 of the release file its copy was made from}


class WorkspaceError(Exception):
    """A problem the learner can fix, said in one line."""


def command(action: str, *args: str) -> str:
    """How the learner types ``action``: ``make ...`` in the course repo (make sets MAKELEVEL),
    ``python -m attnlib.lab ...`` elsewhere (the student bundle)."""
    if os.environ.get("MAKELEVEL"):
        names = ("NOTEBOOK", "EXERCISE")
        return " ".join(["make", action, *(f"{k}={v}" for k, v in zip(names, args, strict=False))])
    return " ".join(["python -m attnlib.lab", action, *args])


def released(release: Path = RELEASE) -> dict[str, Path]:
    """{notebook name: release file}, in course order."""
    if not release.is_dir():
        raise WorkspaceError(f"the release folder {release} is missing")
    found = {
        d.name: d / f"{d.name}.ipynb"
        for d in sorted(release.iterdir())
        if (d / f"{d.name}.ipynb").is_file()
    }
    if not found:
        raise WorkspaceError(f"no release notebooks in {release}")
    return found


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _manifest(work: Path) -> dict[str, str]:
    try:
        manifest: dict[str, str] = json.loads((work / MANIFEST).read_text())
        return manifest
    except (OSError, ValueError):
        return {}


def _save_manifest(work: Path, manifest: dict[str, str]) -> None:
    (work / MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")


def _copy(path: Path, work: Path) -> Path:
    return work / path.parent.name / path.name


def _add_missing(release: Path, work: Path) -> list[str]:
    """Make the work folder, or add the notebooks it lacks; never overwrite a copy."""
    first_time = not work.is_dir()
    notes = [f"made your work folder {work} from the release"] if first_time else []
    manifest = _manifest(work)
    for name, path in released(release).items():
        copy = _copy(path, work)
        if not copy.exists():
            copy.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, copy)
            manifest[name] = _digest(path)
            if not first_time:
                notes.append(_carry_over(name, copy, work) or f"{name}: added to {work}")
    work.mkdir(parents=True, exist_ok=True)
    _save_manifest(work, manifest)
    return notes


def _carry_over(name: str, copy: Path, work: Path) -> str:
    """The learner's answers from their copy under ``name``'s former name, if any, merged
    into the fresh ``copy``; the old file moves to the backups. Returns what was done."""
    old = next((work / o / f"{o}.ipynb" for o, n in FORMER_NAMES.items() if n == name), None)
    if old is None or not old.is_file():
        return ""
    new, kept, _ = merge(nbformat.read(copy, as_version=4), _read(old))
    nbformat.write(new, copy)
    backup = _backup(old, work)
    old.unlink()
    with contextlib.suppress(OSError):  # the folder stays if the learner put more in it
        old.parent.rmdir()
    return (
        f"{name}: added to {work}, the course's new name for {old.stem}; your answers kept: "
        f"{', '.join(kept) or 'none written yet'}; old file in {_relative(backup, work)}"
    )


def stale(release: Path = RELEASE, work: Path = WORK) -> list[str]:
    """The notebooks whose copy was made from another release than today's."""
    manifest = _manifest(work)
    return [n for n, path in released(release).items() if manifest.get(n) != _digest(path)]


def ensure(release: Path = RELEASE, work: Path = WORK) -> list[str]:
    """What a launch does first: the work folder made or completed, never overwritten.
    Returns one line per thing the learner should know."""
    notes = _add_missing(release, work)
    return notes + [
        f"{name}: the course has a newer version; `{command('update')}` brings it in"
        for name in stale(release, work)
    ]


def _nbgrader(cell: NotebookNode) -> dict[str, Any]:
    meta: dict[str, Any] = cell.get("metadata", {}).get("nbgrader", {})
    return meta


def _is_answer(cell: NotebookNode) -> bool:
    return bool(_nbgrader(cell).get("solution"))


def exercises(path: Path) -> list[str]:
    """The grade_ids of a release notebook's answer cells, in order."""
    nb = nbformat.read(path, as_version=4)
    return [_nbgrader(c)["grade_id"] for c in nb.cells if _is_answer(c)]


def _read(copy: Path) -> NotebookNode:
    try:
        nb: NotebookNode = nbformat.read(copy, as_version=4)
        return nb
    except Exception as err:  # noqa: BLE001 (any unreadable file gets the same advice)
        raise WorkspaceError(
            f"{copy} is not a readable notebook ({type(err).__name__}); "
            f"`{command('reset', copy.parent.name)}` starts it afresh (after a backup)"
        ) from None


def merge(new: NotebookNode, old: NotebookNode) -> tuple[NotebookNode, list[str], list[str]]:
    """The new release notebook with the learner's answers and own cells from ``old``.

    Answer cells take the learner's source by grade_id. A cell the learner added (an id the
    release does not have, no nbgrader metadata) stays after the release cell it followed.
    Returns (notebook, answers the learner wrote, answers the new release no longer has).
    """
    answers = {_nbgrader(c)["grade_id"]: c for c in old.cells if _is_answer(c)}
    release_ids = {c.get("id") for c in new.cells}
    added: dict[
        str | None, list[NotebookNode]
    ] = {}  # id of the release cell they follow (None: the top) -> learner cells
    anchor = None
    for cell in old.cells:
        if cell.get("id") in release_ids:
            anchor = cell.get("id")
        elif not _nbgrader(cell):
            added.setdefault(anchor, []).append(cell)
    cells, kept = list(added.get(None, [])), list[str]()
    for cell in new.cells:
        gid: str | None = _nbgrader(cell).get("grade_id")
        if gid is not None and _is_answer(cell) and gid in answers:
            if answers[gid].source != cell.source:
                kept.append(gid)
            cell.source = answers[gid].source
        cells.append(cell)
        cells.extend(added.get(cell.get("id"), []))
    new.cells = cells
    new_ids = {_nbgrader(c).get("grade_id") for c in new.cells if _is_answer(c)}
    return new, kept, [g for g in answers if g not in new_ids]


def _backup(copy: Path, work: Path) -> Path:
    folder = work / "backups" / datetime.now().strftime("%Y-%m-%d_%H%M%S")
    target = folder / copy.name
    n = 1
    while target.exists():
        n += 1
        target = folder.with_name(f"{folder.name}-{n}") / copy.name
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(copy, target)
    return target


def _relative(path: Path, work: Path) -> str:
    return str(path.relative_to(work.parent)) if path.is_relative_to(work.parent) else str(path)


def update(release: Path = RELEASE, work: Path = WORK) -> list[str]:
    """Bring every changed release notebook into the work folder, keeping the answers."""
    lines = _add_missing(release, work)
    manifest = _manifest(work)
    moving = []  # (answer cell, its notebook now) of exercises moved out of an updated copy
    for name in stale(release, work):
        path = released(release)[name]
        copy = _copy(path, work)
        old = _read(copy)
        new, kept, dropped = merge(nbformat.read(path, as_version=4), old)
        backup = _backup(copy, work)
        nbformat.write(new, copy)
        manifest[name] = _digest(path)
        _save_manifest(work, manifest)
        line = f"{name}: updated; your answers kept: {', '.join(kept) or 'none written yet'}"
        moved = {
            g: MOVED_EXERCISES[g][1] for g in dropped if MOVED_EXERCISES.get(g, ("",))[0] == name
        }
        moving += [(c, moved[_nbgrader(c)["grade_id"]]) for c in old.cells
                   if _is_answer(c) and _nbgrader(c)["grade_id"] in moved]  # fmt: skip
        if gone := [g for g in dropped if g not in moved]:
            line += f"; no longer in the course (only in the backup): {', '.join(gone)}"
        if moved:
            line += (
                f"; moved to another notebook: {', '.join(f'{g} ({n})' for g, n in moved.items())}"
            )
        lines.append(f"{line}; old file in {_relative(backup, work)}")
    lines += [_move_answer(cell, name, release, work) for cell, name in moving]
    return lines or ["your work folder already has the latest release"]


def _move_answer(cell: NotebookNode, name: str, release: Path, work: Path) -> str:
    """The learner's answer ``cell`` of an exercise moved to notebook ``name``, put into their
    copy of it unless they answered it there already."""
    gid = _nbgrader(cell)["grade_id"]
    path = released(release)[name]
    stub = next(
        c for c in nbformat.read(path, as_version=4).cells if _nbgrader(c).get("grade_id") == gid
    )
    copy = _copy(path, work)
    nb = _read(copy)
    target = next((c for c in nb.cells if _nbgrader(c).get("grade_id") == gid), None)
    if cell.source == stub.source:
        return f"{name}: `{gid}` moved here; you had not answered it yet"
    if target is None or target.source != stub.source:
        return f"{name}: `{gid}` moved here; your answer here kept, the old one is in the backup"
    target.source = cell.source
    nbformat.write(nb, copy)
    return f"{name}: `{gid}` moved here, with your answer"


def _choose(name: str, known: list[str], what: str, where: str = "") -> str:
    """``name`` (or the one known name it starts) among ``known``, or a one-line error."""
    name = name.removesuffix(".ipynb")
    if not name:
        raise WorkspaceError(f"say which {what}{where}: one of {', '.join(known)}")
    if name in known:
        return name
    matches = [k for k in known if k.startswith(name)]
    if len(matches) == 1:
        return matches[0]
    raise WorkspaceError(f"unknown {what} {name!r}{where}; known: {', '.join(known)}")


def reset(notebook: str, exercise: str | None = None, release: Path = RELEASE,
          work: Path = WORK) -> str:  # fmt: skip
    """Put one exercise's answer cell, or a whole notebook, back as released."""
    notebooks = released(release)
    name = _choose(notebook, list(notebooks), "notebook")
    path, copy = notebooks[name], _copy(notebooks[name], work)
    if exercise is not None:
        gid = _choose(exercise, exercises(path), "exercise", f" in {name}")
    if not copy.exists():
        _add_missing(release, work)
        return f"{name}: {_relative(copy, work)} was missing; copied from the release"
    backup = _backup(copy, work)
    fresh = nbformat.read(path, as_version=4)
    if exercise is None:
        shutil.copyfile(path, copy)
        manifest = _manifest(work)
        manifest[name] = _digest(path)
        _save_manifest(work, manifest)
        return f"{name}: reset to the release; old file in {_relative(backup, work)}"
    nb = _read(copy)
    _put_back(nb, fresh, gid)
    nbformat.write(nb, copy)
    return f"{name}: `{gid}` reset to the release; old file in {_relative(backup, work)}"


def _put_back(nb: NotebookNode, fresh: NotebookNode, gid: str) -> None:
    """Replace (or restore, if deleted) the answer cell ``gid`` of ``nb`` from ``fresh``."""
    released_cells = fresh.cells
    index = next(i for i, c in enumerate(released_cells) if _nbgrader(c).get("grade_id") == gid)
    stub = released_cells[index]
    for i, cell in enumerate(nb.cells):
        if _is_answer(cell) and _nbgrader(cell).get("grade_id") == gid:
            nb.cells[i] = stub
            return
    before = {c.get("id") for c in released_cells[:index]}
    position = max((i + 1 for i, c in enumerate(nb.cells) if c.get("id") in before), default=0)
    nb.cells.insert(position, stub)
