"""`python -m grader bundle --out dist`: the zip students download.

It holds the release notebooks, the helper package ``attnlib``, ``data/``, ``environment.yml``,
a ``pyproject.toml`` that installs ``attnlib`` only (same pins as the course's), and a short
student README. It never holds ``solutions/``, ``grader/`` (hidden checks), tests, gradebooks
or anything else from the instructor's side: files are taken from an allow-list, and the
finished zip is scanned for solution and hidden-test markers before it is kept.
The zip is byte-identical on a rerun (fixed timestamps, sorted entries).
"""

import io
import re
import tomllib
import zipfile
from pathlib import Path

from grader.cli import UserError
from grader.course import RELEASE, REPO_ROOT, assignments

NAME = "attention-step-by-step"
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

README = """# Attention, step by step: student materials

Short Jupyter notebooks that build attention from a soft lookup up to the full
mechanism and the maps of a trained model. Work through them in order, by their number:
`notebooks/01_soft_lookup` first.

## Set up (once)

With Python 3.11 and pip:

    python -m venv .venv
    .venv/bin/pip install -e .
    .venv/bin/python -m attnlib.setup_lab
    .venv/bin/jupyter lab notebooks

With conda: `conda env create -f environment.yml && conda activate attention-course`,
then `python -m attnlib.setup_lab` and `jupyter lab notebooks`.

No GPU is needed; every notebook runs in well under a minute on a laptop.

## Working on an exercise

Each exercise has a task, hints under "Hint", an answer cell (replace
`raise NotImplementedError()` with your code), and a check cell: run it, and it says in one
line what is wrong, or that the visible checks passed. Hidden checks run when your notebook
is graded, on other inputs, so make your function general. Press **Validate** in the toolbar
before you hand in.

## Handing in

Hand in each notebook under its own file name (for example `01_soft_lookup.ipynb`), without
renaming it. Keep your code in the answer cells: only those are graded.
"""


def add_arguments(parser):
    parser.add_argument("--out", type=Path, default=Path("dist"), help="output folder")


def _student_pyproject() -> bytes:
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]
    deps = "".join(f'    "{d}",\n' for d in project["dependencies"])
    return (
        '[build-system]\nrequires = ["setuptools>=68"]\nbuild-backend = "setuptools.build_meta"\n\n'
        f'[project]\nname = "{NAME}-student"\nversion = "{project["version"]}"\n'
        f'description = "{project["description"]}"\n'
        f'requires-python = "{project["requires-python"]}"\ndependencies = [\n{deps}]\n\n'
        '[tool.setuptools.packages.find]\ninclude = ["attnlib*"]\n\n'
        '[tool.setuptools.package-data]\nattnlib = ["*.mplstyle"]\n'
    ).encode()


def files() -> dict[str, bytes]:
    """{path in the zip: content}, from the allow-list."""
    found: dict[str, bytes] = {}
    for a in assignments():
        path = RELEASE / a / f"{a}.ipynb"
        if not path.is_file():
            raise UserError(f"{path} is missing: run `make release` first")
        found[f"notebooks/{a}/{a}.ipynb"] = path.read_bytes()
    for folder in SHIPPED_DIRS:
        for path in sorted((REPO_ROOT / folder).rglob("*")):
            rel = path.relative_to(REPO_ROOT).as_posix()
            if path.is_file() and not SKIP.search(rel):
                found[rel] = path.read_bytes()
    found["environment.yml"] = (REPO_ROOT / "environment.yml").read_bytes()
    found["pyproject.toml"] = _student_pyproject()
    found["README.md"] = README.encode()
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
    contents = files()
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


def run(args) -> int:
    target = build(args.out)
    with zipfile.ZipFile(target) as zf:
        count = len(zf.namelist())
    print(f"wrote {target} ({count} files, {target.stat().st_size / 1e6:.1f} MB)")
    return 0
