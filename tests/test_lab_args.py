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
