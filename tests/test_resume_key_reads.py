"""The resume key covers exactly what grading a notebook reads (issue 51), on a copy of the
checkout's grader/, attnlib/ and solutions (no kernel runs): an edit to a module no
notebook of the batch imports reuses every result; an edit to one a check imports, even
through another module, regrades exactly the notebooks whose checks import it."""

import shutil

import pytest

from grader.batch import reads
from grader.batch.job import code_fingerprint
from grader.course import REPO_ROOT

BATCH = ("01_soft_lookup", "10_real_text")


@pytest.fixture
def tree(tmp_path):
    for top in ("grader", "attnlib"):
        shutil.copytree(
            REPO_ROOT / top, tmp_path / top, ignore=shutil.ignore_patterns("__pycache__")
        )
    for notebook in BATCH:
        shutil.copytree(REPO_ROOT / "solutions" / notebook, tmp_path / "solutions" / notebook)
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "real_text.pt").write_bytes(b"weights")
    return tmp_path


def _keys(tree):
    return {notebook: code_fingerprint(tree, notebook) for notebook in BATCH}


def _edit(path, line="# an edit\n"):
    path.write_text(path.read_text() + line)


def _changed(tree, before):
    return {n for n, key in _keys(tree).items() if key != before[n]}


def test_an_edit_no_notebook_of_the_batch_reads_reuses_every_result(tree):
    before = _keys(tree)
    for path in ("attnlib/cost.py", "attnlib/saturation.py", "grader/hidden/nb05_causal_mask.py",
                 "attnlib/checks/nb05_causal_mask.py"):  # fmt: skip
        _edit(tree / path)
    assert _changed(tree, before) == set()


def test_an_edit_a_notebook_reads_regrades_exactly_its_notebooks(tree):
    before = _keys(tree)
    _edit(tree / "attnlib/patterns.py")  # 10's solution imports it; 01 never does
    assert _changed(tree, before) == {"10_real_text"}
    before = _keys(tree)
    _edit(tree / "grader/hidden/nb01_soft_lookup.py")  # 01's hidden checks
    assert _changed(tree, before) == {"01_soft_lookup"}
    before = _keys(tree)
    _edit(tree / "data/real_text.pt")  # 10 loads data (attnlib.realtext calls data_file)
    assert _changed(tree, before) == {"10_real_text"}
    before = _keys(tree)
    _edit(tree / "attnlib/checks/_core.py")  # every check imports it
    assert _changed(tree, before) == set(BATCH)


def test_a_module_a_check_imports_through_another_counts_for_that_notebook(tree):
    _edit(tree / "attnlib/checks/nb01_soft_lookup.py", "from attnlib import saturation\n")
    _edit(tree / "attnlib/saturation.py", "from .cost import time_call\n")
    before = _keys(tree)
    _edit(tree / "attnlib/cost.py")  # 01's check imports saturation, which imports cost
    assert _changed(tree, before) == {"01_soft_lookup"}
    assert tree / "attnlib/cost.py" in reads.notebook_files(tree, "01_soft_lookup")


def test_a_moved_file_and_a_grader_module_at_any_depth_make_a_new_key(tree):
    before = _keys(tree)
    module = tree / "grader" / "run" / "deep.py"
    module.write_text("A = 1\n")
    assert _changed(tree, before) == set(BATCH)
    before = _keys(tree)
    module.rename(tree / "grader" / "deep.py")
    assert _changed(tree, before) == set(BATCH)
    before = _keys(tree)
    (tree / "attnlib" / "__pycache__").mkdir(exist_ok=True)
    (tree / "attnlib" / "__pycache__" / "cost.cpython-311.pyc").write_bytes(b"compiled")
    assert _changed(tree, before) == set()
