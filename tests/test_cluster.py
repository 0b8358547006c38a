"""Grading on a Dask cluster (``autograde --scheduler``), end to end through the real CLI.

One LocalCluster of two single-threaded worker processes on localhost grades the small class
(``fixtures/cluster_class.py``); every run must give the grades.csv of the local pool, also
when a worker is killed while it runs a notebook. The scheduler allows one worker death per
notebook, so killing the same notebook's worker twice exhausts it: that notebook gets a
"Not graded" row, the rest of the batch finishes, and the next run resumes it.
"""

import csv
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import dask
import psutil
import pytest
from dask.distributed import Client, LocalCluster
from fixtures import cluster_class

from grader.course import REPO_ROOT
from grader.errors import UserError

CLI = [sys.executable, "-m", "grader", "autograde"]
FAST = ["--cell-timeout", "20", "--notebook-timeout", "120", "--quiet"]
ALLOWED_FAILURES = 1
NO_DASK = """
import sys
from grader.cli import main
code = main(sys.argv[1:])
print(sorted({m.split(".")[0] for m in sys.modules} & {"dask", "distributed"}))
sys.exit(code)
"""


def _start(subs: Path, out: Path, *extra) -> subprocess.Popen:
    return subprocess.Popen(
        [*CLI, str(subs), "--out", str(out), *FAST, *extra],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _finish(proc: subprocess.Popen, check=True) -> tuple[str, str]:
    stdout, stderr = proc.communicate(timeout=900)
    if check:
        assert proc.returncode == 0, stderr[-3000:]
    return stdout, stderr


def _grades(out: Path) -> str:
    return (out / "grades.csv").read_text()


def _results(out: Path) -> dict:
    return {
        p.parent.name: json.loads(p.read_text()) for p in (out / "work" / "results").glob("*/*")
    }


@pytest.fixture(scope="module")
def subs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("small") / "submissions"
    cluster_class.build(folder)
    return folder


@pytest.fixture(scope="module")
def local(subs, tmp_path_factory):
    """(grades.csv, dask modules imported) of the class graded by the local pool."""
    out = tmp_path_factory.mktemp("local") / "out"
    proc = subprocess.run(
        [sys.executable, "-c", NO_DASK, "autograde", str(subs), "--out", str(out), *FAST],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return _grades(out), proc.stdout.strip().splitlines()[-1]


@pytest.fixture(scope="module")
def cluster():
    """(scheduler address, client) of two single-threaded worker processes on localhost."""
    settings = {
        "distributed.worker.daemon": False,  # grading starts a judging process per notebook
        "distributed.scheduler.allowed-failures": ALLOWED_FAILURES,
        "distributed.scheduler.worker-saturation": 1.0,  # a worker holds only what it runs
        # LocalCluster drops for good a worker that is not back within this time of its
        # death; on a busy machine a killed worker takes longer than the default 15 s.
        "distributed.deploy.lost-worker-timeout": "600s",
    }
    with dask.config.set(settings):
        with LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as lc:
            with Client(lc, set_as_default=False) as client:
                yield lc.scheduler_address, client


def _kill_running(client, prefix: str, proc, deadline: float) -> list[int]:
    """SIGKILL the worker process running a task whose key starts with ``prefix`` once its
    sandboxed kernel is up; return the pids it and its sandbox had."""
    while time.monotonic() < deadline and proc.poll() is None:
        # a lambda travels by value: the workers cannot import this test module
        busy = client.run(
            lambda dask_worker: [str(t.key) for t in dask_worker.state.executing],
            on_error="ignore",  # the worker just killed may not be removed yet
        )
        for address, keys in busy.items():
            if not any(k.startswith(prefix) for k in keys):
                continue
            pid = client.run(os.getpid, workers=[address], on_error="ignore").get(address)
            if pid is None:
                continue
            tree = _tree(pid)
            if any(_name(p) == "bwrap" for p in tree):
                time.sleep(0.5)
                pids = [pid, *(p.pid for p in tree)]
                os.kill(pid, signal.SIGKILL)
                return pids
        time.sleep(0.1)
    raise AssertionError(f"no worker was running {prefix}* while the batch ran")


def _tree(pid: int) -> list[psutil.Process]:
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:  # the worker died between the listing and this call
        return []


def _name(process: psutil.Process) -> str:
    try:
        return process.name()
    except psutil.NoSuchProcess:  # a process of the tree exited while it was read
        return ""


@pytest.fixture
def started():
    """_start, with every run it started stopped when the test ends, passed or not: a run
    left grading on the shared cluster would be the next test's target."""
    procs = []

    def start(*args):
        procs.append(_start(*args))
        return procs[-1]

    yield start
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def _gone(pids: list[int], wait=10.0) -> bool:
    def alive(pid):
        try:
            return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            return False

    deadline = time.monotonic() + wait
    while any(alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    return not any(alive(p) for p in pids)


def _wait_for_workers(client, n=2):
    client.wait_for_workers(n, timeout=120)


def test_without_scheduler_dask_is_not_imported(local):
    assert local[1] == "[]"


def test_the_cluster_grades_like_the_local_pool_though_a_worker_is_killed_mid_notebook(
    cluster, subs, local, tmp_path, started
):
    """One run (each costs the class's notebooks): the cluster's grades.csv is the local
    pool's, with every student's outputs, though a worker died running a notebook."""
    address, client = cluster
    _wait_for_workers(client)
    out = tmp_path / "out"
    proc = started(subs, out, "--scheduler", address)
    killed = _kill_running(client, "grade-", proc, time.monotonic() + 600)
    stdout, _ = _finish(proc)
    assert _grades(out) == local[0]
    assert f"on the cluster {address}" in stdout
    results = _results(out)
    assert set(results) == set(cluster_class.STUDENTS)
    assert (out / "nbgrader" / "autograded" / "wrong" / cluster_class.NB).is_dir()
    assert _gone(killed), "the killed worker's sandbox outlived it"
    assert not any(r["flags"] for s, r in results.items() if s != "wrong")


def test_a_notebook_that_kills_its_workers_is_not_graded_and_resumes(
    cluster, subs, local, tmp_path, started
):
    address, client = cluster
    _wait_for_workers(client)
    out = tmp_path / "out"
    proc = started(subs, out, "--scheduler", address)
    deadline = time.monotonic() + 600
    for _ in range(ALLOWED_FAILURES + 1):
        _kill_running(client, "grade-slow-", proc, deadline)
    _finish(proc)
    rows = list(csv.DictReader(_grades(out).splitlines()))
    slow = [r for r in rows if r["student"] == "slow"]
    assert slow and all(r["points"] == "0" and "Not graded" in r["message"] for r in slow)
    flags = _results(out)["slow"]["flags"]
    assert flags == [f"Dask workers died {ALLOWED_FAILURES + 1} times grading this notebook"]
    # Dask counts a worker's death against every task it had been given, the one queued
    # behind the killer too: such a neighbour may end "Not graded" in this run (never
    # wrongly graded), and the rerun grades it.
    crashed = {r["student"] for r in rows if "the grader crashed" in r["message"]} - {"slow"}
    assert len(crashed) <= 1, crashed
    mine = [r for r in rows if r["student"] not in crashed | {"slow"}]
    here = [
        r
        for r in csv.DictReader(local[0].splitlines())
        if r["student"] in {m["student"] for m in mine}
    ]
    assert mine == here

    _wait_for_workers(client)
    stdout, _ = _finish(started(subs, out, "--scheduler", address))
    assert f"({len(cluster_class.STUDENTS) - 1 - len(crashed)} reused" in stdout
    assert _grades(out) == local[0]


def test_sigterm_cancels_the_cluster_run_and_the_next_run_resumes(
    cluster, subs, local, tmp_path, started
):
    address, client = cluster
    _wait_for_workers(client)
    out = tmp_path / "out"
    proc = started(subs, out, "--scheduler", address)
    results = out / "work" / "results"
    deadline = time.monotonic() + 600
    while not list(results.glob("*/*.json")) and time.monotonic() < deadline:
        time.sleep(0.1)
    proc.send_signal(signal.SIGTERM)
    _, stderr = _finish(proc, check=False)
    assert proc.returncode == 130, stderr[-2000:]
    assert "interrupted" in stderr and not (out / "grades.csv").exists()
    kept = len(list(results.glob("*/*.json")))
    assert 0 < kept < len(cluster_class.STUDENTS)

    stdout, _ = _finish(started(subs, out, "--scheduler", address))
    assert f"({kept} reused" in stdout
    assert _grades(out) == local[0]


DASK = str(Path(sys.executable).parent / "dask")


def test_the_readme_commands_start_a_cluster_that_grades(subs, local, tmp_path, started):
    """`dask scheduler` and `dask worker` as README.md's "Grading a big class" shows them."""
    one = tmp_path / "one"
    shutil.copytree(subs / "wrong", one / "wrong")
    info = tmp_path / "scheduler.json"
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    options = ["--scheduler-file", str(info), "--no-dashboard"]
    scheduler = subprocess.Popen([DASK, "scheduler", "--port", "0", *options], **quiet)
    worker = None
    try:
        deadline = time.monotonic() + 60
        while not info.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        address = json.loads(info.read_text())["address"]
        env = {**os.environ, "DASK_DISTRIBUTED__WORKER__DAEMON": "False"}
        worker = subprocess.Popen(
            [DASK, "worker", address, "--nworkers", "1", "--nthreads", "1"], env=env, **quiet
        )
        with Client(address, set_as_default=False) as client:
            client.wait_for_workers(1, timeout=120)
        _finish(started(one, tmp_path / "out", "--scheduler", address))
    finally:
        for proc in (worker, scheduler):
            if proc is not None:
                proc.terminate()
                proc.wait(30)
    wrong = [ln for ln in local[0].splitlines() if ln.startswith("wrong,")]
    assert _grades(tmp_path / "out").splitlines()[1:] == wrong


def test_unreachable_scheduler_is_one_line_and_writes_nothing(subs, tmp_path, started):
    with socket.socket() as sock:  # a port that nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    out = tmp_path / "out"
    proc = started(subs, out, "--scheduler", f"tcp://127.0.0.1:{port}")
    _, stderr = _finish(proc, check=False)
    lines = stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1, stderr
    assert lines[0].startswith(f"error: cannot reach the Dask scheduler at tcp://127.0.0.1:{port}")
    assert not out.exists()


# A learner's install (no `[grader]` extra): Dask cannot be imported.
WITHOUT_DASK = """
import sys
sys.modules["dask"] = sys.modules["distributed"] = None
from grader.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_scheduler_without_dask_installed_is_one_line_and_writes_nothing(subs, tmp_path):
    out = tmp_path / "out"
    args = ["autograde", str(subs), "--out", str(out), "--scheduler", "tcp://127.0.0.1:1"]
    proc = subprocess.run(
        [sys.executable, "-c", WITHOUT_DASK, *args], cwd=REPO_ROOT, capture_output=True, text=True
    )
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    assert "--scheduler needs Dask" in lines[0] and ".[grader]" in lines[0]
    assert not out.exists()


def test_a_worker_with_two_threads_is_refused(subs):
    from types import SimpleNamespace

    from grader.batch.cluster import worker_problem

    worker = SimpleNamespace(address="tcp://w:1", state=SimpleNamespace(nthreads=2))
    problem = worker_problem(None, "", dask_worker=worker)
    assert "--nthreads 1" in problem and "tcp://w:1" in problem


def _job():
    from grader.batch.job import Job
    from grader.judging.trusted import models
    from grader.settings import load

    settings = load()
    model = models([cluster_class.NB], settings.release_cache)[cluster_class.NB]
    return Job("s", cluster_class.NB, b"{}", model, settings.snapshot())


def test_a_notebook_that_failed_on_the_cluster_gets_a_row_saying_so():
    from types import SimpleNamespace

    from dask.distributed import KilledWorker

    from grader.batch.cluster import CRASHED, _outcome

    def failed(err):
        return SimpleNamespace(status="error", exception=lambda: err)

    job = _job()
    raised = _outcome(job, failed(RuntimeError("boom"))).to_json()
    assert raised["flags"] == ["grader error on a Dask worker: RuntimeError: boom"]
    killed = _outcome(job, failed(KilledWorker("k", None, 3))).to_json()
    assert killed["flags"] == ["Dask workers died 4 times grading this notebook"]
    for result in (raised, killed):
        assert result["status"] == "not graded"
        assert all(r["points"] == 0.0 and r["message"] == CRASHED for r in result["rows"])
    with pytest.raises(UserError, match="lost the Dask scheduler"):
        _outcome(job, SimpleNamespace(status="cancelled"))
