"""`make bundle`: the student zip holds what students need and nothing secret."""

import subprocess
import sys
import zipfile

from grader.bundle import FORBIDDEN, NAME, problems
from grader.course import REPO_ROOT, assignments, source_path


def test_bundle_has_the_student_materials_and_nothing_secret(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "grader", "bundle", "--out", str(tmp_path)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    with zipfile.ZipFile(tmp_path / f"{NAME}.zip") as zf:
        contents = {n.removeprefix(f"{NAME}/"): zf.read(n) for n in zf.namelist()}
    for a in assignments():
        assert f"notebooks/{a}/{a}.ipynb" in contents
    assert {
        "README.md",
        "environment.yml",
        "pyproject.toml",
        "attnlib/__init__.py",
        "attnlib/paths.py",
    } <= set(contents)
    assert any(name.startswith("data/") for name in contents)
    assert b'include = ["attnlib*"]' in contents["pyproject.toml"]
    # The scan: no instructor path, no solution or hidden-test marker, no solution text.
    assert problems(contents) == []
    assert not any(n.startswith(("solutions/", "grader/", "tests/")) for n in contents)
    blob = b"\n".join(contents.values())
    for marker in FORBIDDEN:
        assert marker not in blob
    for a in assignments():  # the shipped notebook is the release, not the solution
        assert contents[f"notebooks/{a}/{a}.ipynb"] != source_path(a).read_bytes()
    # A rerun is byte-identical.
    first = (tmp_path / f"{NAME}.zip").read_bytes()
    subprocess.run(
        [sys.executable, "-m", "grader", "bundle", "--out", str(tmp_path)],
        cwd=REPO_ROOT,
        check=True,
        capture_output=True,
        timeout=300,
    )
    assert (tmp_path / f"{NAME}.zip").read_bytes() == first


def test_the_scan_catches_secrets():
    assert problems({"grader/hidden/lookup.py": b"x"})
    assert problems({"notebooks/x.ipynb": b'"### BEGIN SOLUTION\\n"'})
    assert problems({"course/gradebook.db": b"SQLite format 3\x00"})
    assert not problems({"attnlib/paths.py": b"def data_dir(): ..."})
