"""`python -m grader bundle --out dist`: the zip students download.

It holds the release notebooks, the helper package ``attnlib``, ``data/``, ``environment.yml``
(the learner's environment), a ``pyproject.toml`` that installs ``attnlib`` only (the course's
dependencies, the learner's set: no grader, hub or test tools), an ``nbgrader_config.py`` with
Validate's settings (:func:`validate_config`, which the workshop server's attendee profile
carries too) and a short student README. The notebooks come from a fresh release of
``solutions/`` made for the zip, never from ``notebooks/`` as it stands (where an answer typed
while trying an exercise could sit). It never holds ``solutions/``, ``grader/`` (hidden
checks), tests, gradebooks or anything else from the instructor's side: files are taken from
an allow-list, and the finished zip is scanned for solution and hidden-test markers before
it is kept. The zip is byte-identical on a rerun (fixed timestamps, sorted entries).
"""

import argparse
import io
import json
import logging
import re
import tempfile
import tomllib
import zipfile
from pathlib import Path

from traitlets.config.loader import PyFileConfigLoader

from grader.configfile import config_file
from grader.course import RELEASE, REPO_ROOT, assignments
from grader.errors import UserError
from grader.release import release
from grader.settings import CONFIG_FILE

NAME = "attention-step-by-step"
log = logging.getLogger(__name__)
SHIPPED_DIRS = ("attnlib", "data")
SKIP = re.compile(r"(__pycache__|\.ipynb_checkpoints|\.egg-info|\.pyc$|/\.)")
# Text that must never reach students (solutions, hidden tests, the grader, the gradebook).
FORBIDDEN = [
    b"### BEGIN SOLUTION",
    b"### BEGIN HIDDEN TESTS",
    b"from grader",
    b"import grader",
    b"grader.hidden",
    b"gradebook.db",
    b"SQLite format 3",
]
FORBIDDEN_PATHS = re.compile(
    r"(^|/)(solutions|grader|tests|bench|\.git|autograded|submitted)"
    r"(/|$)|gradebook|\.db$"
)

# The sections of the course's nbgrader_config.py that Validate reads: its per-cell time limit
# (nbgrader's Execute) and the width `nbgrader validate` cuts its lines at (Validator).
VALIDATE_SECTIONS = ("Execute", "Validator")

# The set-up steps and the list of notebooks are the main README's (one source): the blocks
# between these markers.
SETUP_MARKERS = ("<!-- attendee-setup -->", "<!-- /attendee-setup -->")
NOTEBOOK_MARKERS = ("<!-- notebooks -->", "<!-- /notebooks -->")

README = """# Attention, step by step: student materials

Short Jupyter notebooks that build attention up from a soft lookup, one idea each. Work
through them in order, by their number:

{notebooks}

## Set up (once), then open the course

{setup}

No GPU is needed; every notebook runs in well under a minute on a laptop.

## Your own copy

The first launch copies the notebooks from `notebooks/` into `work/`, and JupyterLab opens
`work/`: that is where you type, and `notebooks/` stays as it came. To open the course again,
run the last set-up command again. If you get a newer version of the course (unzip it over
this folder), bring it into your copy without losing your answers:

    .venv/bin/python -m attnlib.lab update

To start one exercise again, or a whole notebook (your old file is kept in `work/backups/`):

    .venv/bin/python -m attnlib.lab reset 01_soft_lookup softmax
    .venv/bin/python -m attnlib.lab reset 01_soft_lookup

## Working on an exercise

Each exercise has a task, hints under "Hint", an answer cell (replace
`raise NotImplementedError()` with your code), and a check cell: run it, and it says in one
line what is wrong, or that the visible checks passed. Hidden checks run when your notebook
is graded, on other inputs, so make your function general. Press **Validate** in the toolbar
before you hand in.

## Handing in

Hand in each notebook from `work/` under its own file name (for example
`01_soft_lookup.ipynb`), without renaming it. Keep your code in the answer cells: only those
are graded.
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", type=Path, default=Path("dist"), help="output folder")


def _student_pyproject() -> bytes:
    pyproject = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())
    project = pyproject["project"]
    data = pyproject["tool"]["setuptools"]["package-data"]["attnlib"]  # the learner's files
    deps = "".join(f'    "{d}",\n' for d in project["dependencies"])
    return (
        '[build-system]\nrequires = ["setuptools>=68"]\nbuild-backend = "setuptools.build_meta"\n\n'
        f'[project]\nname = "{NAME}-student"\nversion = "{project["version"]}"\n'
        f'description = "{project["description"]}"\n'
        f'requires-python = "{project["requires-python"]}"\ndependencies = [\n{deps}]\n\n'
        '[tool.setuptools.packages.find]\ninclude = ["attnlib*"]\n\n'
        f"[tool.setuptools.package-data]\nattnlib = {json.dumps(data)}\n"
    ).encode()


def validate_config() -> dict[str, dict[str, object]]:
    """``{section: {name: value}}`` giving Validate the course's settings, read from the
    course's nbgrader_config.py (never retyped: the bundle and the hub use these)."""
    config = PyFileConfigLoader(CONFIG_FILE, path=str(REPO_ROOT)).load_config()
    return {section: dict(sorted(config[section].items())) for section in VALIDATE_SECTIONS}


