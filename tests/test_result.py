"""``grader.results.result``: a result reads back from its JSON exactly as it was written, and
cannot be changed once made."""

import dataclasses
import json
from types import SimpleNamespace

import pytest

from grader import course
from grader.batch.job import Job, grade
from grader.judging.trusted import Trusted
from grader.results import messages
from grader.results.result import Result, ungraded_result
from grader.settings import GraderSettings

NB = course.assignments()[0]


def _job(submission: bytes | None, refused: str = "") -> Job:
    """A job whose trusted facts are only its exercises: enough for a notebook not graded."""
    trusted = Trusted(
        notebook=NB, release="", version="", exercises=tuple(course.exercises(NB)), tests=(),
        imports="", modules={}, source_cells={}, shortcuts={},
    )  # fmt: skip
    return Job("s", NB, submission, trusted, GraderSettings().snapshot(), refused=refused)


def _as_kept(result: Result) -> dict:
    """The result as OUT/work/results keeps it (the graded notebook is written apart)."""
    kept = dataclasses.replace(result, autograded=None)
    return json.loads(json.dumps(kept.to_json(), sort_keys=True))


def test_every_result_of_the_batch_reads_back_as_written(graded):
    _, _, _, _, results, _ = graded
    kinds = {r["status"] for r in results.values()}
    assert kinds == {"graded", "not graded"}, "the batch holds both kinds of result"
    for data in results.values():
        assert Result.from_json(data).to_json() == data, (data["student"], data["notebook"])


@pytest.mark.parametrize(
    "result",
    [
        grade(_job(None)),
        grade(_job(b"\x00 not a notebook")),
        grade(_job(None, refused="over the batch's unpack budget")),
        ungraded_result(_job(b"{}"), "a crashed worker's result", flags=["died"]),  # has no key
    ],
    ids=["missing", "unreadable", "refused", "crashed"],
)
def test_a_result_not_graded_reads_back_with_only_its_own_keys(result):
    kept = _as_kept(result)
    assert Result.from_json(kept).to_json() == kept
    assert "tests" not in kept and "demo_cells_left_out" not in kept, "missing keys stay missing"
    assert ("key" in kept) == (result.key is not None)
    assert all(row["points"] == 0.0 for row in kept["rows"]) and kept["rows"]


def test_a_result_and_its_rows_cannot_be_changed():
    result = grade(_job(None))
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.flags = ("added later",)
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.rows[0].points = 1.0
    assert isinstance(result.rows, tuple) and isinstance(result.flags, tuple)


def test_a_notebook_whose_worker_pool_keeps_breaking_is_not_graded_after_three(monkeypatch):
    """grader.batch.pool: a broken pool is rebuilt for the jobs it left; the third break of
    a job's pool ends it with the CRASHED result, counted once in the progress."""
    from grader.batch import pool

    pools, results, shown = [], [], []
    monkeypatch.setattr(pool, "_one_pool", lambda todo, *_: pools.append(len(todo)) or todo)
    progress = SimpleNamespace(update=shown.append, close=lambda: None)
    pool.run_pool([_job(b"{}"), _job(None)], 2, lambda job, r: results.append(r), progress)
    assert pools == [2, 2, 2] and shown == [1, 1]
    assert all(r.flags == ("grader worker crashed 3 times",) for r in results)
    assert all(row.message == messages.CRASHED for r in results for row in r.rows)
