"""nbgrader's Validate (the toolbar button; its API, since `nbgrader validate` exits 0 on
failures): every solution passes, and on the untouched release every visible check fails."""

import pytest
from nbgrader.validator import Validator

from grader.course import assignments, release_path, source_path


@pytest.mark.parametrize("assignment", assignments())
def test_solution_passes_validate(assignment):
    result = Validator().validate(str(source_path(assignment)))
    assert result == {}, f"Validate on the solution of {assignment}: {result}"


@pytest.mark.parametrize("assignment", assignments())
def test_release_fails_every_visible_check(assignment):
    result = Validator(invert=True).validate(str(release_path(assignment)))
    passed = [cell["source"] for cell in result.get("passed", [])]
    # Hidden-test cells ship as a comment only (their checks run at grading), so they pass.
    assert all(
        line.startswith("#") for source in passed for line in source.splitlines() if line.strip()
    ), f"visible checks pass on the unwritten release of {assignment}: {passed}"
    assert passed, "expected the hidden-test placeholders to be the only passing cells"
