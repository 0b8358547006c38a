"""The workshop server's commands without a server (no root, no users): settings come from
the course, and bad input gets one clear line, never a traceback."""

import subprocess
import sys

import pytest
from traitlets.config.loader import PyFileConfigLoader

from grader.course import REPO_ROOT, assignments
from hub import instructor, limits, settings


def _hub(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hub", *args], cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=120)  # fmt: skip


def test_the_course_id_is_the_courses_own():
    config = PyFileConfigLoader("nbgrader_config.py", path=str(REPO_ROOT)).load_config()
    assert settings.Settings().course_id == config.CourseDirectory.course_id


def test_a_command_without_a_server_says_how_to_start_one(tmp_path):
    proc = _hub("--root", str(tmp_path), "release", "01_soft_lookup")
    assert proc.returncode != 0
    assert proc.stderr.strip().splitlines() == [
        f"error: no workshop server at {tmp_path} (no readable {tmp_path}/hub/settings.json): "
        "start one with `make hub` (or pass --root)"
    ], proc.stderr


def test_grading_an_unknown_notebook_lists_the_known_ones(tmp_path, capsys):
    s = settings.Settings(root=tmp_path)
    assert instructor.grade(s, ["01_soft_lookups"]) == 2
    said = capsys.readouterr().err.strip()
    assert said == "error: unknown notebook '01_soft_lookups'; the course has: " + ", ".join(
        assignments()
    )
    assert not any(tmp_path.iterdir()), "nothing may be made for a refused command"


def test_cgroup_limits_are_the_settings():
    s = settings.Settings()
    bounds = limits.Limits(s.memory_mb, s.cpus, s.processes)
    v2 = bounds.cgroup_files(2)[""]
    assert int(v2["memory.max"]) == s.memory_mb * 2**20
    assert v2["cpu.max"] == f"{int(s.cpus * 100_000)} 100000"
    assert v2["pids.max"] == str(s.processes)
    v1 = bounds.cgroup_files(1)
    assert int(v1["memory"]["memory.limit_in_bytes"]) == s.memory_mb * 2**20
    assert v1["cpu"]["cpu.cfs_quota_us"] == str(int(s.cpus * 100_000))


def test_start_takes_its_root_from_the_environment_as_the_help_says(tmp_path, monkeypatch):
    from hub import cli

    monkeypatch.setenv(settings.ROOT_VARIABLE, str(tmp_path))
    assert cli._settings_for_start(cli._parser().parse_args(["start"])).root == tmp_path.resolve()
    given = cli._parser().parse_args(["--root", str(tmp_path / "other"), "start"])
    assert cli._settings_for_start(given).root == (tmp_path / "other").resolve()


def test_a_group_the_host_already_had_is_refused(tmp_path):
    """The end of the day removes the hub's groups and their members: never the host's."""
    from hub import server
    from hub.environment import SetupError

    with pytest.raises(SetupError, match="already exists and this hub did not make it"):
        server.ensure_group("root", tmp_path / "groups.json")
    assert not (tmp_path / "groups.json").exists()
