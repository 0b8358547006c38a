"""The cell loop of grader/run/execute.py over a kernel of faked messages (tests/run/fakekernel.py):
each cell's status (ok, error, timeout, died, deadline, not-run), its output kept up to
max_output_chars, the end-of-cell marker and its grace, kernel restarts and replays. What the
sandboxed kernels add (a real crash, a real time limit) stays in the graded batch."""

from time import monotonic

import pytest
from fakekernel import run_cells as _run

from grader.run.execute import TIMEOUT_ENAME


@pytest.fixture
def run_cells(tmp_path):
    """run_cells(sources, ...): tests/run/fakekernel.py's run, in this test's folder."""
    return lambda *args, **kwargs: _run(tmp_path, *args, **kwargs)


def test_cells_that_end_well_are_ok_and_keep_their_outputs(run_cells):
    status, ex, _, nb = run_cells(["print one", "", "print two\nprint three"])
    assert [s["status"] for s in status.values()] == ["ok", "ok"] and set(status) == {0, 2}
    assert [o.text for o in nb.cells[2].outputs] == ["two", "three"]
    assert ex.kernel_starts == 1 and ex.kernels[0].ran == ["print one", "print two\nprint three"]


def test_an_error_is_the_cell_s_status_with_its_name_and_text_cut(run_cells):
    status, ex, _, _ = run_cells([f"raise {'E' * 150} {'x' * 900}", "print after"])
    assert status[0]["status"] == "error"
    assert status[0]["ename"] == "E" * 100 and status[0]["evalue"] == "x" * 500
    assert status[1]["status"] == "ok" and ex.kernel_starts == 1  # an error needs no restart


def test_outputs_past_max_output_chars_are_dropped_and_the_cell_flagged(run_cells):
    status, _, _, nb = run_cells(
        ["print " + "a" * 60, "print " + "b" * 60 + "\nprint " + "c" * 50], max_output_chars=100
    )
    assert [o.text for o in nb.cells[0].outputs] == ["a" * 60] and "flooded" not in status[0]
    assert [o.text for o in nb.cells[1].outputs] == ["b" * 60]  # each cell has its own cap
    assert status[1] == {**status[1], "status": "ok", "flooded": True}


@pytest.mark.parametrize("how", ["hang", "late"])
def test_a_cell_past_its_limit_times_out_and_the_next_runs_in_a_fresh_kernel(run_cells, how):
    """hang: the kernel stays busy (nbclient raises); late: it goes idle after the limit (the
    timeout error is in the cell's outputs). Either way the kernel is replaced, the cells
    that defined names are replayed, and the cell is not run again."""
    status, ex, _, nb = run_cells(["print setup", how, "print after"])
    assert status[1]["status"] == "timeout"
    assert status[2]["status"] == "ok"
    assert [k.ran for k in ex.kernels] == [["print setup", how], ["print setup", "print after"]]
    if how == "late":
        assert [o.ename for o in nb.cells[1].outputs] == [TIMEOUT_ENAME]


def test_a_kernel_that_dies_is_restarted_and_the_cell_that_killed_it_skipped(run_cells):
    status, ex, _, _ = run_cells(["print a", "print b", "die", "print c"], state={0})
    assert status[2]["status"] == "died" and "Kernel died" in status[2]["evalue"]
    assert status[3]["status"] == "ok" and ex.kernel_starts == 2
    assert ex.kernels[1].ran == ["print a", "print c"]  # only the state cells are replayed


def test_a_replay_s_outputs_are_thrown_away(run_cells):
    """They neither count for the cell nor flag a flood, and the notebook keeps the outputs
    of the cell's first run (nbclient would store the replayed copy in its place)."""
    status, ex, _, nb = run_cells(["print " + "a" * 80, "die", "print ok"], max_output_chars=100)
    assert ex.kernel_starts == 2 and ex.kernels[1].ran[0] == "print " + "a" * 80
    assert "flooded" not in status[0] and status[2]["status"] == "ok"
    status, ex, _, nb = run_cells(
        ["first print first\nreplay print " + "r" * 200, "die", "print ok"], max_output_chars=100
    )
    assert ex.kernel_starts == 2 and "flooded" not in status[0]
    assert [o.text for o in nb.cells[0].outputs] == ["first"]


