"""`make bundle`: the student zip holds what students need and nothing secret, its notebooks
come from a fresh release of solutions/ (never notebooks/ as it stands), the commands its
README gives work in the unzipped folder, and its README's install (into a fresh venv) is the
learner's set only, with Validate using the course's settings (as on the workshop server).

The bundle is built once, from a copy of the course whose notebooks/ holds a typed answer
(as a `make lab` session used to leave there); the tests read that zip.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import urllib.parse
import urllib.request
import zipfile
from pathlib import Path

import nbformat
import pytest
from exercises.catalogue import visible_check
from fixtures.batches import Batch
from fixtures.validate import ANSI
from test_browser import COPY_IGNORE, Lab
from traitlets.config import PyFileConfigLoader

from attnlib.checks import CheckFailed
from attnlib.lab import INSTRUCTOR_PLUGINS
from grader.commands.bundle import FORBIDDEN, NAME, SETUP_MARKERS, problems, setup_steps
from grader.course import RELEASE, REPO_ROOT, assignments, source_path
from grader.hidden import catalogue, compile_answer
from hub.instructor import write_profiles
from hub.settings import Settings

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
        "nbgrader_config.py",
        "attnlib/__init__.py",
        "attnlib/paths.py",
        "attnlib/lab/__init__.py",
        "attnlib/lab/__main__.py",
        "attnlib/lab/workspace.py",
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
    from grader.commands import bundle

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
        ".venv/bin/pip install -c constraints.txt -e .",
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


# --- the learner's install, and Validate with the course's settings ---------------------------

INSTRUCTOR_ONLY = ("jupyterhub", "jupyterhub_idle_culler", "jupyter_archive", "dask",
                   "distributed", "playwright", "pytest", "ruff")  # fmt: skip
LOAD_CONFIG = (  # how `nbgrader validate` and the Lab's Validate read their settings
    "from nbgrader.apps import NbGrader; app = NbGrader(); app.load_config_file(); "
    "print(app.config.Execute.timeout, app.config.Validator.width)"
)


def _validate_settings(folder: Path) -> list:
    config = PyFileConfigLoader("nbgrader_config.py", path=str(folder)).load_config()
    return [config.Execute.timeout, config.Validator.width]


@pytest.fixture(scope="module")
def longest(solution):
    """(submission, line): the longest line any visible check prints for an entry of the
    mistake catalogue, and a submission (release + solution answers) whose Validate prints it."""
    found = []
    for nb in assignments():
        for exercise, spec in catalogue(nb).items():
            for mistake in (m for m in spec.mistakes if m.caught_by != "hidden"):
                try:
                    visible_check(nb, exercise)(compile_answer(mistake.source, exercise,
                                                               solution(nb)))  # fmt: skip
                except CheckFailed as err:
                    found += [(len(ln), ln, nb, exercise, mistake) for ln in str(err).split("\n")]
    _, line, nb, exercise, mistake = max(found, key=lambda row: row[0])
    assert len(line) > 87, "nbgrader's default width would hold every message: pick a longer"
    return Batch(nb, ((exercise, mistake),)).submission(demos=False), line


@pytest.fixture(scope="module")
def installed(built, tmp_path_factory):
    """The unzipped bundle with a fresh `.venv` made as its README says (with this machine's
    pip settings: torch comes from the local wheel folder). Without compiling every module
    to bytecode at install (about 40 s): Python writes it for what the tests import."""
    _, zip_path, _, _ = built
    top = tmp_path_factory.mktemp("installed")
    with zipfile.ZipFile(zip_path) as zf:
        zf.extractall(top)
    folder = top / NAME
    subprocess.run([sys.executable, "-m", "venv", str(folder / ".venv")], check=True, timeout=300)
    install = [folder / ".venv/bin/pip", "install", "--quiet", "-c", "constraints.txt", "-e", "."]
    env = {**os.environ, "PIP_COMPILE": "0"}  # pip install --compile, off
    pip = subprocess.run(install, cwd=folder, env=env, capture_output=True, text=True,
                         timeout=1200)  # fmt: skip
    assert pip.returncode == 0, pip.stderr[-3000:]
    yield folder
    shutil.rmtree(folder / ".venv")  # 1.4 GB, torch mostly


def _run(folder: Path, *args: str, env=None) -> subprocess.CompletedProcess:
    return subprocess.run([folder / ".venv/bin/python", *args], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=600)  # fmt: skip


def _press_validate(server: Lab, path: str) -> dict:
    """What the Lab's Validate button asks its server (nbgrader's validate handler)."""
    url = f"{server.url}/assignments/validate?{urllib.parse.urlencode({'path': path})}"
    auth = {"Authorization": f"token {server.token}"}
    request = urllib.request.Request(url, method="POST", headers=auth)
    with urllib.request.urlopen(request, timeout=600) as response:
        return json.loads(response.read())


def test_the_bundle_carries_the_course_validate_settings(built, tmp_path):
    """The zip's nbgrader_config.py gives Validate the repo's values (not nbgrader's 30 s
    cells and 87-character lines), and only Validate's: no course folders of the repo."""
    _, _, contents, _ = built
    (tmp_path / "nbgrader_config.py").write_bytes(contents["nbgrader_config.py"])
    assert _validate_settings(tmp_path) == _validate_settings(REPO_ROOT)
    assert _validate_settings(REPO_ROOT) != [30, 90], "the course keeps nbgrader's defaults"
    text = contents["nbgrader_config.py"].decode()
    assert "CourseDirectory" not in text and "GraderSettings" not in text, text


