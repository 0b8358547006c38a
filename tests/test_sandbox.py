"""The grader's walls, piece by piece: the wire format's limits, the bounded judge, the
settings, and small runs of the real CLI for what the big batch cannot show (no sandbox,
no bubblewrap, a notebook whose judging goes over its limits)."""

import asyncio
import csv
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from fixtures.adversarial import _write, honest, with_answer
from jupyter_client.provisioning import LocalProvisioner

from grader import wire
from grader.course import REPO_ROOT
from grader.judging.judge import FAILED_IN_KERNEL, Record, judge_bounded, judge_visible
from grader.run import execute
from grader.run.execute import SandboxKernelManager, SandboxProvisioner

CLI = [sys.executable, "-m", "grader", "autograde"]
FAST = ["--cell-timeout", "20", "--notebook-timeout", "200", "--quiet"]


# ----------------------------------------------------------------------------- wire


def test_wire_round_trips_what_records_hold():
    value = {
        "none": None,
        "flags": [True, False],
        "numbers": (1, -(2**70), 2.5, float("nan"), 1j),
        "text": "é",
        "bytes": b"\x00\x01",
        "matrix": np.arange(6.0).reshape(2, 3),
        "fortran": np.asfortranarray(np.ones((3, 2), dtype=np.float32)),
        "scalar": np.float32(2.0),
        "empty": np.zeros((0, 4), dtype=np.int64),
    }
    back = wire.decode(wire.encode(value))
    assert back.keys() == value.keys()
    assert back["numbers"][:3] == (1, -(2**70), 2.5) and back["numbers"][4] == 1j
    assert type(back["scalar"]) is np.float32 and back["fortran"].flags.f_contiguous
    for key in ("matrix", "fortran", "empty"):
        assert back[key].dtype == value[key].dtype and np.array_equal(back[key], value[key])
    assert back["matrix"].flags.writeable


def test_wire_stands_in_for_what_is_not_numbers():
    class Sub(np.ndarray):
        pass

    back = wire.decode(wire.encode([np.ones(2).view(Sub), object(), np.array(["a"])]))
    found: list = []
    plain = wire.plain(back, found)
    assert found == ["Sub"] and type(plain[0]) is np.ndarray
    assert isinstance(plain[1], wire.Opaque) and plain[1].type_name == "object"
    assert plain[1] != plain[1], "a stand-in equals nothing"
    assert plain[2].type_name == "array of <U1"