@pytest.mark.parametrize(("step", "said"), [("hang", "timeout"), ("die", "died")])
def test_a_state_cell_that_fails_on_replay_is_marked_and_not_replayed_again(run_cells, step, said):
    """Cell 0 fails only on its replay (a kernel's state can differ from the first run's): its
    status says how, and the kernel after the next restart leaves it out."""
    sources = [f"replay {step}", "print b", "die", "die", "print c"]
    status, ex, _, _ = run_cells(sources, state={0, 1})
    assert status[0] == {"status": said}  # was ok: the replay's failure is its status
    assert [status[i]["status"] for i in (2, 3, 4)] == ["died", "died", "ok"]
    assert [k.ran for k in ex.kernels] == [
        [f"replay {step}", "print b", "die"],
        [f"replay {step}"],  # a fresh kernel follows, the cell out of the replay
        ["print b", "die"],
        ["print b", "print c"],
    ]


def test_after_max_restarts_the_cells_left_are_not_run(run_cells):
    status, ex, _, _ = run_cells(["die", "die", "print never"], max_restarts=1)
    assert ex.kernel_starts == 2
    assert status[2] == {"status": "not-run", "evalue": "too many kernel restarts"}


def test_cells_left_when_the_notebook_s_time_is_spent_say_so(run_cells):
    status, ex, _, _ = run_cells(["print a", "print b"], deadline=-1.0)
    assert status == {0: {"status": "deadline"}, 1: {"status": "deadline"}}
    assert ex.kernel_starts == 0  # no kernel starts once the time is up


def test_a_run_without_demo_cells_stops_at_its_first_cell_that_is_not_ok(run_cells):
    """It stands only if everything went well (grader.batch.job.stands): the full run follows."""
    status, ex, _, _ = run_cells(["raise ValueError no", "print b", "print demo"], skip={2})
    assert set(status) == {0} and ex.kernels[0].ran == ["raise ValueError no"]


# ----------------------------------------------------------------- the end-of-cell marker


def test_a_test_cell_whose_marker_arrives_is_not_tampering(run_cells):
    status, _, windows, _ = run_cells(["print a", "check {nonce}"], tests={1: "t1"})
    assert status[1]["status"] == "ok" and windows.tampered == []
    assert windows.by_nonce and all(w.ended and w.record for w in windows.by_nonce.values())


def test_a_marker_late_within_the_grace_is_waited_for(run_cells):
    status, _, windows, _ = run_cells(
        ["check {nonce} endafter 0.2"], tests={0: "t1"}, stream_grace=5.0
    )
    assert status[0]["status"] == "ok" and windows.tampered == []


def test_a_marker_later_than_the_grace_is_tampering(run_cells):
    start = monotonic()
    _, _, windows, _ = run_cells(["check {nonce} endafter 3"], tests={0: "t1"}, stream_grace=0.2)
    assert windows.tampered == [
        "test cell `t1` finished but left no record: its end-of-cell marker never reached the "
        "grader (the kernel's stream was cut or the cell was changed at run time)"
    ]
    assert monotonic() - start < 3


def test_a_cell_with_no_record_before_its_marker_is_tampering(run_cells):
    _, _, windows, _ = run_cells(["check {nonce} norecord"], tests={0: "t1"})
    assert windows.tampered == ["test cell `t1` ended without its record"]


def test_a_cut_stream_is_noticed_at_once_not_after_the_grace(run_cells):
    start = monotonic()
    _, _, windows, _ = run_cells(["check {nonce} cut"], tests={0: "t1"}, stream_grace=30.0)
    assert len(windows.tampered) == 1 and "end-of-cell marker never reached" in windows.tampered[0]
    assert monotonic() - start < 10


def test_a_test_cell_that_raised_owes_its_marker_too(run_cells):
    status, _, windows, _ = run_cells(
        ["check {nonce} nomark\nraise CheckFailed no"], {0: "t1"}, stream_grace=0.1
    )
    assert status[0]["status"] == "error" and len(windows.tampered) == 1


def test_a_test_cell_that_timed_out_is_not_waited_for(run_cells):
    """A test cell that hung owes no marker: its kernel is replaced, its status says why."""
    status, _, windows, _ = run_cells(["hang"], tests={0: "t1"}, stream_grace=30.0)
    assert status[0]["status"] == "timeout" and windows.tampered == []


def test_once_tampered_no_marker_is_waited_for(run_cells):
    start = monotonic()
    _, _, windows, _ = run_cells(
        ["check {nonce} norecord", "check {nonce} nomark"], tests={0: "t1", 1: "t2"},
        stream_grace=30.0,
    )  # fmt: skip
    assert windows.tampered == ["test cell `t1` ended without its record"]
    assert monotonic() - start < 10
