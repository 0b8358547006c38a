"""notebooks/ is generated from solutions/ by `make release`, byte for byte."""

import json

from grader.course import RELEASE, SOLUTIONS, assignments
from grader.release import release


def test_release_is_up_to_date(tmp_path):
    fresh = release(tmp_path / "release")
    committed = sorted(RELEASE.glob("*/*.ipynb"))
    assert [p.relative_to(tmp_path / "release") for p in fresh] == [
        p.relative_to(RELEASE) for p in committed
    ], "notebooks/ has different files from a fresh release: run `make release`"
    for new, old in zip(fresh, committed, strict=True):
        assert new.read_bytes() == old.read_bytes(), f"{old} is stale: run `make release`"


def test_every_assignment_is_released():
    assert [p.parent.name for p in sorted(RELEASE.glob("*/*.ipynb"))] == assignments()


def test_no_outputs_are_committed():
    for folder in (SOLUTIONS, RELEASE):
        for path in folder.glob("*/*.ipynb"):
            cells = json.loads(path.read_text())["cells"]
            assert not any(c.get("outputs") for c in cells if c["cell_type"] == "code"), path


def test_notebooks_carry_a_kernel():
    for folder in (SOLUTIONS, RELEASE):
        for path in folder.glob("*/*.ipynb"):
            meta = json.loads(path.read_text())["metadata"]
            assert meta["kernelspec"]["name"] == "python3", path