def test_encoder_refuses_more_than_the_limits():
    big = np.zeros(20 * 2**20 // 8)
    with pytest.raises(wire.TooLarge):
        wire.encode([big] * 100_000)  # no references: this would be 2 TB
    with pytest.raises(wire.TooLarge):
        wire.encode(list(range(wire.LIMITS.entries + 1)))
    nested: list = []
    for _ in range(wire.LIMITS.depth + 2):
        nested = [nested]
    with pytest.raises(wire.TooLarge):
        wire.encode(nested)


def _npy(shape, descr="<f8", data=b""):
    header = f"{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape!r}, }}".encode()
    header += b" " * (-(len(header) + 11) % 64) + b"\n"
    npy = b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header + data
    return b"a" + len(npy).to_bytes(4, "little") + npy


@pytest.mark.parametrize(
    "data, why",
    [
        (_npy((10**6, 10**6), data=bytes(80)), "does not match"),  # 8 TB claimed
        (_npy((3,), descr="|O8", data=bytes(24)), "plain numbers"),  # objects: never
        (b"l" + (10**9).to_bytes(4, "little") + b"N", "more than allowed"),
        (b"l" + (200_000).to_bytes(4, "little") + b"N" * 200_000, "more than allowed"),
        (b"l\x01\x00\x00\x00" * 40 + b"N", "nested deeper"),
        (b"s\x05\x00\x00\x00ab", "more than allowed or than the bytes left"),
        (b"s\x02\x00\x00\x00\xff\xfe", "not UTF-8"),
        (b"NN", "bytes after the value"),
        (b"Z", "unknown tag"),
        (b"d\x01\x00\x00\x00iAAAAAAAAN", "key that is not text"),
    ],
)
def test_decoder_refuses_hostile_bytes_before_allocating(data, why):
    with pytest.raises(wire.Malformed, match=why):
        wire.decode(data)


def test_decoding_has_a_time_limit():
    data = wire.encode(list(range(5000)))
    with pytest.raises(wire.Malformed, match="took more than"):
        wire.decode(data, wire.Limits(decode_seconds=0.0))


def test_one_budget_for_the_values_of_one_record():
    budget = wire.Budget(wire.Limits(entries=1500))
    piece = wire.encode(list(range(999)))
    wire.decode(piece, budget=budget)
    with pytest.raises(wire.Malformed, match="more than"):
        wire.decode(piece, budget=budget)


def test_stream_frames_are_bounded():
    class Sock:
        def __init__(self, data):
            self.buf = io.BytesIO(data)

        def recv(self, n):
            return self.buf.read(n)

    good = wire.frame({"k": "log"})
    assert wire.decode(wire.read_frame(Sock(good))) == {"k": "log"}
    assert wire.read_frame(Sock(b"")) is None
    with pytest.raises(wire.Malformed, match="a frame of"):
        wire.read_frame(Sock((2**31).to_bytes(4, "little")))
    with pytest.raises(wire.Malformed, match="ended inside"):
        wire.read_frame(Sock(good[:-1]))


# ----------------------------------------------------------------------------- judge


def _request(imports):
    return {"imports": imports, "tests": [], "cells": [], "records": {}, "seeds": {}}


def test_judge_runs_in_a_process_with_a_time_limit():
    start = time.monotonic()
    assert judge_bounded(_request("import time\ntime.sleep(120)"), 3, 512) == {"exceeded": "time"}
    assert time.monotonic() - start < 60, "the judging process was not stopped"


def test_judge_runs_in_a_process_with_a_memory_limit():
    result = judge_bounded(_request("x = bytearray(4 * 2**30)"), 60, 256)
    assert result == {"exceeded": "memory"}
    assert judge_bounded(_request("x = bytearray(2**20)"), 60, 256) == {
        "verdicts": {},
        "tampered": [],
    }


def test_a_check_that_failed_only_in_the_kernel_never_shows_the_kernel_s_text():
    """The kernel's own CheckFailed text is the learner's to write: it could carry an
    earlier hidden cell's inputs out through the feedback. The judge fails the cell with
    its own fixed message, and passes a cell whose kernel run raised nothing else."""
    smuggled = {"ename": "CheckFailed", "evalue": "SMUGGLED hidden inputs: [0.25, -1.5]"}
    for error, passed in ((smuggled, False), ({"ename": "ValueError", "evalue": "x"}, True)):
        record = Record(wire.encode({"kernel_error": error}), "test cell")
        verdict = judge_visible("pass", {}, record)
        assert verdict[:2] == (passed, "" if passed else FAILED_IN_KERNEL), verdict
        assert "SMUGGLED" not in verdict[1]


def test_a_checkout_under_tmp_is_visible_above_the_private_tmp(monkeypatch):
    """CI may clone the course under /tmp: the sandbox's private /tmp is mounted before the
    read-only binds, so the venv and attnlib/ under /tmp are bound on top of it."""
    from grader.run import sandbox

    roots = ["/tmp/ci-clone/.venv", "/tmp/ci-clone/attnlib"]
    monkeypatch.setattr(sandbox, "read_roots", lambda: roots)
    args = sandbox.command(
        ["python"], scratch="/home/sandbox", ipc="/run/ipc", files={}, folders=[],
        uid=None, scratch_mb=16,
    )  # fmt: skip
    tmp = args.index("--tmpfs")
    assert args[tmp + 1] == "/tmp"
    for root in roots:
        bound = next(i for i, a in enumerate(args) if a == "--ro-bind" and args[i + 1] == root)
        assert bound > tmp, f"{root} is bound before the private /tmp hides it"


def test_the_unprivileged_sandbox_holds_its_root_read_only(monkeypatch):
    """Not root (a hub's instructor), the folders bwrap makes are the user's own: the root is
    remounted read-only, and only the scratch folder and the private /tmp take writes."""
    from grader.run import sandbox

    monkeypatch.setattr(sandbox, "read_roots", lambda: ["/usr"])
    ipc = tempfile.mkdtemp()
    os.chmod(ipc, 0o777)  # the unprivileged user binds it
    targets = ["/x", "/home/x", "/usr/x", "/home/student/x", "/tmp/x", f"{ipc}/x"]
    script = "; ".join(f"(echo 1 > {t}) 2>/dev/null && echo {t} wrote || echo {t} refused"
                       for t in targets)  # fmt: skip
    args = sandbox.command(
        ["sh", "-c", script], scratch="/home/student", ipc=ipc, files={}, folders=[],
        uid=None, scratch_mb=16,
    )  # fmt: skip
    as_user = ["runuser", "-u", "nobody", "--"] if os.geteuid() == 0 else []
    try:
        proc = subprocess.run(as_user + args, capture_output=True, text=True, timeout=60)
    finally:
        shutil.rmtree(ipc)
    said = dict(line.split() for line in proc.stdout.splitlines())
    assert said == {t: "refused" for t in targets[:3]} | {t: "wrote" for t in targets[3:]}, (
        proc.stdout + proc.stderr
    )


# ----------------------------------------------------------------------------- settings


def test_settings_come_from_nbgrader_config_with_overrides(tmp_path):
    from grader.settings import load

    (tmp_path / "nbgrader_config.py").write_text(
        "c = get_config()\nc.GraderSettings.cell_timeout = 7\n"
        "c.GraderSettings.validate_timeout = 9\n"
        "c.Execute.timeout = c.GraderSettings.validate_timeout\n"
    )
    settings = load({"notebook_timeout": 50, "memory_mb": None}, path=tmp_path)
    assert (settings.cell_timeout, settings.notebook_timeout) == (7, 50)
    assert settings.memory_mb == load(path=tmp_path).memory_mb
    course = load()
    config = (REPO_ROOT / "nbgrader_config.py").read_text()
    assert "import grader" not in config and "from grader" not in config
    assert f"c.GraderSettings.cell_timeout = {course.cell_timeout}" in config
    assert "c.Execute.timeout = c.GraderSettings.validate_timeout" in config


# ----------------------------------------------------------------------------- small runs


def _run(subs, out, *extra, env=None):
    return subprocess.run(
        [*CLI, str(subs), "--out", str(out), *FAST, *extra],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=900,
        env=env,
    )


def _rows(out):
    with open(out / "grades.csv", newline="") as fh:
        return {(r["student"], r["exercise"]): r for r in csv.DictReader(fh)}


def test_without_bubblewrap_the_grader_stops_with_one_line(tmp_path):
    _write(tmp_path / "subs", "honest", honest())
    bare = tmp_path / "bin"
    bare.mkdir()
    env = {**os.environ, "PATH": str(bare)}
    proc = _run(tmp_path / "subs", tmp_path / "out", env=env)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    assert "apt-get install bubblewrap" in lines[0] and "--no-sandbox" in lines[0]
    assert not (tmp_path / "out" / "grades.csv").exists()


def test_no_sandbox_grades_trusted_work_and_says_so(tmp_path):
    _write(tmp_path / "subs", "honest", honest())
    proc = _run(tmp_path / "subs", tmp_path / "out", "--no-sandbox")
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = tmp_path / "out"
    assert (out / "grades.csv").read_text().splitlines()[0] == (
        "student,notebook,exercise,points,max_points,message,comment,by_hand"
    )
    assert _rows(out)[("honest", "softmax")]["points"] == "2"
    assert "without the os sandbox" in proc.stdout.lower()
    assert "WITHOUT the OS sandbox" in (out / "report" / "index.html").read_text()
    with open(out / "report" / "flags.csv", newline="") as fh:
        flags = list(csv.DictReader(fh))
    assert flags[0] == {
        "student": "(all)",
        "notebook": "(all)",
        "reason": "graded WITHOUT the OS sandbox (--no-sandbox): trusted submissions only",
    }


def _start_and_kill(folder):
    """(the provisioner a sleeping process was started by, its exit code when kill returned)"""

    async def start_and_kill():
        km = SandboxKernelManager(
            command=[sys.executable, "-c", "import time; time.sleep(60)"],
            transport="ipc",
            connection_file=str(folder / "kernel.json"),
        )
        await km.start_kernel()
        provisioner = km.provisioner
        process = provisioner.process
        await provisioner.kill()
        exited = process.poll()
        await km.shutdown_kernel(now=True)
        return provisioner, exited

    return asyncio.run(start_and_kill())


def test_a_killed_kernel_is_reaped_before_kill_returns(tmp_path):
    """The grader's provisioner starts every kernel, and stopping one does not wait for
    jupyter_client's next look at it: the process is gone when ``kill`` returns."""
    provisioner, exited = _start_and_kill(tmp_path)
    assert isinstance(provisioner, SandboxProvisioner)
    assert exited is not None


def test_without_its_entry_point_kernels_start_with_jupyter_s_provisioner(tmp_path, monkeypatch):
    """A checkout updated without ``make setup`` lacks the entry point: grading goes on."""
    monkeypatch.setattr(execute, "entry_points", lambda **kw: [])
    execute.provisioner_name.cache_clear()
    try:
        provisioner, _ = _start_and_kill(tmp_path)
    finally:
        execute.provisioner_name.cache_clear()
    assert type(provisioner) is LocalProvisioner


BIG_RESULT = """
def hard_lookup(query, keys, values):
    return np.zeros(6 * 2**20)  # 48 MB: recorded, but too big to judge in 40 MB
"""


def test_judging_over_its_limits_costs_only_that_notebook(tmp_path):
    subs = tmp_path / "subs"
    _write(subs, "honest", honest())
    _write(subs, "big", with_answer("hard_lookup", BIG_RESULT))
    proc = _run(subs, tmp_path / "out", "--judge-memory-mb", "40")
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = _rows(tmp_path / "out")
    for exercise in ("softmax", "hard_lookup", "soft_lookup"):
        assert rows[("big", exercise)]["points"] == "0"
        assert "grading exceeded its limits" in rows[("big", exercise)]["message"]
        assert rows[("honest", exercise)]["message"] == ""
    with open(tmp_path / "out" / "report" / "flags.csv", newline="") as fh:
        flags = {(r["student"], r["reason"]) for r in csv.DictReader(fh)}
    assert ("big", "grading exceeded its limits (memory)") in flags
    assert not [f for f in flags if f[0] == "honest"]


def test_release_cache_is_built_from_solutions_not_notebooks(tmp_path):
    """A notebooks/ folder that a learner or JupyterLab edited changes nothing: the grader
    builds its trusted release from solutions/ (one nbgrader run per content hash)."""
    from grader.course import release_path
    from grader.judging import trusted
    from grader.settings import load

    folder = trusted.release_folder(load().release_cache)
    assert (folder / ".complete").is_file()
    assert trusted.release_folder(load().release_cache) == folder  # cached by content
    for nb in folder.glob("*/*.ipynb"):
        committed = release_path(nb.parent.name)
        assert nb.read_bytes() == committed.read_bytes(), "run `make release`"
    assert shutil.which("bwrap"), "make test installs bubblewrap"


# ----------------------------------------------------------------------------- limits (issue 23)


SHM = "dd if=/dev/zero of=/dev/shm/f bs=1M count=64 2> /dev/null; echo shm $(du -m /dev/shm/f)"


def _as_nobody() -> list[str]:
    return ["runuser", "-u", "nobody", "--"] if os.geteuid() == 0 else []


def test_the_unprivileged_sandbox_is_sealed_once_its_kernel_is_up(monkeypatch):
    """Not root (a hub's instructor): once the kernel's sockets exist, the grader's own user
    remounts the IPC folder read-only inside the sandbox, so no file, symlink, chmod or
    growing kernel.json lands on the host; /dev takes no files; /dev/shm is size-limited."""
    from grader.run import sandbox

    monkeypatch.setattr(sandbox, "read_roots", lambda: ["/usr"])
    if os.geteuid() == 0:  # the seal runs as the sandbox's user, with a Python they can run
        seal = [*_as_nobody(), "/usr/bin/python3", "-m", "grader.run.remount"]
        monkeypatch.setattr(sandbox, "SEAL", seal)
    ipc = tempfile.mkdtemp()
    os.chmod(ipc, 0o777)
    attempts = {
        "fill": f"dd if=/dev/zero of={ipc}/fill bs=1M count=8",
        "symlink": f"ln -s / {ipc}/root",
        "chmod": f"chmod 777 {ipc}/ready",
        "grow": f"echo x >> {ipc}/ready",
        "dev": "echo x > /dev/x",
    }
    script = "; ".join(
        [
            f"echo up > {ipc}/ready",  # until sealed, a file in the folder can be rewritten
            f"n=0; while (: > {ipc}/probe) 2>/dev/null && [ $n -lt 600 ]; do "
            "n=$((n + 1)); sleep 0.05; done",
            *(
                f"({cmd}) > /dev/null 2>&1 && echo {k} wrote || echo {k} refused"
                for k, cmd in attempts.items()
            ),  # fmt: skip
            SHM,
        ]
    )
    args = sandbox.command(
        ["sh", "-c", script], scratch="/home/student", ipc=ipc, files={}, folders=[],
        uid=None, scratch_mb=16, shm_mb=4,
    )  # fmt: skip
    proc = subprocess.Popen(_as_nobody() + args, stdout=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not os.path.exists(f"{ipc}/probe") and time.monotonic() < deadline:
            time.sleep(0.05)
        sandbox.seal(ipc, None, proc.pid)
        out, _ = proc.communicate(timeout=60)
    finally:
        proc.kill()
        shutil.rmtree(ipc)
    said = dict(line.split()[:2] for line in out.splitlines())
    assert said == dict.fromkeys(attempts, "refused") | {"shm": "4"}, out


def test_the_root_sandbox_s_dev_takes_no_files_and_its_shm_is_capped(monkeypatch):
    """Root mode: the kernel's uid finds /dev read-only (its device nodes still work) and
    /dev/shm a tmpfs of ``shm_mb``."""
    from grader.run import sandbox

    if os.geteuid() != 0:
        pytest.skip("the root sandbox needs root")
    monkeypatch.setattr(sandbox, "read_roots", lambda: ["/usr"])
    script = "(echo x > /dev/x) 2> /dev/null && echo dev wrote || echo dev refused; " + SHM
    with tempfile.TemporaryDirectory() as ipc:
        args = sandbox.command(
            ["sh", "-c", script], scratch="/home/student", ipc=ipc, files={}, folders=[],
            uid=61999, scratch_mb=16, shm_mb=4,
        )  # fmt: skip
        proc = subprocess.run(args, capture_output=True, text=True, timeout=60)
    said = dict(line.split()[:2] for line in proc.stdout.splitlines())
    assert said == {"dev": "refused", "shm": "4"}, proc.stdout + proc.stderr


HOLD = "import time; b = bytes(range(256)) * (40 * 4096); time.sleep(3)"  # 40 MB, touched
BOMB = """
import os, time
for _ in range(100):
    if os.fork() == 0:
        time.sleep(3)
        os._exit(0)
"""


def _group(limits):
    from grader.run import sandbox

    group = sandbox.limit_group(limits)
    if not group:
        pytest.skip("no cgroup can be made here (the rlimit fallback applies)")
    return group


def test_a_sandbox_s_processes_share_one_memory_and_process_budget():
    """The shared cgroup module: children that each stay small go over the group's memory
    together (one is killed), a fork loop stops at its process count, and both are told."""
    from grader.run import cgroups

    group = _group(cgroups.Limits(memory_mb=64, cpus=1, processes=16))
    try:
        holders = " ".join(f"({sys.executable} -c '{HOLD}'; echo $?) &" for _ in range(3))
        held = subprocess.run(
            cgroups.join_command(group, ["sh", "-c", f"{holders} wait"]),
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert "137" in held.stdout.split(), held.stdout + held.stderr
        assert cgroups.exceeded(group) == ["memory"]
        bomb = subprocess.run(
            cgroups.join_command(group, [sys.executable, "-c", BOMB]),
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert "BlockingIOError" in bomb.stderr, bomb.stderr
        assert cgroups.exceeded(group) == ["memory", "processes"]
    finally:
        cgroups.end_processes(group)
        cgroups.remove(group)
    assert not [f for f in group if f.exists()]


def test_a_killed_worker_s_folders_and_cgroups_go_with_the_next_job(tmp_path, monkeypatch):
    """A worker SIGKILLed mid-notebook leaves its job folder (the notebook, kernel.json) and
    its sandbox's cgroup, with a process still in it: the next job on the machine removes
    them, and leaves a live worker's folder alone."""
    from grader.run import cgroups, sandbox

    cgroups.remove(_group(cgroups.Limits(64, 1, 16)))  # skips where no cgroup can be made
    worker = (
        "import time\n"
        "from grader.run import cgroups, sandbox\n"
        "folder = sandbox.private_folder()\n"
        "open(folder + '/kernel.json', 'w').write('{}')\n"
        "group = sandbox.limit_group(cgroups.Limits(64, 1, 16))\n"
        "print(folder, *group, flush=True)\n"
        "time.sleep(600)\n"
    )
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    proc = subprocess.Popen([sys.executable, "-c", worker], stdout=subprocess.PIPE, text=True,
                            env=env, cwd=REPO_ROOT)  # fmt: skip
    folder, *group = proc.stdout.readline().split()
    # A process the worker's sandbox left; reaped here as soon as it dies, as a host's init
    # would (this machine's pid 1 reaps orphans late, and a zombie keeps its cgroup busy).
    left = subprocess.Popen(cgroups.join_command([Path(g) for g in group], ["sleep", "600"]))
    threading.Thread(target=left.wait, daemon=True).start()
    while left.pid not in cgroups.pids([Path(group[0])]) and left.poll() is None:
        time.sleep(0.01)  # until it has joined
    proc.kill()
    proc.wait()
    live = tmp_path / f"{sandbox.JOB_PREFIX}{os.getpid()}-live"
    live.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    mine = sandbox.private_folder()
    cgroups.remove(sandbox.limit_group(cgroups.Limits(64, 1, 16)))
    assert sorted(os.listdir(tmp_path)) == sorted([live.name, os.path.basename(mine)])
    assert left.poll() is not None and not [g for g in group if os.path.exists(g)], group


def test_without_a_cgroup_the_report_says_the_limits_are_per_process(tmp_path):
    """A host that allows no cgroup (simulated: no hierarchy found) grades as before, with
    rlimits per process, and the report's flags say so once for the whole run."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(
        "import grader.run.cgroups\ngrader.run.cgroups.cgroup_version = lambda fs=None: None\n"
    )
    _write(tmp_path / "subs", "honest", honest())
    env = {**os.environ, "PYTHONPATH": str(site)}
    proc = _run(tmp_path / "subs", tmp_path / "out", env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert _rows(tmp_path / "out")[("honest", "softmax")]["points"] == "2"
    with open(tmp_path / "out" / "report" / "flags.csv", newline="") as fh:
        flags = list(csv.DictReader(fh))
    assert flags[0]["student"] == "(all)" and "per process only" in flags[0]["reason"], flags


SLEEPER = "import time\n\ntime.sleep(600)  # past the cell limit: its kernel is replaced\n"


def test_a_notebook_s_two_runs_share_one_time_budget(tmp_path):
    """Every answer cell outlasts the cell limit (each costs a kernel start): the short run
    spends the notebook's time, and the full run gets what is left (none), so its kernels
    ran notebook_timeout + KERNEL_SPARE at most in all (issue 32: 2.6 times it). The honest
    notebook graded beside it keeps full marks."""
    from grader.batch.job import KERNEL_SPARE

    subs, out = tmp_path / "subs", tmp_path / "out"
    _write(subs, "honest", honest())
    nb = honest()
    for cell in nb.cells:
        if cell.metadata.get("nbgrader", {}).get("solution") and cell.cell_type == "code":
            cell.source = SLEEPER + cell.source
    _write(subs, "sleeper", nb)
    # Four answer cells of 5 s each spend the 20 s budget in the short run.
    limits = ["--notebook-timeout", "20", "--cell-timeout", "5", "--quiet"]
    proc = subprocess.run([*CLI, str(subs), "--out", str(out), *limits], cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=900)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    timings = json.loads((out / "work/results/sleeper/01_soft_lookup.json").read_text())["timings"]
    assert 20 <= timings["kernels"] <= 20 + KERNEL_SPARE, timings
    assert os.stat(out).st_mode & 0o777 == 0o700, "OUT is its owner's alone"
    rows = _rows(out)
    assert all(rows[("honest", e)]["message"] == "" for e in ("softmax", "hard_lookup"))
    assert all(rows[("sleeper", e)]["points"] == "0" for e in ("softmax", "hard_lookup"))
