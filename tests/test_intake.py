"""Which file of a student's folder is graded as which notebook, the notes that say so, and
the budgets that bound unpacking hostile zips (issue 23)."""

import json
import shutil
import warnings
import zipfile

import nbformat
import pytest

from grader import cli, course
from grader.batch.job import Job, grade
from grader.course import FORMER_NAMES, grade_id, moved_to, release_path
from grader.intake.rebuild import rebuild, release_notes, submitted_cells
from grader.intake.submissions import (
    MARKUP,
    MB,
    OverBudget,
    Unpacker,
    batch_budget,
    collect,
    collect_student,
    student_budget,
    student_entries,
)
from grader.judging.trusted import Trusted
from grader.settings import GraderSettings

OLD, CURRENT = next(iter(FORMER_NAMES.items()))
NAME = f"{CURRENT}.ipynb"
NOTEBOOK = b'{"cells": [], "metadata": {}}'


def _unpacker(tmp_path, **budgets):
    settings = GraderSettings(**budgets)
    budget = student_budget(settings, batch_budget(settings))
    return Unpacker(tmp_path / "unpack", budget, settings.unpack_depth)


def _collect_one(folder, tmp_path):
    unpacker = _unpacker(tmp_path)
    return collect_student("s", folder, [CURRENT], {CURRENT: set()}, unpacker)


def _zip(path, members: dict) -> bytes:
    """A deflated zip of ``members`` ({name: bytes}), returned as bytes and written there."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return path.read_bytes()


def _class(tmp_path):
    """A submissions folder with one honest student, ``zz``, collected last."""
    subs = tmp_path / "subs"
    (subs / "zz").mkdir(parents=True)
    (subs / "zz" / NAME).write_bytes(NOTEBOOK)
    return subs


def _collect(subs, tmp_path, **budgets) -> dict:
    """{student: Submission} of the whole batch, once it is checked that nothing stayed
    unpacked and that the honest student was graded."""
    entries, _ = student_entries(subs)
    work = tmp_path / "out" / "work"
    found = collect(entries, [CURRENT], {CURRENT: set()}, work, GraderSettings(**budgets))
    assert not (work / "intake").exists()
    students = {s.student: s for s in found}
    assert students["zz"].notebooks[CURRENT].data == NOTEBOOK and not students["zz"].refused
    return students


def _refused(sub, setting: str) -> str:
    assert not sub.notebooks and setting in sub.refused
    assert sub.refused.startswith("Not graded: ") and "\n" not in sub.refused
    return sub.refused


def test_a_notebook_under_its_former_name_is_graded_with_what_to_do(tmp_path):
    folder = tmp_path / "s"
    folder.mkdir()
    shutil.copy(release_path(CURRENT), folder / f"{OLD}.ipynb")
    sub = _collect_one(folder, tmp_path)
    assert sub.notebooks[CURRENT].name == f"{OLD}.ipynb"
    assert f"hand it in as `{CURRENT}.ipynb` next time" in sub.notes[CURRENT][0]


def test_the_current_name_wins_over_the_former_one(tmp_path):
    """Both handed in (an old copy kept after the update): the current file is graded,
    although the former name sorts first."""
    folder = tmp_path / "s"
    folder.mkdir()
    shutil.copy(release_path(CURRENT), folder / f"{OLD}.ipynb")
    shutil.copy(release_path(CURRENT), folder / f"{CURRENT}.ipynb")
    sub = _collect_one(folder, tmp_path)
    assert sub.notebooks[CURRENT].name == f"{CURRENT}.ipynb"
    assert sub.notes[CURRENT] == [f"2 candidate files; graded `{CURRENT}.ipynb`"]


def test_an_older_release_says_what_to_do():
    unversioned = release_notes({"metadata": {}}, CURRENT, "v2", f"{CURRENT}.ipynb")
    older = release_notes(
        {"metadata": {"attn_release": {"notebook": CURRENT, "version": "v1"}}},
        CURRENT, "v2", f"{CURRENT}.ipynb",
    )  # fmt: skip
    for notes in (unversioned, older):
        assert len(notes) == 1 and "copy your answers into the current release" in notes[0]
    assert "made from release v1" in older[0]


def test_an_old_copy_holding_exercises_since_moved_is_graded_without_them_and_says_where():
    """01 as released before design_keys_values and keys_vs_values moved to 02: their cells
    are no forgery; a note says where they are graded now. A test cell of an exercise that
    never was in 01 is still flagged."""
    nb01, nb02 = (
        nbformat.read(release_path(n), as_version=4) for n in ("01_soft_lookup", "02_projections")
    )
    old = nbformat.read(release_path("01_soft_lookup"), as_version=4)
    old.cells += [c for c in nb02.cells if moved_to("01_soft_lookup", grade_id(c) or "")]
    old.cells += [c for c in nb02.cells if grade_id(c) == "test_project"]
    data = json.loads(nbformat.writes(old))
    _, found, flags = rebuild(nb01, submitted_cells(data))
    assert found == dict.fromkeys(("softmax", "hard_lookup", "soft_lookup"), "found")
    assert flags == ["forged test cell `test_project` (not in the release)"]
    version = nb01.metadata["attn_release"]["version"]
    assert release_notes(data, "01_soft_lookup", version, "01_soft_lookup.ipynb") == [
        f"`{gid}` is now an exercise of 02_projections and graded there: hand it in with "
        "02_projections.ipynb"
        for gid in ("design_keys_values", "keys_vs_values")
    ]


# --------------------------------------------------------------------------- budgets


def test_a_zip_bomb_stops_at_the_budget_while_it_unpacks(tmp_path):
    """20 MB of zeros deflate to a few kB: unpacking stops once 1 MB is written."""
    bomb = tmp_path / "bomb.zip"
    assert len(_zip(bomb, {NAME: bytes(20 * MB)})) < 100_000
    unpacker = _unpacker(tmp_path, unpack_mb=1)
    with pytest.raises(OverBudget, match="more than 1 MB"):
        unpacker.files(bomb)
    written = sum(p.stat().st_size for p in unpacker.scratch.rglob("*") if p.is_file())
    assert 0 < written <= MB


def test_a_zip_bomb_student_is_not_graded_and_the_batch_goes_on(tmp_path):
    """Not even the notebook beside the bomb: the row says why, for a human to look."""
    subs = _class(tmp_path)
    (subs / "bomb").mkdir()
    (subs / "bomb" / NAME).write_bytes(NOTEBOOK)
    _zip(subs / "bomb" / "extra" / "data.zip", {"zeros.bin": bytes(20 * MB)})
    row = _refused(_collect(subs, tmp_path, unpack_mb=1)["bomb"], "c.GraderSettings.unpack_mb")
    assert row == (
        "Not graded: the zip files handed in unpack to more than 1 MB "
        "(c.GraderSettings.unpack_mb); your instructor will look at it."
    )


def test_zips_inside_zips_share_one_budget(tmp_path):
    """Issue 23's attack: every zip unpacks to less than the budget, together to more."""
    subs = _class(tmp_path)
    inner = _zip(tmp_path / "inner.zip", {"zeros.bin": bytes(300 * 1024)})
    _zip(subs / "nest.zip", {f"copy{i}.zip": inner for i in range(10)} | {NAME: NOTEBOOK})
    _refused(_collect(subs, tmp_path, unpack_mb=1)["nest"], "c.GraderSettings.unpack_mb")


