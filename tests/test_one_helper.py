"""The helpers that replaced copies: each keeps what its copies did (the seeds hidden inputs
are drawn from, the course id nbgrader reads), and grading leaves the grader's own TMPDIR as
it found it."""

import os
import zlib
from pathlib import Path

from traitlets.config import PyFileConfigLoader

from grader import seeds
from grader.batch import pool
from grader.course import REPO_ROOT
from grader.results import gradebook


def test_derived_seeds_are_the_ones_results_were_graded_with():
    """A changed derivation would change every hidden input, and so results already kept."""
    assert seeds.derived(2026, "ada", "01_soft_lookup", "softmax") == zlib.crc32(
        b"2026:ada:01_soft_lookup:softmax"
    )
    assert seeds.derived("softmax") == zlib.crc32(b"softmax")


def test_the_course_id_is_the_one_nbgrader_reads():
    config = PyFileConfigLoader("nbgrader_config.py", path=str(REPO_ROOT)).load_config()
    assert gradebook.COURSE_ID == config.CourseDirectory.course_id == "attention-step-by-step"


def test_the_workers_scratch_is_removed_and_tmpdir_restored(monkeypatch, tmp_path):
    for before in (str(tmp_path), None):
        if before is None:
            monkeypatch.delenv("TMPDIR", raising=False)
        else:
            monkeypatch.setenv("TMPDIR", before)
        with pool.workers_scratch():
            scratch = Path(os.environ["TMPDIR"])
            assert scratch.is_dir() and str(scratch) != before
        assert os.environ.get("TMPDIR") == before
        assert not scratch.exists()


def test_an_interrupted_write_of_out_leaves_the_old_file_and_no_temporary(tmp_path):
    from grader.results import out as out_files

    path = tmp_path / "work" / "run.json"
    out_files.write_text(path, "old\n")
    try:
        with out_files.replaced(path) as tmp:
            tmp.write_text("half")
            raise KeyboardInterrupt
    except KeyboardInterrupt:
        pass
    assert path.read_text() == "old\n" and os.listdir(path.parent) == ["run.json"]
    out_files.write_text(path, "new\n")
    assert path.read_text() == "new\n" and os.listdir(path.parent) == ["run.json"]
