"""Rebuild the notebook that gets graded from the trusted release, not from the submission.

Only the *answer* cells' sources come from the student, matched by grade_id (first
occurrence). Every other submitted cell, all metadata, tags, points, cell types and ids are
ignored: deleted, duplicated, reordered or forged test cells, changed points, tags such as
``skip-execution`` and test cells turned into markdown therefore change nothing. The edits
are still reported (``structure_flags``) so the instructor sees the attempt.

Reading is forgiving: bytes in any common encoding, old nbformat versions (v3 ``input``
and worksheets), and even a notebook that fails schema validation, as long as it is JSON.
"""

import copy
import json
from collections.abc import Callable
from typing import Any, Literal, TypedDict

import nbformat
from nbformat import NotebookNode
from nbgrader.utils import is_grade, is_solution

from grader.course import FORMER_NAMES, grade_id, moved_to, nbgrader_meta
from grader.release import METADATA_KEY

Found = Literal["found", "missing"]  # whether an answer cell was in the submission


class SubmittedCell(TypedDict):
    """A submitted cell as :func:`submitted_cells` reads it, from any nbformat version."""

    type: str
    source: str
    nbgrader: dict[str, Any]
    tags: list[str]


class Unreadable(Exception):
    """The submitted file is not a notebook we can read; the message says why."""


def decode(raw: bytes) -> tuple[str, list[str]]:
    """Bytes to text, trying the encodings notebooks turn up in. Returns (text, notes)."""
    if raw.startswith(b"\xef\xbb\xbf"):
        return raw[3:].decode("utf-8", errors="replace"), []
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        return raw.decode("utf-16"), ["saved as UTF-16, not UTF-8"]
    try:
        return raw.decode("utf-8"), []
    except UnicodeDecodeError:
        pass
    for enc in ("cp1252", "latin-1"):
        try:
            return raw.decode(enc), [f"not UTF-8 (read as {enc})"]
        except UnicodeDecodeError:
            continue
    raise Unreadable("the file is not text")  # pragma: no cover (latin-1 decodes anything)


def parse(
    raw: bytes, check: Callable[[dict[str, Any]], None] | None = None
) -> tuple[dict[str, Any], list[str]]:
    """The notebook's JSON and notes about how it had to be read; ``check(data)`` (the
    reading bounds, ``grader.intake.bounded``) runs before anything else is done with it."""
    if not raw.strip():
        raise Unreadable("the notebook file is empty")
    text, notes = decode(raw)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise Unreadable(
            f"the notebook file is corrupt (not valid JSON: {err.msg}, line {err.lineno})"
        ) from None
    if not isinstance(data, dict):
        raise Unreadable("the notebook file is JSON but not a notebook")
    if check is not None:
        check(data)
    major = data.get("nbformat")
    if major != 4:
        notes.append(f"old notebook format (nbformat {major})")
    try:
        nbformat.validate(nbformat.reads(json.dumps(data), as_version=4))
    except Exception as err:  # noqa: BLE001 (any schema problem is only a note)
        notes.append(f"notebook does not pass schema validation ({type(err).__name__})")
    return data, notes


def _text(value: object) -> str:
    if isinstance(value, list):
        return "".join(str(v) for v in value)
    return value if isinstance(value, str) else ""


def _dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def raw_cells(data: dict[str, Any]) -> list[object]:
    """The cells of any nbformat version as they are in the JSON."""
    found = data.get("cells")
    if found is None:  # nbformat 3: worksheets
        worksheets = data.get("worksheets")
        found = [
            c
            for ws in (worksheets if isinstance(worksheets, list) else [])
            if isinstance(ws, dict) and isinstance(ws.get("cells"), list)
            for c in ws["cells"]
        ]
    return found if isinstance(found, list) else []


def submitted_cells(data: dict[str, Any]) -> list[SubmittedCell]:
    """Every cell of any nbformat version, in order: {type, source, nbgrader, tags}."""
    cells: list[SubmittedCell] = []
    for cell in raw_cells(data):
        if not isinstance(cell, dict):
            continue
        meta = _dict(cell.get("metadata"))
        grader_meta = _dict(meta.get("nbgrader"))
        tags = _list(meta.get("tags"))
        source = cell.get("source", cell.get("input", ""))
        cells.append(
            {
                "type": cell.get("cell_type", "?"),
                "source": _text(source),
                "nbgrader": grader_meta,
                "tags": [str(t) for t in tags],
            }
        )
    return cells


# What a student does about a submission made from an older release.
UPDATE = "If a check fails that passed for you, copy your answers into the current release."


