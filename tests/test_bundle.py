"""`make bundle`: the student zip holds what students need and nothing secret, its notebooks
come from a fresh release of solutions/ (never notebooks/ as it stands), and the commands its
README gives work in the unzipped folder.

The bundle is built once, from a copy of the course whose notebooks/ holds a typed answer
(as a `make lab` session used to leave there); the tests read that zip.
"""

import re
import shutil
import subprocess
import sys
import zipfile

import nbformat
import pytest
from test_browser import COPY_IGNORE, Lab

from attnlib.lab import INSTRUCTOR_PLUGINS
from grader.bundle import FORBIDDEN, NAME, SETUP_MARKERS, problems, setup_steps
from grader.course import RELEASE, REPO_ROOT, assignments, source_path

PLANTED = "return 'AN ANSWER TYPED INTO notebooks/'"
FIRST = "01_soft_lookup"


def _bundle(course, out):
    return subprocess.run([sys.executable, "-m", "grader", "bundle", "--out", str(out)],
                          cwd=course, capture_output=True, text=True, timeout=600)  # fmt: skip


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """(course copy, zip path, {name: bytes}, the bundle command's stderr)."""
    course = tmp_path_factory.mktemp("course") / "attention-step-by-step"
    shutil.copytree(REPO_ROOT, course, ignore=COPY_IGNORE)
    edited = course / "notebooks" / FIRST / f"{FIRST}.ipynb"
    nb = nbformat.read(edited, as_version=4)
    answer = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution"))
    answer.source = answer.source.replace("raise NotImplementedError()", PLANTED)
    nbformat.write(nb, edited)
    out = tmp_path_factory.mktemp("dist")
    proc = _bundle(course, out)
    assert proc.returncode == 0, proc.stderr
    with zipfile.ZipFile(out / f"{NAME}.zip") as zf:
        contents = {n.removeprefix(f"{NAME}/"): zf.read(n) for n in zf.namelist()}
    return course, out / f"{NAME}.zip", contents, proc.stderr


def test_bundle_has_the_student_materials_and_nothing_secret(built):
    _, _, contents, _ = built
    for a in assignments():
        assert f"notebooks/{a}/{a}.ipynb" in contents
    assert {
        "README.md",
        "environment.yml",
        "pyproject.toml",
        "attnlib/__init__.py",
        "attnlib/paths.py",
        "attnlib/lab.py",
        "attnlib/workspace.py",
    } <= set(contents)
    assert any(name.startswith("data/") for name in contents)
    assert b'include = ["attnlib*"]' in contents["pyproject.toml"]
    # The scan: no instructor path, no solution or hidden-test marker, no solution text.
    assert problems(contents) == []
    assert not any(n.startswith(("solutions/", "grader/", "tests/", "work/")) for n in contents)
    blob = b"\n".join(contents.values())
    for marker in FORBIDDEN:
        assert marker not in blob
    for a in assignments():  # the shipped notebook is the release, not the solution
        assert contents[f"notebooks/{a}/{a}.ipynb"] != source_path(a).read_bytes()


def test_an_edited_notebooks_folder_never_reaches_the_zip(built):
    course, _, contents, stderr = built
    assert PLANTED.encode() in (course / "notebooks" / FIRST / f"{FIRST}.ipynb").read_bytes()
    assert PLANTED.encode() not in b"\n".join(contents.values())
    for path in sorted(RELEASE.glob("*/*.ipynb")):  # == a fresh release (test_release_sync)
        assert contents[f"notebooks/{path.parent.name}/{path.name}"] == path.read_bytes()
    assert f"notebooks/ differs from solutions/ for {FIRST};" in stderr, stderr


