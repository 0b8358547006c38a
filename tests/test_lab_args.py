"""`python -m attnlib.lab`: its own actions, and every other argument passed to JupyterLab."""

from pathlib import Path

import pytest

from attnlib import lab


@pytest.mark.parametrize(
    "argv, jupyter",
    [
        (["--port", "8899"], ["--port", "8899"]),  # issue 34: was "invalid choice: '8899'"
        (["--port=8899", "--no-browser"], ["--port=8899", "--no-browser"]),
        (["--work", "elsewhere", "--ServerApp.ip", "0.0.0.0"], ["--ServerApp.ip", "0.0.0.0"]),
        ([], []),
    ],
)
def test_options_it_does_not_know_go_to_jupyter_lab_with_their_values(argv, jupyter):
    args, passed = lab._split(argv)
    assert args.action is None and passed == jupyter
    assert args.work == (Path("elsewhere") if "--work" in argv else lab.workspace.WORK)


def test_actions_are_parsed_whole_and_refuse_jupyter_options(capsys):
    args, passed = lab._split(["reset", "08_attention_maps", "induction-score"])
    assert (args.action, args.notebook, args.exercise, passed) == (
        "reset",
        "08_attention_maps",
        "induction-score",
        [],
    )
    with pytest.raises(SystemExit):
        lab._split(["update", "--port", "8899"])
    assert "unrecognized arguments: --port 8899" in capsys.readouterr().err


def _make_line(*args):
    """The command `make ARGS` would run last (make -n: printed, nothing run)."""
    import shutil
    import subprocess

    from grader.course import REPO_ROOT

    if shutil.which("make") is None:
        pytest.skip("no make")
    proc = subprocess.run(["make", "-n", *args], cwd=REPO_ROOT, capture_output=True, text=True,
                          timeout=60, env={"PATH": "/usr/bin:/bin"})  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip().splitlines()[-1].split()


def test_make_lab_passes_lab_options_to_jupyter_lab():
    line = _make_line("lab", "LAB_OPTIONS=--port 8899 --no-browser")
    assert line[1:] == ["-m", "attnlib.lab", "--port", "8899", "--no-browser"]
    args, passed = lab._split(line[3:])
    assert args.action is None and passed == ["--port", "8899", "--no-browser"]
    assert _make_line("lab")[1:] == ["-m", "attnlib.lab"]


def test_make_formgrader_takes_out_port_and_ip_to_jupyter_lab():
    import argparse

    from grader.commands import formgrader

    line = _make_line("formgrader", "OUT=graded", "PORT=8899", "IP=0.0.0.0")
    assert line[1:] == ["-m", "grader", "formgrader", "graded", "--port=8899", "--ip=0.0.0.0"]
    parser = argparse.ArgumentParser()
    formgrader.add_arguments(parser)
    args = parser.parse_args(line[4:])
    assert args.out == Path("graded") and args.jupyter_args == ["--port=8899", "--ip=0.0.0.0"]
    assert _make_line("formgrader", "OUT=graded")[1:] == ["-m", "grader", "formgrader", "graded"]
