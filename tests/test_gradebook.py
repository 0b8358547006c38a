"""What grading does around the notebooks themselves: the gradebook a run prepares (from a
copy made once per set of releases), the trusted facts it reads without importing the
notebooks' packages, the order it starts jobs in, and the judging server a worker starts
before its first notebook."""

import sqlite3
import subprocess
import sys
from dataclasses import replace

import nbformat
import pytest
from fixtures.adversarial import NB, honest
from nbgrader.api import Gradebook

from grader import settings
from grader.batch.job import Job, likely_cost
from grader.course import REPO_ROOT, assignments, release_path
from grader.errors import UserError
from grader.judging.trusted import models
from grader.results import gradebook

QUERIES = {
    "assignments": "select name from assignment",
    "notebooks": "select name, kernelspec from notebook",
    "cells": "select name, type from base_cell",
    "graded": "select b.name, g.max_score, g.cell_type from grade_cells g join base_cell b "
    "on g.id = b.id",
    "sources": "select name, cell_type, locked, source, checksum from source_cell",
    "alembic": "select version_num from alembic_version",
}


def _contents(out) -> dict:
    """What the gradebook holds about the course, without the rows' random ids."""
    with sqlite3.connect(out / "gradebook.db") as con:
        return {name: sorted(con.execute(query)) for name, query in QUERIES.items()}


@pytest.fixture(scope="module")
def releases():
    return {a: release_path(a).read_text() for a in ("01_soft_lookup", "05_causal_mask")}


def test_a_new_gradebook_is_a_copy_of_one_made_once(releases, tmp_path, monkeypatch):
    made = tmp_path / "made"
    gradebook.prepare(made, releases)  # nbgrader's own way: alembic, then every cell
    cache = tmp_path / "cache"
    gradebook.prepare(tmp_path / "first", releases, cache)
    assert len(list((cache / "gradebooks").glob("*.db"))) == 1

    def no_alembic():
        raise AssertionError("a second gradebook ran nbgrader's alembic again")

    monkeypatch.setattr("nbgrader.api.get_alembic_version", no_alembic)
    gradebook.prepare(tmp_path / "second", releases, cache)
    assert _contents(tmp_path / "second") == _contents(made)
    assert _contents(made)["assignments"] == [(a,) for a in sorted(releases)]
    source = tmp_path / "second" / "nbgrader" / "source" / NB / f"{NB}.ipynb"
    assert source.read_text() == releases[NB]  # what formgrader shows


def test_other_releases_get_their_own_copy(releases, tmp_path):
    cache = tmp_path / "cache"
    gradebook.prepare(tmp_path / "a", releases, cache)
    fewer = {NB: releases[NB]}
    gradebook.prepare(tmp_path / "b", fewer, cache)
    assert len(list((cache / "gradebooks").glob("*.db"))) == 2
    assert _contents(tmp_path / "b")["assignments"] == [(NB,)]


def test_a_graded_gradebook_of_another_release_is_refused_in_one_line(releases, tmp_path):
    out = tmp_path / "out"
    gradebook.prepare(out, releases, tmp_path / "cache")
    with Gradebook(gradebook.db_url(out), gradebook.COURSE_ID) as gb:
        gb.add_student("ada")
        gb.add_submission(NB, "ada")
    nb = nbformat.reads(releases[NB], as_version=4)
    nb.cells = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") != "softmax"]
    changed = {**releases, NB: nbformat.writes(nb)}
    with pytest.raises(UserError, match=f"was made for another version of {NB}"):
        gradebook.prepare(out, changed, tmp_path / "cache")


def test_trusted_facts_are_read_without_importing_torch():
    """`import torch` takes seconds; the main process only needs to know it is a module."""
    printed = _fresh_python(
        "import sys; from grader import course, settings\nfrom grader.judging import trusted\n"
        "m = trusted.models(course.assignments(), settings.load().release_cache)\n"
        "assert 'F' in m['06_attention_assembled'].module_names, 'torch.nn.functional'\n"
        "assert 'TinyTransformer' not in m['05_causal_mask'].module_names, 'a class'\n"
        "print('torch' in sys.modules)\n"
    )
    assert printed == "False"


def test_jobs_likely_to_run_in_full_start_first():
    config = settings.load().snapshot()
    trusted = models(assignments(), settings.load().release_cache)
    untouched = {a: release_path(a).read_bytes() for a in ("03_scores_and_cost", "09_kv_cache")}
    jobs = [
        Job("solved", "09_kv_cache", nbformat.writes(honest("09_kv_cache")).encode(),
            trusted["09_kv_cache"], config),
        Job("absent", "09_kv_cache", None, trusted["09_kv_cache"], config),
        Job("stub", "03_scores_and_cost", untouched["03_scores_and_cost"],
            trusted["03_scores_and_cost"], config),
        Job("stub", "09_kv_cache", untouched["09_kv_cache"], trusted["09_kv_cache"], config),
    ]  # fmt: skip
    order = [(j.student, j.notebook) for j in sorted(jobs, key=likely_cost, reverse=True)]
    assert order == [
        ("stub", "09_kv_cache"),  # in full, with more demo cells than 03
        ("stub", "03_scores_and_cost"),
        ("solved", "09_kv_cache"),  # its demo cells are left out
        ("absent", "09_kv_cache"),  # nothing to run
    ]
    full_run = replace(config, skip_demo_cells=False)
    solved = Job("solved", "09_kv_cache", jobs[0].submission, trusted["09_kv_cache"], full_run)
    assert likely_cost(solved) == likely_cost(jobs[3])


def test_a_worker_starts_its_judging_server_before_its_first_notebook():
    printed = _fresh_python(
        "import psutil\n"
        "from grader.batch import pool\n"
        "pool.worker_init()\n"
        "found = [' '.join(p.cmdline()) for p in psutil.Process().children()]\n"
        "print(sum('forkserver' in cmd for cmd in found))\n"
    )
    assert printed == "1"


def _fresh_python(code: str) -> str:
    """What ``code`` prints in a new interpreter (nothing imported before it)."""
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True,
                          text=True, timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout.strip()
