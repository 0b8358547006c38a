"""What the grader trusts about each notebook, built from ``solutions/`` only.

The release a submission is rebuilt from is generated afresh by nbgrader from ``solutions/``
into a cache keyed by the hash of its inputs (``GraderSettings.release_cache``), never read
from ``notebooks/``, which a learner or JupyterLab may have edited. :func:`model` turns one
notebook into plain data (:class:`Trusted`) that a job carries to its worker, so a worker
needs no course folder at all.
"""

import hashlib
import importlib.machinery
import importlib.util
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from grader import course, release
from grader.course import grade_id, nbgrader_meta
from grader.hidden import shortcuts
from grader.intake import scan
from grader.judging.judge import verify_calls
from grader.release import METADATA_KEY as RELEASE_KEY
from grader.run import needs


@dataclass(frozen=True)
class TestCell:
    id: str
    exercise: str
    points: float
    hidden: bool
    source: str  # visible: the release source; hidden: the instructor's source
    verifies: tuple[tuple[str, str], ...]  # hidden: ((exercise, learner's function name), ...)


@dataclass(frozen=True)
class Trusted:
    notebook: str
    release: str  # the trusted release notebook, as JSON
    version: str  # its release version
    exercises: tuple[course.Exercise, ...]  # every answer cell's
    tests: tuple[TestCell, ...]  # every test cell's, in notebook order
    imports: str  # source of the trusted imports cell
    modules: dict[str, str]  # {name: module} the imports cell binds
    source_cells: dict[str, str]  # {grade_id: instructor's source}
    shortcuts: dict[str, dict[str, list[str]]]  # the tripwire's {exercise: {prefix: names}}
    demo: frozenset[int] = frozenset()  # indexes of the release's demo cells (grader.run.needs)
    module_names: frozenset[str] = frozenset()  # names the imports cell binds to modules
    stubs: dict[str, str] = field(default_factory=dict)  # checked answers' release sources


def _inputs_hash() -> str:
    import nbgrader

    h = hashlib.sha256(nbgrader.__version__.encode())
    for path in [
        *sorted(course.SOLUTIONS.glob("*/*.ipynb")),
        course.REPO_ROOT / "nbgrader_config.py",
        Path(release.__file__),
    ]:
        h.update(path.name.encode() + path.read_bytes())
    return h.hexdigest()[:20]


def release_folder(cache: str) -> Path:
    """The trusted release of the current ``solutions/``, generated once per content hash."""
    folder = Path(cache) / _inputs_hash()
    if (folder / ".complete").is_file():
        return folder
    folder.parent.mkdir(parents=True, exist_ok=True)
    fresh = Path(tempfile.mkdtemp(prefix="building-", dir=folder.parent))
    release.release(fresh)
    (fresh / ".complete").touch()
    try:
        os.replace(fresh, folder)
    except OSError:  # built meanwhile by another run: keep that one
        shutil.rmtree(fresh, ignore_errors=True)
    return folder


def model(notebook: str, folder: Path) -> Trusted:
    """The trusted facts about ``notebook`` (its release read from ``folder``)."""
    text = (folder / notebook / f"{notebook}.ipynb").read_text()
    base = nbformat.reads(text, as_version=4)
    source = nbformat.read(course.source_path(notebook), as_version=4)
    source_cells = {gid: c.source for c in source.cells if (gid := grade_id(c))}
    release_cells = {grade_id(c): c for c in base.cells}
    exercises = course.exercises(notebook)
    tests = []
    for ex in exercises:
        for gid in ex.test_ids:
            src = source_cells[gid]
            verifies = tuple(verify_calls(src)) if "HIDDEN TESTS" in src else ()
            points = float(nbgrader_meta(release_cells[gid])["points"])
            tests.append(
                TestCell(
                    gid,
                    ex.grade_id,
                    points,
                    bool(verifies),
                    src if verifies else release_cells[gid].source,
                    verifies,
                )
            )
    order = [grade_id(c) for c in base.cells]
    tests.sort(key=lambda t: order.index(t.id))
    imports = "\n".join(c.source for c in base.cells if grade_id(c) == "imports")
    return Trusted(
        notebook,
        text,
        base.metadata.get(RELEASE_KEY, {}).get("version", ""),
        tuple(exercises),
        tuple(tests),
        imports,
        scan.module_names(imports),
        source_cells,
        shortcuts(),
        frozenset(i for i, c in enumerate(base.cells) if needs.is_demo(c)),
        frozenset(n for n, full in scan.module_names(imports).items() if _is_module(full)),
        {ex.grade_id: release_cells[ex.grade_id].source for ex in exercises if ex.test_ids},
    )


def _is_module(name: str) -> bool:
    """Whether the (trusted) import path ``name`` is a module rather than an object in one.
    Found on disk, part by part, without importing anything: ``find_spec("torch.nn")``
    would import torch into the grader's main process (seconds, for a yes or no)."""
    top, *parts = name.split(".")
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return False
    for part in parts:
        if spec is None or spec.submodule_search_locations is None:  # "numpy.pi": not a package
            return False
        spec = importlib.machinery.PathFinder.find_spec(part, spec.submodule_search_locations)
    return spec is not None


def models(notebooks: list[str], cache: str) -> dict[str, Trusted]:
    folder = release_folder(cache)
    return {a: model(a, folder) for a in notebooks}
