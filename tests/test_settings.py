"""Every setting is checked when it is loaded (grader.settings.load), from nbgrader_config.py
and from the command line alike: a bad value is one line naming the setting as it was given
and what it accepts, before anything runs. The command line's own parsing is
tests/test_settings_cli.py."""

import subprocess
import sys
from datetime import UTC, datetime

import pytest

from grader import settings
from grader.course import REPO_ROOT, assignments
from grader.errors import UserError

NB = "01_soft_lookup"
ACCEPTS_DATE = "due_dates accepts {notebook: due date}"
ACCEPTS_HOURS = "extensions accepts {student: hours, or {notebook: hours}}"
BAD = [  # (argv, the whole line, or its start when it ends with what is accepted)
    (["--GraderSettings.late_penalty=-0.5"], "--GraderSettings.late_penalty: -0.5 refused; "
     "late_penalty accepts a number from 0 to 1"),
    (["--GraderSettings.late_penalty=1.5"], "--GraderSettings.late_penalty: 1.5 refused"),
    (["--GraderSettings.late_penalty=nan"], "--GraderSettings.late_penalty: nan refused"),
    (["--GraderSettings.judge_seconds=inf"], "--GraderSettings.judge_seconds: inf refused; "
     "judge_seconds accepts a finite number above 0"),
    (["--judge-seconds", "inf"], "--judge-seconds: inf refused"),
    (["--judge-seconds", "0"], "--judge-seconds: 0.0 refused"),
    (["--GraderSettings.stream_grace=-1"], "--GraderSettings.stream_grace: -1.0 refused"),
    (["--GraderSettings.sandbox_cpus=inf"], "--GraderSettings.sandbox_cpus: inf refused"),
    (["--cell-timeout", "0"], "--cell-timeout: 0 refused; cell_timeout accepts a whole "
     "number of at least 1"),
    (["--GraderSettings.cell_timeout=0"], "--GraderSettings.cell_timeout: 0 refused"),
    (["--GraderSettings.late_policy=soft"], "--GraderSettings.late_policy: 'soft' refused; "
     "late_policy accepts one of none, per_hour, per_day, refuse"),
    (["--GraderSettings.sandbox=maybe"], "--GraderSettings.sandbox: 'maybe' refused; "
     "sandbox accepts True or False"),
    (["--GraderSettings.due_dates", f"{NB}=not a date"],
     f"--GraderSettings.due_dates: {NB}: 'not a date' is not a date with a known zone; "
     + ACCEPTS_DATE),
    (["--GraderSettings.due_dates", f"{NB}=10"],
     f"--GraderSettings.due_dates: {NB}: '10' is not a whole date"),
    (["--GraderSettings.due_dates", f"{NB}=2026-12-10 17:00 CET"],
     f"--GraderSettings.due_dates: {NB}: '2026-12-10 17:00 CET' is not a date with a known"),
    (["--GraderSettings.due_dates", f"{NB}=2026-12-10 17:00 Mars/Base"],
     f"--GraderSettings.due_dates: {NB}: unknown time zone 'Mars/Base'"),
    (["--GraderSettings.due_dates", "99_nothing=2026-12-10"],
     "--GraderSettings.due_dates: unknown notebook '99_nothing'; the notebooks: "
     + ", ".join(assignments())),
    (["--GraderSettings.extensions=lots"], "--GraderSettings.extensions: 'lots' refused; "
     + ACCEPTS_HOURS),
    (["--GraderSettings.extensions", "ada=lots"],
     "--GraderSettings.extensions: ada: 'lots' is not a number of hours"),
    (["--GraderSettings.extensions", "ada=-3"],
     "--GraderSettings.extensions: ada: -3 is not a number of hours"),
    (["--GraderSettings.extensions", 'bo={"07_x": 3}'],
     "--GraderSettings.extensions: unknown notebook '07_x'; the notebooks: 01_soft_lookup"),
    (["--GraderSettings.extensions", f'bo={{"{NB}": "soon"}}'],
     f"--GraderSettings.extensions: bo: {NB}: 'soon' is not a number of hours"),
    (["--GraderSettings.extensions", "../x=3"],
     "--GraderSettings.extensions: '../x' is no student id"),
]  # fmt: skip


@pytest.mark.parametrize(("argv", "says"), BAD, ids=[" ".join(a) for a, _ in BAD])
def test_a_bad_setting_is_one_line_naming_it_as_typed(argv, says):
    ours, rest = settings.split_argv(argv)
    assert rest == []
    with pytest.raises(UserError) as err:
        settings.load(argv=ours)
    line = str(err.value)
    assert line.startswith(says) and "\n" not in line, line
    assert "accepts" in line or "the notebooks:" in line, "says what is accepted"


def test_a_bad_setting_in_the_config_file_names_the_file_and_the_setting(tmp_path):
    (tmp_path / settings.CONFIG_FILE).write_text(
        "c = get_config()\nc.GraderSettings.late_penalty = -0.5\n"
    )
    with pytest.raises(UserError, match=r"^nbgrader_config.py: c.GraderSettings.late_penalty: "
                       r"-0.5 refused; late_penalty accepts a number from 0 to 1$"):  # fmt: skip
        settings.load(path=tmp_path)
    (tmp_path / settings.CONFIG_FILE).write_text(
        "c = get_config()\nc.GraderSettings.cell_timout = 3\n"
    )
    with pytest.raises(UserError, match="c.GraderSettings.cell_timout: unknown setting"):
        settings.load(path=tmp_path)


def test_good_deadline_settings_are_kept_in_plain_form():
    extensions = ["--GraderSettings.extensions", "ada=48"]
    extensions += ["--GraderSettings.extensions", f'bo={{"{NB}": 24}}']
    argv = [*extensions, "--GraderSettings.due_dates", f"{NB}=2026-12-10 17:00"]
    loaded = settings.load(argv=settings.split_argv(argv)[0])
    assert loaded.extensions == {"ada": 48.0, "bo": {NB: 24.0}}
    assert loaded.due_dates == {NB: "2026-12-10 17:00"}


@pytest.mark.parametrize(
    ("text", "utc"),
    [("2026-12-10 17:00 +01:00", "2026-12-10 16:00"), ("2026-12-10 17:00", "2026-12-10 17:00"),
     ("2026-12-10T17:00Z", "2026-12-10 17:00"),
     ("2026-07-10 17:00 Europe/Paris", "2026-07-10 15:00"),
     ("2026-12-10 17:00 UTC", "2026-12-10 17:00"), ("2026-12-10", "2026-12-10 00:00")],
)  # fmt: skip
def test_due_dates_with_their_zones(text, utc):
    expected = datetime.strptime(utc, "%Y-%m-%d %H:%M").replace(tzinfo=UTC)
    assert settings.parse_due(text) == expected


def test_a_bad_setting_stops_grading_before_anything_runs(tmp_path):
    """Through the real entry point: a late policy's setting is refused before grading, not
    after it (it is applied only when the outputs are written)."""
    (tmp_path / "subs" / "ada").mkdir(parents=True)
    proc = subprocess.run(
        [sys.executable, "-m", "grader", "autograde", str(tmp_path / "subs"),
         "--out", str(tmp_path / "out"), "--GraderSettings.extensions=lots"],
        capture_output=True, text=True, cwd=REPO_ROOT, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith("error: --GraderSettings.extensions: 'lots' refused")
    assert proc.stderr.count("\n") == 1 and not (tmp_path / "out").exists()
