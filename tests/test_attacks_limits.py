"""The resource attacks of issue 23 (``fixtures/limits.py``), read from the big batch: each
sandbox is limited as a whole (memory with its tmpfs pages, processes), every place it may
write is bounded, and the host's IPC folder and connection file refuse it. Their points,
flags and messages are pinned with the rest of the batch (``test_autograde.py``)."""

from fixtures.adversarial import NB
from fixtures.attacks import seen

from grader.settings import load

SETTINGS = load()
OVER = {"limit_children", "limit_tmpfs", "limit_fork_bomb"}


def _mb(said) -> int:
    """The MB a fill command reported (its last word)."""
    return int(said[1].split()[-1])


def test_memory_is_one_budget_for_all_of_a_sandbox_s_processes(graded):
    """Four children, each far under memory_mb, together over it: one is killed."""
    statuses = seen(graded[1], "limit_children")["statuses"][1].split()
    assert "137" in statuses, statuses


def test_tmpfs_pages_count_in_the_memory_budget(graded):
    """/tmp, scratch and /dev/shm filled to their sizes, then children that alone fit: the
    tmpfs pages push the sandbox over memory_mb."""
    saw = seen(graded[1], "limit_tmpfs")
    sizes = {"tmp": SETTINGS.scratch_mb, "scratch": SETTINGS.scratch_mb, "shm": SETTINGS.shm_mb}
    for place, size in sizes.items():
        assert size - 16 <= _mb(saw[place]) <= size, (place, saw[place])
    assert "137" in saw["statuses"][1].split(), saw["statuses"]


def test_a_fork_bomb_stops_at_the_sandbox_s_process_limit(graded):
    forked, error = seen(graded[1], "limit_fork_bomb")["forked"][1].split()
    assert error == "BlockingIOError" and int(forked) < SETTINGS.max_processes


def test_dev_takes_no_files_and_dev_shm_is_capped(graded):
    saw = seen(graded[1], "limit_dev")
    assert saw["dev"][0] != 0 and "Read-only file system" in saw["dev"][1], saw["dev"]
    assert _mb(saw["dev_big"]) == 0, saw["dev_big"]
    assert _mb(saw["shm"]) <= SETTINGS.shm_mb, saw["shm"]


def test_disk_fills_stop_at_the_size_of_tmp_and_scratch(graded):
    saw = seen(graded[1], "limit_disk")
    for place in ("tmp", "scratch"):
        assert _mb(saw[place]) <= SETTINGS.scratch_mb, (place, saw[place])


def test_no_file_grows_past_file_mb(graded):
    """RLIMIT_FSIZE: a 300 MB write into /tmp (room for it) stops at file_mb, with EFBIG."""
    error, size = seen(graded[1], "limit_disk")["one_file"][1].splitlines()[-2:]
    assert "File too large" in error and int(size) == SETTINGS.file_mb * 2**20, (error, size)


def test_the_connection_file_and_the_ipc_folder_refuse_the_sandbox(graded):
    saw = seen(graded[1], "limit_kernel_json")
    for attempt in ("append", "chmod", "fill", "symlink", "chmod_folder"):
        assert saw[attempt][0] != 0, (attempt, saw[attempt])
    listing = saw["listing"][1].splitlines()
    assert any(line.startswith("-rw-r--r--") and line.endswith(" kernel.json") for line in listing)
    assert not any(name in saw["listing"][1] for name in (" fill", " root")), listing


def test_only_the_attacks_go_over_the_limits_of_their_sandbox(graded):
    """Honest controls are graded as before: in a cgroup, never over its limits."""
    results = graded[4]
    over = {s for (s, _), r in results.items() for f in r["flags"] if f.startswith("sandbox exc")}
    assert over == OVER
    sandboxed = [r for r in results.values() if r.get("limits")]
    assert sandboxed and {r["limits"] for r in sandboxed} == {"cgroup"}
    assert results[("honest", NB)]["limits"] == "cgroup"