def _student_nbgrader_config() -> bytes:
    header = "Validate's settings, the course's own (written by `python -m grader bundle`)."
    return config_file(header, validate_config()).encode()


def readme_block(markers: tuple[str, str], readme: str | None = None) -> str:
    """The block of the main README between ``markers``."""
    text = (REPO_ROOT / "README.md").read_text() if readme is None else readme
    start, end = markers
    if start not in text or end not in text:
        raise UserError(f"README.md has no {start} ... {end} block")
    return text.split(start, 1)[1].split(end, 1)[0].strip()


def setup_steps(readme: str | None = None) -> str:
    """The attendees' set-up steps: the marked block of the main README."""
    return readme_block(SETUP_MARKERS, readme)


def student_readme() -> str:
    return README.format(setup=setup_steps(), notebooks=readme_block(NOTEBOOK_MARKERS))


def fresh_release(folder: Path) -> dict[str, bytes]:
    """{notebook: bytes} of a release of ``solutions/`` made in ``folder``."""
    release(folder)
    return {a: (folder / a / f"{a}.ipynb").read_bytes() for a in assignments()}


def _stale(notebooks: dict[str, bytes]) -> list[str]:
    """Release notebooks in ``notebooks/`` that differ from the fresh release."""
    return [
        a for a, data in notebooks.items()
        if not (RELEASE / a / f"{a}.ipynb").is_file()
        or (RELEASE / a / f"{a}.ipynb").read_bytes() != data
    ]  # fmt: skip


def files(notebooks: dict[str, bytes]) -> dict[str, bytes]:
    """{path in the zip: content}, from the allow-list and the fresh ``notebooks``."""
    found = {f"notebooks/{a}/{a}.ipynb": data for a, data in notebooks.items()}
    for folder in SHIPPED_DIRS:
        for path in sorted((REPO_ROOT / folder).rglob("*")):
            rel = path.relative_to(REPO_ROOT).as_posix()
            if path.is_file() and not SKIP.search(rel):
                found[rel] = path.read_bytes()
    for name in ("environment.yml", "constraints.txt"):  # the set-up installs within the pins
        found[name] = (REPO_ROOT / name).read_bytes()
    found["pyproject.toml"] = _student_pyproject()
    found["nbgrader_config.py"] = _student_nbgrader_config()
    found["README.md"] = student_readme().encode()
    return found


def problems(contents: dict[str, bytes]) -> list[str]:
    """Everything in ``contents`` that must not reach students."""
    found = []
    for name, data in contents.items():
        if FORBIDDEN_PATHS.search(name):
            found.append(f"{name}: instructor-only path")
        for marker in FORBIDDEN:
            if marker in data:
                found.append(f"{name}: contains {marker.decode()!r}")
    return found


def build(out: Path) -> Path:
    with tempfile.TemporaryDirectory(prefix="bundle-release-") as tmp:
        notebooks = fresh_release(Path(tmp))
    stale = _stale(notebooks)
    if stale:
        log.warning(
            "notebooks/ differs from solutions/ for %s; the zip has the fresh release (run "
            "`make release` to update notebooks/)",
            ", ".join(stale),
        )
    contents = files(notebooks)
    bad = problems(contents)
    if bad:
        raise UserError(f"refusing to bundle: {bad[0]}")
    out.mkdir(parents=True, exist_ok=True)
    target = out / f"{NAME}.zip"
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
        for name in sorted(contents):
            info = zipfile.ZipInfo(f"{NAME}/{name}", date_time=(2024, 1, 1, 0, 0, 0))
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, contents[name])
    target.write_bytes(buffer.getvalue())
    return target


def run(args: argparse.Namespace) -> int:
    target = build(args.out)
    with zipfile.ZipFile(target) as zf:
        count = len(zf.namelist())
    print(f"wrote {target} ({count} files, {target.stat().st_size / 1e6:.1f} MB)")
    return 0
