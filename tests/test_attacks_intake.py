"""Issue 32's attacks on what surrounds a kernel: its seed, the submissions folder's odd
entries, student ids one file name would merge. The big batch (``fixtures/intake_attacks.py``)
holds the ones that need a run; the rest need no kernel."""

import re
import unicodedata
import zlib

from fixtures.adversarial import NB
from fixtures.intake_attacks import COLLIDING, CONTROL_IDS, IGNORED

from grader import seeds
from grader.results import annotated, report
from grader.results import out as outfolder
from grader.results.report import feedback_path
from grader.results.result import GRADED, Result

SHORT = 2**16  # candidate secrets tried: a short seed space, searched in a second


def _kernel_seed(secret: int, student: str) -> int:
    """What the kernel's NumPy sees of its seed (``np.random.seed(seed % 2**32)``)."""
    return seeds.keyed(secret, student, NB, "") % 2**32


def _old_kernel_seed(secret: int, student: str) -> int:  # before issue 32
    return zlib.crc32(f"{secret}:{student}:{NB}:".encode())


def _recovered(leaked: dict, derive) -> list[int]:
    """Every secret of the short space that gives each student's leaked seed."""
    return [
        secret
        for secret in range(SHORT)
        if all(derive(secret, student) == seed for student, seed in leaked.items())
    ]


def test_a_new_out_s_secret_is_long_and_a_short_search_recovers_nothing(tmp_path):
    """A new OUT draws 256 bits; the seeds two students' kernels see are HMAC-SHA256 of it:
    no secret of a short space gives them. The same search finds a short secret under the
    old derivation (crc32 of the secret) and under the new one: the search works."""
    secret = outfolder.settle_seed(tmp_path, None)
    assert secret >= 2**128 and outfolder.recorded_seed(tmp_path) == secret
    leaked = {s: _kernel_seed(secret, s) for s in ("ada", "bo")}
    assert _recovered(leaked, _kernel_seed) == []
    assert _recovered(leaked, _old_kernel_seed) == []
    short = 40_503
    for derive in (_kernel_seed, _old_kernel_seed):
        assert _recovered({s: derive(short, s) for s in ("ada", "bo")}, derive) == [short]


def test_seeds_differ_by_student_notebook_and_use():
    secret = 2**200 + 7
    drawn = {
        seeds.keyed(secret, s, nb, use)
        for s in ("ada", "bo")
        for nb in (NB, "02_projections")
        for use in ("", "softmax")
    }
    assert len(drawn) == 8 and all(0 <= d < 2**64 for d in drawn)
    assert seeds.keyed(secret, "ada", NB, "") == seeds.keyed(secret, "ada", NB, "")


def test_the_kernel_s_seed_is_the_keyed_hash_of_out_s_secret(graded):
    """The leak reaches grades.csv, as any error text of an answer cell run before a hidden
    input would; what it shows is the keyed hash, not the old crc32 of the secret."""
    _, out, _, rows, _, _ = graded
    secret = outfolder.recorded_seed(out)
    message = next(r["message"] for r in rows if r["student"] == "seed_leak" and
                   r["exercise"] == "softmax")  # fmt: skip
    leaked = int(re.search(r"SEED=(\d+)", message).group(1))
    assert leaked == _kernel_seed(secret, "seed_leak")
    assert leaked != _old_kernel_seed(secret, "seed_leak")


def test_entries_that_are_no_student_are_listed_with_their_reason(graded):
    """A hidden folder, a ``__`` folder and a loose file: in the run's output and in the
    report, each with why it was not graded; none of them is graded as a student."""
    _, out, _, rows, _, stdout = graded
    report = (out / "report" / "index.html").read_text()
    for name, reason in IGNORED.items():
        for said in (stdout, report):
            line = next((x for x in said.splitlines() if name in x), "")
            assert reason in line, (name, line)
        assert not any(r["student"] == name for r in rows), name


def test_ids_with_control_characters_are_ignored_and_printed_escaped(graded):
    """Through the real CLI run (issue 46): each id holding ESC, OSC or CR is listed as
    ignored with why, escaped, in the run's output; none reaches the terminal raw or is a
    row of grades.csv or totals.csv. The honest ``loose.txt`` line beside them is as ever."""
    _, out, _, rows, _, stdout = graded
    for shown in CONTROL_IDS.values():
        assert f"{shown}: its name holds a control character" in stdout, shown
    assert "ignored in " in stdout and "loose.txt: not a folder or a zip" in stdout
    assert not {"\x1b", "\x07", "\r"} & set(stdout)
    totals = (out / "totals.csv").read_bytes() + (out / "grades.csv").read_bytes()
    assert not {r["student"] for r in rows} & set(CONTROL_IDS) and b"FAKE LINE" not in totals


def test_ids_one_file_name_would_merge_get_a_page_each(graded):
    _, out, _, _, _, _ = graded
    pages = [feedback_path(out, student) for student in COLLIDING]
    assert len(set(pages)) == len(COLLIDING)
    for student, page in zip(COLLIDING, pages, strict=True):
        assert f"Feedback for {student}</h1>" in page.read_text(), page


def test_feedback_file_names_are_one_per_id(tmp_path):
    """Ids of any characters (a space, a newline, a backslash, a slash, a dot name, a
    lookalike of an escaped name) never share a file; safe ids keep their own name."""
    ids = ["col a", "col_a", "col\na", "col\\a", "col/a", "..", ".", "", "é", "col_a~x",
           "col_a~" + "0" * 16, "Ada", "ada"]  # fmt: skip
    pages = [feedback_path(tmp_path, s) for s in ids]
    assert len(set(pages)) == len(ids)
    assert all(p.parent == tmp_path / "feedback" and p.suffix == ".html" for p in pages)
    assert feedback_path(tmp_path, "col_a").name == "col_a.html"
    assert feedback_path(tmp_path, "é").name == "é.html"


def test_ids_a_case_insensitive_disk_would_merge_get_a_page_and_folder_each(tmp_path):
    """macOS's and Windows' disks (and a zip unpacked there) take ``Ann`` and ``ann`` for one
    name, ``ς`` for ``σ``, ``ı`` for ``i``, a decomposed ``é`` for a composed one: every id
    gets its own page and folder there too, each page names its student, and a lower-case id
    keeps its own name."""
    ids = ["ann", "Ann", "ANN", "σ", "ς", "i", "ı", "ss", "ß", "é", "e\u0301"]
    pages = [feedback_path(tmp_path, s).name for s in ids]
    folders = [annotated.page_path(tmp_path, s, NB).parent.name for s in ids]
    for names in (pages, folders):
        for disk in (str.casefold, str.upper):  # macOS folds case, Windows upper-cases
            seen = {disk(unicodedata.normalize("NFC", name)) for name in names}
            assert len(seen) == len(ids), (disk, names)
    kept = ("ann", "σ", "é")
    assert [feedback_path(tmp_path, s).name for s in kept] == [f"{s}.html" for s in kept]
    cells = {"notebook": NB, "exercise": "softmax", "points": "1", "max_points": "2"}
    rows = [{"student": s, **cells, "message": "", "comment": "", "by_hand": ""} for s in ids]
    results = [Result(s, NB, GRADED, (), flags=(), notes=(), sandboxed=True) for s in ids]
    report.write_feedback(tmp_path, rows, results, {})
    for student in ids:
        assert f"Feedback for {student}</h1>" in feedback_path(tmp_path, student).read_text()
