"""Reading a submitted notebook is bounded (issue 32, ``grader.intake.bounded``): a notebook
over any bound scores 0 with a message naming it, flagged, without a kernel and without
parsing in the worker; one just under every bound reads to the honest notebook's cells, so
its grade cannot change. Small bounds here; the defaults are checked against the course."""

import json

import nbformat
import pytest
from fixtures.adversarial import honest

from grader import course
from grader.batch.job import Job, grade
from grader.intake import bounded
from grader.intake.rebuild import submitted_cells
from grader.judging.trusted import Trusted
from grader.settings import GraderSettings

NB = "01_soft_lookup"
SMALL = {"notebook_mb": 1, "notebook_cells": 80, "cell_kb": 8, "notebook_depth": 20}
MB = 2**20


def _text(nb) -> str:
    return nbformat.writes(nb)


def _padded(cells: int):
    nb = honest(NB)
    nb.cells += [nbformat.v4.new_markdown_cell("") for _ in range(cells - len(nb.cells))]
    return nb


def _nested(levels: int) -> str:
    data = json.loads(_text(honest(NB)))
    data["metadata"]["deep"] = "DEEP"
    return json.dumps(data).replace('"DEEP"', "[" * (levels - 2) + "]" * (levels - 2), 1)


def _long_cell(kb: int):
    nb = honest(NB)
    nb.cells.append(nbformat.v4.new_markdown_cell("x" * (kb * 1024)))
    return nb


# (bound, bytes over it, bytes just under it), with SMALL's bounds.
CASES = {
    "notebook_mb": (_text(honest(NB)) + " " * MB, _text(honest(NB)) + " " * (MB // 2)),
    "notebook_cells": (_text(_padded(81)), _text(_padded(80))),
    "cell_kb": (_text(_long_cell(9)), _text(_long_cell(7))),
    "notebook_depth": (_nested(21), _nested(20)),
}


def _job(data: bytes, **settings) -> Job:
    exercises = tuple(course.exercises(NB))  # all an unread notebook's rows need
    trusted = Trusted(
        notebook=NB, release="", version="", exercises=exercises, tests=(), imports="",
        modules={}, source_cells={}, shortcuts={},
    )  # fmt: skip
    return Job("mallory", NB, data, trusted, GraderSettings(**SMALL | settings).snapshot())


def _scored_zero_naming(data: bytes, bound: str, **settings) -> None:
    result = grade(_job(data, **settings)).to_json()
    named = f"(c.GraderSettings.{bound})"
    assert any(named in flag and "unreadable" in flag for flag in result["flags"]), result
    assert not any("grader error" in flag for flag in result["flags"]), result
    autograded = [r for r in result["rows"] if r["max_points"]]
    assert autograded and all(r["points"] == 0 and named in r["message"] for r in autograded)


@pytest.mark.parametrize("bound", CASES)
def test_a_notebook_over_a_bound_scores_0_with_the_bound_named(bound):
    _scored_zero_naming(CASES[bound][0].encode(), bound)


@pytest.mark.parametrize("bound", CASES)
def test_a_notebook_just_under_every_bound_reads_as_the_honest_one(bound):
    cells, _notes = bounded.read(CASES[bound][1].encode(), _bounds(), (NB, "", "x.ipynb"))
    honest_cells = submitted_cells(json.loads(_text(honest(NB))))
    answers = [(c["nbgrader"].get("grade_id"), c["source"]) for c in honest_cells]
    assert [(c["nbgrader"].get("grade_id"), c["source"]) for c in cells][: len(answers)] == answers


def _bounds(**changes) -> bounded.Bounds:
    return bounded.Bounds.of(GraderSettings(**SMALL | changes).snapshot())


def test_the_issue_s_attacks_are_refused_before_or_while_parsing():
    """100 000 levels deep is unreadable (not a grader failure); cells the byte count cannot
    see (UTF-16) are counted once parsed; 200 000 cells are refused before parsing."""
    _scored_zero_naming(("[" * 100_000 + "]" * 100_000).encode(), "notebook_depth")
    _scored_zero_naming(_text(_padded(81)).encode("utf-16"), "notebook_cells")
    many = b'{"cells": [' + b",".join([b'{"cell_type": "raw"}'] * 200_000) + b"]}"
    with pytest.raises(bounded.Unreadable, match="notebook_cells"):
        bounded.check_bytes(many, _bounds(notebook_mb=32))


def test_parsing_runs_in_a_process_bounded_in_time_and_memory():
    """Over its time or its memory, the reading process is stopped and the bound named;
    the worker, which has neither limit, never parsed it."""
    big = _text(_padded(5000)).encode()
    with pytest.raises(bounded.Unreadable, match="read_seconds"):
        bounded.read(big, _bounds(notebook_cells=10**6, read_seconds=0.001), (NB, "", "x"))
    with pytest.raises(bounded.Unreadable, match="read_memory_mb"):
        bounded.read(big, _bounds(notebook_cells=10**6, read_memory_mb=1), (NB, "", "x"))


def test_the_default_bounds_read_every_course_notebook_executed():
    """The defaults leave room: each solution notebook is far under every bound."""
    defaults = bounded.Bounds.of(GraderSettings().snapshot())
    for nb in course.assignments():
        data = course.source_path(nb).read_bytes()
        bounded.check_bytes(data, defaults)
        parsed = json.loads(data)
        bounded.check_parsed(parsed, defaults)
        assert len(parsed["cells"]) * 10 < defaults.notebook_cells