def release_notes(data: dict[str, Any], notebook: str, version: str, name: str) -> list[str]:
    """Notes on the release a submission says it was made from (its metadata), and on the
    answers it holds of exercises since moved to another notebook."""
    moved = [
        f"`{gid}` is now an exercise of {new} and graded there: hand it in with {new}.ipynb"
        for cell in submitted_cells(data)
        if cell["nbgrader"].get("solution")
        and isinstance(gid := cell["nbgrader"].get("grade_id"), str)
        and (new := moved_to(notebook, gid))
    ]
    meta = _dict(data.get("metadata"))
    made = given if isinstance(given := meta.get(METADATA_KEY), dict) else None
    if made is None and FORMER_NAMES.get(name.removesuffix(".ipynb")) == notebook:
        return moved  # intake's note already says which notebook it is and how it was graded
    if made is None:
        return [
            f"`{name}` was made from an older release (no release version); graded as "
            f"{notebook}. {UPDATE}",
            *moved,
        ]
    notes = moved
    if made.get("notebook") != notebook:
        notes.append(f"`{name}` says it is {str(made.get('notebook'))[:60]}; graded as {notebook}")
    elif made.get("version") != version:
        notes.append(
            f"made from release {str(made.get('version'))[:20]} of {notebook} "
            f"(the current one is {version}). {UPDATE}"
        )
    return notes


def is_answer(cell: NotebookNode) -> bool:
    return bool(is_solution(cell))


def is_test(cell: NotebookNode) -> bool:
    return bool(is_grade(cell)) and not is_solution(cell)


def rebuild(
    base: NotebookNode, cells: list[SubmittedCell], source_cells: dict[str, str] | None = None
) -> tuple[NotebookNode, dict[str, Found], list[str]]:
    """The graded notebook: ``base`` with the student's answer sources put in.
    ``source_cells``: {grade_id: the instructor's source}.

    Returns (notebook, {grade_id: "found"|"missing"}, structure flags).
    """
    nb = copy.deepcopy(base)
    by_id: dict[str, list[SubmittedCell]] = {}
    for cell in cells:
        gid = cell["nbgrader"].get("grade_id")
        if isinstance(gid, str):
            by_id.setdefault(gid, []).append(cell)
    found: dict[str, Found] = {}
    for cell in nb.cells:
        gid = grade_id(cell)
        if not is_answer(cell) or gid is None:  # the release's answer cells all have one
            continue
        matches = by_id.get(gid, [])
        if matches:
            cell.source = matches[0]["source"]
            found[gid] = "found"
        else:
            found[gid] = "missing"
    return nb, found, structure_flags(base, cells, source_cells)


def structure_flags(
    base: NotebookNode, cells: list[SubmittedCell], source_cells: dict[str, str] | None = None
) -> list[str]:
    """What the student changed in cells they were not meant to edit. ``source_cells``: the
    instructor's sources, whose hidden test cells legitimately differ from the release."""
    flags = []
    instructor = source_cells or {}
    notebook = str(_dict(base.metadata.get(METADATA_KEY)).get("notebook"))
    order = [gid for c in base.cells if (gid := grade_id(c))]
    trusted = {grade_id(c): c for c in base.cells if grade_id(c)}
    seen: dict[str, int] = {}
    for cell in cells:
        gid = cell["nbgrader"].get("grade_id")
        if not isinstance(gid, str):
            continue
        seen[gid] = seen.get(gid, 0) + 1
        if gid not in trusted:
            if cell["nbgrader"].get("grade") and not moved_to(notebook, gid):  # moved: a note
                flags.append(f"forged test cell `{gid}` (not in the release)")
            continue
        ref = trusted[gid]
        ref_meta = nbgrader_meta(ref)
        if seen[gid] == 2:
            kind = "answer" if is_answer(ref) else "test" if is_test(ref) else "read-only"
            flags.append(f"duplicated {kind} cell `{gid}` (the first copy is used)")
        if seen[gid] > 1:
            continue
        if cell["type"] != ref.cell_type:
            flags.append(f"cell `{gid}` changed from {ref.cell_type} to {cell['type']}")
        if ref_meta.get("grade") and cell["nbgrader"].get("points") != ref_meta.get("points"):
            flags.append(f"points of `{gid}` changed to {cell['nbgrader'].get('points')!r}")
        for key in ("grade", "solution", "locked"):
            if bool(cell["nbgrader"].get(key)) != bool(ref_meta.get(key)):
                flags.append(f"nbgrader metadata `{key}` of `{gid}` changed")
        if (
            ref_meta.get("locked")
            and not is_answer(ref)
            and cell["source"] != ref.source
            and cell["source"] != instructor.get(gid)
        ):
            flags.append(f"read-only cell `{gid}` was edited")
        if cell["tags"] and not is_answer(ref):
            flags.append(f"tags {sorted(set(cell['tags']))} added to `{gid}`")
    for gid in order:
        if gid not in seen:
            ref = trusted[gid]
            kind = "answer" if is_answer(ref) else "test" if is_test(ref) else "read-only"
            flags.append(f"{kind} cell `{gid}` deleted or its metadata removed")
    submitted_order = [
        g for g in dict.fromkeys(c["nbgrader"].get("grade_id") for c in cells) if g in trusted
    ]
    if submitted_order != [g for g in order if g in submitted_order]:
        flags.append("graded cells were reordered")
    return flags