def test_the_student_readme_lists_every_notebook(built):
    _, _, contents, _ = built
    readme = contents["README.md"].decode()
    assert [a for a in assignments() if f"`{a}`" not in readme] == []


def test_the_learner_install_has_the_tested_versions(installed):
    """The README's set-up installs within constraints.txt: no package newer than tested."""
    pins = dict(line.split("==") for line in (installed / "constraints.txt").read_text().split()
                if "==" in line)  # fmt: skip
    freeze = _run(installed, "-m", "pip", "list", "--format=freeze").stdout.split()
    got = {name.lower().replace("_", "-"): version.split("+")[0]  # torch's "+cpu"
           for name, _, version in (line.partition("==") for line in freeze)}  # fmt: skip
    pinned = {name.lower().replace("_", "-"): version for name, version in pins.items()}
    venv_own = {"pip", "setuptools"}  # what `python -m venv` put there, not the course's install
    off = {n: (v, pinned[n]) for n, v in got.items()
           if n in pinned and n not in venv_own and v != pinned[n]}  # fmt: skip
    assert off == {}, f"installed (version, pin): {off}"


def test_the_learner_install_has_no_hub_dask_or_test_tools(installed):
    found = _run(installed, "-c", f"from importlib.util import find_spec as f; "
                 f"print([m for m in {INSTRUCTOR_ONLY} if f(m)])")  # fmt: skip
    assert found.stdout.strip() == "[]", f"in the learner's install: {found.stdout}{found.stderr}"
    for module in ("jupyterhub", "dask"):  # as the issue says it: importing them fails
        assert "ModuleNotFoundError" in _run(installed, "-c", f"import {module}").stderr, module
    where = _run(installed, "-c", "import attnlib, nbgrader, torch; print(attnlib.__file__)")
    assert where.stdout.strip() == str(installed / "attnlib" / "__init__.py"), where.stderr
    assert _run(installed, "-c", LOAD_CONFIG).stdout.split() == [
        str(v) for v in _validate_settings(REPO_ROOT)
    ]


def test_validate_in_the_learner_install_shows_the_longest_message_whole(
    installed, longest, tmp_path
):
    """`nbgrader validate` (the CLI) and the Lab's Validate button (its API), in the fresh
    install: the longest message any visible check prints for the catalogue comes out whole."""
    nb, line = longest
    path = installed / "validate" / "longest.ipynb"
    path.parent.mkdir()
    nbformat.write(nb, path)
    out = _run(installed, "-m", "nbgrader", "validate", str(path.relative_to(installed)))
    assert " ".join(line.split()) in " ".join(out.stdout.split()), out.stdout[-3000:]

    server = Lab([str(installed / ".venv/bin/python"), "-m", "attnlib.lab"], installed, tmp_path)
    try:
        work = server.root / "longest.ipynb"
        nbformat.write(nb, work)
        answer = _press_validate(server, "longest.ipynb")
    finally:
        server.stop()
    assert answer["success"], answer["value"]
    errors = [ANSI.sub("", f["raw_error"]) for f in answer["value"].get("failed", [])]
    assert any(" ".join(line.split()) in " ".join(e.split()) for e in errors), errors


def test_the_hub_student_profile_validates_with_the_course_settings(longest, tmp_path):
    """The attendees' profile (JUPYTER_CONFIG_PATH on the hub) gives `nbgrader validate` the
    course's settings, from any folder: the longest message comes out whole."""
    settings = Settings(root=tmp_path / "root")
    write_profiles(settings)
    env = dict(os.environ, JUPYTER_CONFIG_PATH=str(settings.profiles / "student"))
    nb, line = longest
    path = tmp_path / "home" / "longest.ipynb"
    path.parent.mkdir()
    nbformat.write(nb, path)
    loaded = subprocess.run([sys.executable, "-c", LOAD_CONFIG], cwd=path.parent, env=env,
                            capture_output=True, text=True, timeout=120)  # fmt: skip
    assert loaded.stdout.split() == [str(v) for v in _validate_settings(REPO_ROOT)], loaded
    out = subprocess.run([sys.executable, "-m", "nbgrader", "validate", path.name],
                         cwd=path.parent, env=env, capture_output=True, text=True,
                         timeout=600).stdout  # fmt: skip
    assert " ".join(line.split()) in " ".join(out.split()), f"cut or missing: {out[-3000:]}"