def test_zips_deeper_than_the_depth_are_not_opened(tmp_path):
    subs = _class(tmp_path)
    for student, levels in (("deep", 4), ("nested", 3)):
        data = NOTEBOOK
        for level in range(levels):
            data = _zip(
                tmp_path / f"{student}{level}.zip", {NAME if level == 0 else "in.zip": data}
            )
        (subs / f"{student}.zip").write_bytes(data)
    students = _collect(subs, tmp_path, unpack_depth=3)
    assert students["nested"].notebooks[CURRENT].data == NOTEBOOK
    assert "taken from a zip file" in students["nested"].notes[CURRENT]
    deep = students["deep"]
    assert not deep.notebooks and not deep.refused
    assert deep.notes[CURRENT] == [
        "`in.zip` not opened: zips are opened 3 levels deep at most (c.GraderSettings.unpack_depth)"
    ]


def test_many_small_files_go_over_the_files_budget(tmp_path):
    subs = _class(tmp_path)
    _zip(subs / "many.zip", {f"f{i}.txt": b"" for i in range(2001)} | {NAME: NOTEBOOK})
    row = _refused(_collect(subs, tmp_path)["many"], "c.GraderSettings.unpack_files")
    assert "hold more than 2000 files" in row


def _claim_size(path, size: int) -> None:
    """Make every header of the zip at ``path`` claim that its member unpacks to ``size``."""
    data = bytearray(path.read_bytes())
    for signature, offset in ((b"PK\x03\x04", 22), (b"PK\x01\x02", 24)):
        at = data.find(signature)
        while at >= 0:
            data[at + offset : at + offset + 4] = size.to_bytes(4, "little")
            at = data.find(signature, at + 4)
    path.write_bytes(data)