def test_a_rebuild_is_byte_identical(built, tmp_path, monkeypatch):
    """Fixed timestamps and order: the same release gives the same zip. (A fresh release is
    byte-identical to notebooks/, test_release_sync.py checks, so it stands in here rather
    than running nbgrader again.)"""
    from grader import bundle

    _, first, _, _ = built
    committed = {a: (RELEASE / a / f"{a}.ipynb").read_bytes() for a in assignments()}
    monkeypatch.setattr(bundle, "fresh_release", lambda folder: committed)
    again = bundle.build(tmp_path)
    assert again.read_bytes() == first.read_bytes()


def test_the_scan_catches_secrets():
    assert problems({"grader/hidden/lookup.py": b"x"})
    assert problems({"notebooks/x.ipynb": b'"### BEGIN SOLUTION\\n"'})
    assert problems({"course/gradebook.db": b"SQLite format 3\x00"})
    assert not problems({"attnlib/paths.py": b"def data_dir(): ..."})


def test_student_readme_has_the_main_readme_set_up_steps(built):
    """One source: the zip's README carries the main README's marked set-up block verbatim."""
    _, _, contents, _ = built
    readme = contents["README.md"].decode()
    steps = setup_steps()
    main = (REPO_ROOT / "README.md").read_text()
    assert main.count(SETUP_MARKERS[0]) == main.count(SETUP_MARKERS[1]) == 1
    assert steps in readme and steps in main
    commands = re.findall(r"^(\.venv/bin/\S+.*|python3? .*|conda .*)$", steps, re.M)
    assert commands[:3] == [
        "python3 -m venv .venv",
        ".venv/bin/pip install -e .",
        ".venv/bin/python -m attnlib.lab",
    ], commands
    for command in re.findall(r"^ {4}(\.venv/bin/python -m attnlib\.lab .+)$", readme, re.M):
        assert command.split()[3] in ("update", "reset"), command


@pytest.fixture(scope="module")
def unzipped(built, tmp_path_factory):
    _, zip_path, _, _ = built
    folder = tmp_path_factory.mktemp("student")
    with zipfile.ZipFile(zip_path) as zf:
        zf.extractall(folder)
    return folder / NAME


def _in_bundle(folder, *args):
    """`.venv/bin/python -m attnlib.lab ...` in the unzipped folder (its own attnlib)."""
    return subprocess.run([sys.executable, "-m", "attnlib.lab", *args], cwd=folder,
                          capture_output=True, text=True, timeout=120)  # fmt: skip


def test_readme_commands_work_in_the_unzipped_bundle(unzipped):
    where = subprocess.run([sys.executable, "-c", "import attnlib; print(attnlib.__file__)"],
                           cwd=unzipped, capture_output=True, text=True, timeout=60)  # fmt: skip
    assert where.stdout.strip() == str(unzipped / "attnlib" / "__init__.py"), where
    update = _in_bundle(unzipped, "update")
    assert update.returncode == 0 and "made your work folder" in update.stdout, update
    work = unzipped / "work" / FIRST / f"{FIRST}.ipynb"
    assert work.read_bytes() == (unzipped / "notebooks" / FIRST / f"{FIRST}.ipynb").read_bytes()
    reset = _in_bundle(unzipped, "reset", FIRST, "softmax")
    assert reset.returncode == 0 and "`softmax` reset to the release" in reset.stdout, reset
    wrong = _in_bundle(unzipped, "reset", "01_nope")
    assert wrong.returncode == 2 and wrong.stderr.strip().splitlines() == [
        f"error: unknown notebook '01_nope'; known: {', '.join(assignments())}"
    ], wrong.stderr
    assert "python -m attnlib.lab" in _in_bundle(unzipped, "--help").stdout


def test_bundle_launch_hides_the_instructor_tools(unzipped, tmp_path):
    """The bundle's set-up command opens work/ with nbgrader's instructor tools off."""
    server = Lab([sys.executable, "-m", "attnlib.lab"], unzipped, tmp_path)
    try:
        assert server.root.resolve() == (unzipped / "work").resolve(), server.root
        assert set(server.page_config()["disabledExtensions"]) == set(INSTRUCTOR_PLUGINS)
        assert server.status("formgrader") == 404
    finally:
        server.stop()
