"""Shared test helpers: load the functions a notebook defines, without running the notebook."""

import os
import socket
import threading

import nbformat
import pytest

from grader.course import assignments, release_path, source_path

# Hidden checks draw random cases; the suite pins the draw so a run is repeatable
# (set ATTN_GRADER_SEED yourself to try other draws).
os.environ.setdefault("ATTN_GRADER_SEED", "2026")


def _namespace(path):
    """Run a notebook's imports cell and answer cells (only) in a fresh namespace."""
    nb = nbformat.read(path, as_version=4)
    ns: dict = {}
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        runnable = meta.get("grade_id") == "imports" or (
            meta.get("solution") and not meta.get("grade")
        )
        if cell.cell_type == "code" and runnable:
            exec(compile(cell.source, f"{path.name}:{meta['grade_id']}", "exec"), ns)
    return ns


# Markers by what a test costs (registered in pyproject.toml; `make test-fast` leaves these
# out, `make test` runs everything): set here by module and by fixture, not in each file.
SLOW_MODULES = {
    "hub": {"test_hub"},
    "browser": {"test_accessibility", "test_browser", "test_formgrader", "test_handouts"},
    "bundle": {"test_bundle"},
    "grading": {"test_cluster", "test_validate", "test_grade_some", "test_totals_export",
                "test_sandbox", "test_attacks_leaks", "test_attacks_limits", "test_autograde"},
}  # fmt: skip
SLOW_FIXTURES = {"graded": "graded", "small_class": "grading", "validated": "grading",
                 "executed": "grading"}  # fmt: skip
# Quick modules' tests that build a release (notebooks/ or the trusted release cache, cold in a
# fresh clone), start a kernel, or run a notebook's experiment on the shipped weights.
SLOW_TESTS = {
    "test_release_sync": {"test_release_is_up_to_date"},
    "test_gradebook": {"test_trusted_facts_are_read_without_importing_torch",
                       "test_jobs_likely_to_run_in_full_start_first"},
    "test_needs": {"test_every_demo_mark_holds_for_the_solutions",
                   "test_a_student_answer_keeps_the_demo_cell_whose_name_it_reads",
                   "test_an_unclear_answer_or_the_setting_runs_every_cell"},
    "test_kvcache": {"test_the_eviction_claims_of_notebook_09_hold_for_the_shipped_weights"},
    "test_demo_messages": {
        "test_a_demo_cell_names_the_exercise_whose_result_has_the_wrong_shape"},
    "test_checks_framework": {
        "test_learner_sees_one_line_per_unwritten_exercise_in_a_real_kernel",
        "test_cells_after_a_failed_check_point_back_to_it_in_one_line",
        "test_a_long_message_wraps_and_the_learner_s_warnings_join_it_in_a_real_kernel"},
}  # fmt: skip


# `make test` runs two pytest workers (pytest-xdist): each module runs whole in one worker, so
# its module fixtures are built once, and the modules that read the graded batch or Validate's
# batches (session fixtures, built once) run together in one (``pytest_xdist_make_scheduler``).
# Other session fixtures are built at most once per worker.
ONCE_FIXTURES = {"graded", "listener", "validated"}
ONCE_MODULES = {"test_attacks_intake", "test_attacks_leaks", "test_attacks_limits",
                "test_autograde", "test_result", "test_validate"}  # fmt: skip


def _module(item) -> str:
    return item.module.__name__.rpartition(".")[2]


def pytest_collection_modifyitems(items):
    readers = {_module(i) for i in items if ONCE_FIXTURES & set(i.fixturenames)}
    if readers - ONCE_MODULES:
        unlisted = ", ".join(sorted(readers - ONCE_MODULES))
        raise pytest.UsageError(f"add {unlisted} to ONCE_MODULES in tests/conftest.py")
    for item in items:
        module = _module(item)
        marks = {mark for mark, modules in SLOW_MODULES.items() if module in modules}
        marks |= {mark for name, mark in SLOW_FIXTURES.items() if name in item.fixturenames}
        if item.originalname in SLOW_TESTS.get(module, ()):
            marks.add("slow")
        for mark in sorted(marks):
            item.add_marker(mark)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    from xdist.scheduler import LoadScopeScheduling

    class ByModule(LoadScopeScheduling):
        """Each module a unit of work, ONCE_MODULES one unit; the unit with the most tests first."""

        # Overrides pytest-xdist internals (pinned in pyproject.toml); guarded by
        # tests/test_markers.py::test_make_test_runs_each_module_whole_in_one_worker
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::")[0]
            return "once" if path.rpartition("/")[2].removesuffix(".py") in ONCE_MODULES else path

    return ByModule(config, log)


@pytest.fixture(scope="session")
def solution():
    """solution("01_soft_lookup")["softmax"] is the reference answer from solutions/."""
    cache = {}
    return lambda assignment: cache.setdefault(assignment, _namespace(source_path(assignment)))


@pytest.fixture(scope="session")
def stub():
    """stub("01_soft_lookup")["softmax"] is the release's unimplemented stub."""
    cache = {}
    return lambda assignment: cache.setdefault(assignment, _namespace(release_path(assignment)))


@pytest.fixture(scope="session")
def small_class(tmp_path_factory):
    """OUT of a small class graded once (``fixtures/small_class.py``); tests copy it."""
    from fixtures.small_class import grade

    return grade(tmp_path_factory.mktemp("small_class"))


@pytest.fixture(scope="session")
def validated(tmp_path_factory):
    """{batch: (notebook, path, Validate's result)} of the sampled catalogue batches
    (``fixtures/batches.py``), validated once for the Validate and the grading tests."""
    from fixtures.batches import sample
    from fixtures.validate import validate_batches

    batches = [batch for notebook in assignments() for batch in sample(notebook)]
    return validate_batches(batches, tmp_path_factory.mktemp("batches"))


@pytest.fixture(scope="session")
def listener():
    """A TCP server on this machine's localhost during the batch: {"port", "connections"}."""
    server = socket.create_server(("127.0.0.1", 0))
    watch = {"port": server.getsockname()[1], "connections": []}

    def accept():
        while True:
            try:
                conn, peer = server.accept()
            except OSError:
                return
            watch["connections"].append(peer)
            conn.close()

    threading.Thread(target=accept, daemon=True).start()
    yield watch
    server.close()


@pytest.fixture(scope="session")
def graded(tmp_path_factory, listener):
    """(submissions, out, cases, rows, results, stdout) of the big batch (``fixtures/batch.py``),
    graded once for every test module that reads it."""
    from fixtures.batch import grade_class

    return grade_class(tmp_path_factory.mktemp("class"), listener)