def test_what_headers_claim_neither_refuses_nor_admits(tmp_path):
    """A small notebook whose headers claim 4 GB is graded (what is written counts); 20 MB
    of zeros whose headers claim 1 byte never write more than the budget."""
    subs = _class(tmp_path)
    _zip(subs / "big_claim.zip", {NAME: NOTEBOOK})
    _claim_size(subs / "big_claim.zip", 0xF000_0000)
    _zip(subs / "small_claim.zip", {NAME: bytes(20 * MB)})
    _claim_size(subs / "small_claim.zip", 1)
    students = _collect(subs, tmp_path, unpack_mb=1)
    assert students["big_claim"].notebooks[CURRENT].data == NOTEBOOK
    small = students["small_claim"]
    assert not small.notebooks and not small.refused
    assert small.notes[CURRENT] == ["small_claim.zip: not a readable zip (BadZipFile)"]


def test_the_batch_budget_holds_across_students(tmp_path):
    """Each of three students unpacks 400 kB, under their own 1 MB; the third passes the
    batch's 1 MB and is not graded, and the honest student after them still is."""
    subs = _class(tmp_path)
    for student in ("s1", "s2", "s3"):
        _zip(subs / f"{student}.zip", {NAME: NOTEBOOK + bytes(400 * 1024)})
    students = _collect(subs, tmp_path, unpack_mb=1, batch_unpack_mb=1)
    assert all(students[s].notebooks[CURRENT].name == NAME for s in ("s1", "s2"))
    row = _refused(students["s3"], "c.GraderSettings.batch_unpack_mb")
    assert "counted in name order up to this student's, unpack to more than 1 MB" in row


def test_a_student_with_a_folder_and_a_zip_is_graded_from_the_folder(tmp_path):
    subs = _class(tmp_path)
    (subs / "ada").mkdir()
    (subs / "ada" / NAME).write_bytes(NOTEBOOK)
    _zip(subs / "ada.zip", {NAME: b"{}"})
    ada = _collect(subs, tmp_path)["ada"]
    assert ada.notebooks[CURRENT].data == NOTEBOOK
    assert ada.notes[CURRENT] == ["`ada.zip` ignored: `ada/` is graded (both were handed in)"]


def test_members_neither_stored_nor_deflated_are_skipped(tmp_path):
    """zipfile unpacks bzip2 and lzma without bounding one read's output."""
    subs = _class(tmp_path)
    with zipfile.ZipFile(subs / "bz.zip", "w", zipfile.ZIP_BZIP2) as zf:
        zf.writestr(NAME, NOTEBOOK)
    bz = _collect(subs, tmp_path)["bz"]
    assert not bz.notebooks
    assert bz.notes[CURRENT] == [f"bz.zip: skipped {NAME!r} (neither stored nor deflated)"]


def test_a_run_killed_while_unpacking_leaves_nothing_after_the_next(tmp_path):
    subs = _class(tmp_path)
    leftover = tmp_path / "out" / "work" / "intake" / "zz" / "0" / "big.bin"
    leftover.parent.mkdir(parents=True)
    leftover.write_bytes(bytes(1000))
    _collect(subs, tmp_path)  # checks that work/intake is gone


def test_a_zip_listing_more_files_than_are_left_is_not_opened(tmp_path):
    """zipfile reads a zip's whole directory before its first member (600 bytes of memory
    an entry): 5000 empty files in a zip inside a zip are refused before any is written."""
    inner = _zip(tmp_path / "inner.zip", {f"f{i}": b"" for i in range(5000)})
    outer = tmp_path / "outer.zip"
    _zip(outer, {"inner.zip": inner})
    unpacker = _unpacker(tmp_path, unpack_files=100)
    with pytest.raises(OverBudget, match="hold more than 100 files"):
        unpacker.files(outer)
    assert [p.name for p in unpacker.scratch.rglob("*") if p.is_file()] == ["inner.zip"]


def test_a_notebook_under_another_name_is_recognised_by_its_cells(tmp_path):
    folder = tmp_path / "s"
    folder.mkdir()
    shutil.copy(release_path(CURRENT), folder / "Untitled.ipynb")
    (folder / "notes.txt").write_text('{"grade_id": "not_an_answer"}')
    answer_ids = {CURRENT: {e.grade_id for e in course.exercises(CURRENT)}}
    sub = collect_student("s", folder, [CURRENT], answer_ids, _unpacker(tmp_path))
    assert sub.notebooks[CURRENT].data == release_path(CURRENT).read_bytes()
    assert sub.notes[CURRENT] == ["submitted as `Untitled.ipynb` (recognised by its cells)"]
    assert sub.extra == ["notes.txt"]


def test_a_refused_student_s_rows_say_why_and_are_flagged(tmp_path):
    """What the instructor sees in grades.csv and the report's flags, without a kernel."""
    subs = _class(tmp_path)
    _zip(subs / "bomb.zip", {NAME: bytes(2 * MB)})
    sub = _collect(subs, tmp_path, unpack_mb=1)["bomb"]
    exercises = tuple(course.exercises(CURRENT))  # all a missing notebook's rows need
    trusted = Trusted(
        notebook=CURRENT, release="", version="", exercises=exercises, tests=(), imports="",
        modules={}, source_cells={}, shortcuts={},
    )  # fmt: skip
    snapshot = GraderSettings().snapshot()
    job = Job(sub.student, CURRENT, None, trusted, snapshot, refused=sub.refused)
    result = grade(job).to_json()
    assert result["status"] == "not graded" and result["flags"] == [sub.refused]
    assert {row["message"] for row in result["rows"]} == {sub.refused}


# ----------------------------------------------------------------------------- issue 32


def test_a_zip_member_named_twice_is_noted_and_its_last_copy_graded(tmp_path):
    subs = _class(tmp_path)
    (subs / "dup").mkdir()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # zipfile's "Duplicate name"
        with zipfile.ZipFile(subs / "dup" / "work.zip", "w") as zf:
            zf.writestr(NAME, b'{"first": 1}')
            zf.writestr(NAME, NOTEBOOK)
    dup = _collect(subs, tmp_path)["dup"]
    assert dup.notebooks[CURRENT].data == NOTEBOOK
    assert f"work.zip: `{NAME}` stands 2 times in it; the last one is used" in dup.notes[CURRENT]


def test_a_file_and_a_folder_of_one_name_cost_only_the_later_member(tmp_path):
    """Either order: the member that clashes is skipped, named in a note, and the rest of
    the zip (here the notebook, last) is unpacked and graded."""
    subs = _class(tmp_path)
    members = {"data": b"a file", "data/inside.txt": b"then a folder", "figures/p.txt": b"a folder",
               "figures": b"then a file", NAME: NOTEBOOK}  # fmt: skip
    _zip(subs / "clash.zip", members)
    clash = _collect(subs, tmp_path)["clash"]
    assert clash.notebooks[CURRENT].data == NOTEBOOK
    assert [n for n in clash.notes[CURRENT] if "skipped" in n] == [
        "clash.zip: skipped `data/inside.txt` (a file and a folder of one name)",
        "clash.zip: skipped `figures` (a file and a folder of one name)",
    ]


def test_every_entry_of_submissions_is_a_student_or_ignored_with_why(tmp_path):
    subs = _class(tmp_path)
    for folder in (".bob", "__ann", "ada"):
        (subs / folder).mkdir()
    (subs / "bo.zip").write_bytes(b"")
    (subs / "loose.txt").write_text("x")
    (subs / "link").symlink_to(subs / "ada")
    found, ignored = student_entries(subs)
    assert set(found) == {"ada", "bo", "zz"}
    assert ignored == [
        ".bob: a hidden name (it starts with a dot)",
        "__ann: a system name (it starts with __, as __MACOSX)",
        "link: a link to a folder (never followed)",
        "loose.txt: not a folder or a zip",
    ]


def test_a_file_is_read_no_further_than_the_notebook_bound(tmp_path):
    """A 3 MB file over a 1 MB bound: intake keeps 1 MB and a byte (the job then refuses it
    by its size, grader.intake.bounded), never the whole file."""
    subs = _class(tmp_path)
    (subs / "big").mkdir()
    (subs / "big" / NAME).write_bytes(NOTEBOOK + b" " * (3 * MB))
    (subs / "big" / "Untitled.ipynb").write_bytes(b" " * (3 * MB))
    big = _collect(subs, tmp_path, notebook_mb=1)["big"]
    assert len(big.notebooks[CURRENT].data) == MB + 1


# ----------------------------------------------------------------------------- issue 46

CONTROLS = {  # names that take over a terminal, and how every line shows them
    "t\x1b]0;retitled\x07": "t\\x1b]0;retitled\\x07",  # OSC: the window's title
    "t\x1b[2J": "t\\x1b[2J",  # ESC: clear the screen
    "t_cr\rzz FAKE LINE": "t_cr\\rzz FAKE LINE",  # CR: a fake row in a CSV
    "t\u202egnp.exe": "t\\u202egnp.exe",  # a bidi override: reads backwards
}


def test_ids_with_control_characters_are_ignored_with_why_and_shown_escaped(tmp_path):
    """Refused at intake, before any output names them; the honest ``zz`` is a student."""
    subs = _class(tmp_path)
    for name in CONTROLS:
        (subs / name).mkdir()
        (subs / name / NAME).write_bytes(NOTEBOOK)
    found, ignored = student_entries(subs)
    assert set(found) == {"zz"}
    why = "its name holds a control character (shown escaped; rename it to grade it)"
    assert sorted(ignored) == sorted(f"{shown}: {why}" for shown in CONTROLS.values())


def test_ids_formgrader_would_read_as_markup_are_ignored_with_why(tmp_path):
    """nbgrader's pages print an id unescaped: such an id never reaches its gradebook; the
    honest ``zz`` is a student."""
    subs = _class(tmp_path)
    hostile = ["<img src=x onerror=alert(1)>", 'a"b', "a'b", "a`b", "a\\b", "a&b"]
    for name in hostile:
        (subs / name).mkdir()
        (subs / name / NAME).write_bytes(NOTEBOOK)
    found, ignored = student_entries(subs)
    assert set(found) == {"zz"}
    why = f"its name holds one of {MARKUP} (formgrader would read it as markup; rename it)"
    assert sorted(ignored) == sorted(f"{n}: {why}" for n in hostile)


def test_file_names_with_control_characters_are_quoted_escaped(tmp_path):
    """Notes and extra files quote names a student chose: they reach the CLI, the CSVs and
    the report only escaped. The same folder without them gives the plain notes."""
    folder = tmp_path / "s"
    folder.mkdir()
    (folder / f"{CURRENT} (1).ipynb").write_bytes(NOTEBOOK)
    assert _collect_one(folder, tmp_path).notes[CURRENT] == [f"submitted as `{CURRENT} (1).ipynb`"]
    (folder / f"{CURRENT} (1).ipynb").rename(folder / f"{CURRENT}\x1b[2J.ipynb")
    (folder / "x\rzz.txt").write_text("not a notebook")
    sub = _collect_one(folder, tmp_path)
    assert sub.notebooks[CURRENT].data == NOTEBOOK
    assert sub.notes[CURRENT] == [f"submitted as `{CURRENT}\\x1b[2J.ipynb`"]
    assert sub.extra == ["x\\rzz.txt"]


@pytest.mark.parametrize(("entry", "shown"), [("t\x1b]0;retitled\x07", "t\\x1b]0;retitled\\x07"),
                                              ("loose.txt", "loose.txt")])  # fmt: skip
def test_the_cli_names_such_an_entry_escaped(tmp_path, capsys, entry, shown):
    """Through `grader autograde`'s printing (a folder with no student: its one error line
    names the entry), beside a plain loose file, named as it is."""
    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / entry).write_text("x")
    assert cli.main(["autograde", str(subs), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert f"holds no student folder or zip (only {shown})" in err
    assert err.count("\n") == 1 and "\x1b" not in err


def test_a_diagnostic_naming_such_a_file_is_escaped_line_by_line(capsys):
    """The CLI's log handler (grader.logs): a worker's diagnostic may quote a name; its
    lines (a traceback's) are kept, what they hold is escaped, a plain line unchanged."""
    import logging

    from grader import logs

    logger = logging.getLogger("grader")
    before = logger.handlers[:], logger.level
    logs.configure("INFO", False)
    try:
        logging.getLogger("grader.test").info("plain\n%s/01_soft_lookup", "t\x1b]0;retitled\x07")
    finally:  # as it was: other tests in this process log as they did
        logger.handlers[:] = before[0]
        logger.setLevel(before[1])
    assert capsys.readouterr().err == "INFO: plain\nt\\x1b]0;retitled\\x07/01_soft_lookup\n"
