"""Every grader setting is reachable from the command line through traitlets' own parsing
(``--GraderSettings.<name>=``), the old short options keep their names and meaning, and a
bad value is one line (grader.settings, grader.cli)."""

import pickle
import subprocess
import sys
import typing
from collections.abc import Mapping
from dataclasses import asdict

import pytest
from traitlets import Bool, Dict, Enum, Float, Integer, Unicode

from grader import settings
from grader.course import REPO_ROOT
from grader.errors import UserError
from grader.settings import GraderSettings, Snapshot


def _from_command_line(argv: list[str]) -> GraderSettings:
    ours, rest = settings.split_argv(argv)
    assert rest == [], rest
    return settings.load(argv=ours)


def _other_value(name: str, value):
    """A valid value of setting ``name`` that differs from ``value``."""
    trait = GraderSettings.class_traits()[name]
    if isinstance(trait, Enum):
        return next(v for v in trait.values if v != value)
    if name == "lms_pattern":
        return r"(?P<id>\d+)_(?P<file>.+)"
    if name == "zip_timezone":
        return "Europe/Paris"
    if isinstance(trait, Dict) and name == "extensions":
        return {"ada": 48.0}
    if isinstance(trait, Dict):
        return {"01_soft_lookup": "2026-12-10 17:00"}
    if isinstance(value, bool):
        return not value
    if isinstance(value, str):
        return value + "-elsewhere"
    if value is None:
        return 7
    return value + (1 if isinstance(trait, Integer) else 0.5)


@pytest.mark.parametrize("name", sorted(GraderSettings.class_trait_names(config=True)))
def test_each_setting_round_trips_from_the_command_line(name):
    course = asdict(settings.load().snapshot())
    wanted = _other_value(name, course[name])
    option = f"--GraderSettings.{name}"
    if isinstance(wanted, dict):  # traitlets' form: one key=value per item
        argv = [a for k, v in wanted.items() for a in (option, f"{k}={v}")]
    else:
        argv = [f"{option}={wanted}"]
    given = asdict(_from_command_line(argv).snapshot())
    assert given[name] == wanted and type(given[name]) is type(wanted)
    assert {k: v for k, v in given.items() if k != name} == {
        k: v for k, v in course.items() if k != name
    }


def _snapshot_type(trait) -> object:
    """The type a Snapshot field of ``trait`` has: Enum a Literal of its values, Dict a
    read-only Mapping with the trait's keys."""
    if isinstance(trait, Enum):
        kind = typing.Literal[tuple(trait.values)]
    elif isinstance(trait, Dict):
        kind = Mapping
    else:
        kind = next(t for c, t in _PLAIN if isinstance(trait, c))
    return kind | None if trait.allow_none else kind


_PLAIN = ((Bool, bool), (Integer, int), (Float, float), (Unicode, str))


def test_the_snapshot_has_each_setting_with_its_type():
    """GraderSettings defines the settings; Snapshot, the frozen copy jobs carry, must say
    the same: add a field (of the trait's type) for a new trait."""
    fields = typing.get_type_hints(Snapshot)
    traits = GraderSettings.class_traits(config=True)
    assert sorted(fields) == sorted(traits), set(fields) ^ set(traits)
    for name, trait in traits.items():
        wanted, field = _snapshot_type(trait), fields[name]
        if wanted is Mapping:  # keys of text (both Dicts' key_trait is Unicode)
            assert typing.get_origin(field) is Mapping and typing.get_args(field)[0] is str, name
        else:
            assert field == wanted, (name, field, wanted)


def test_the_snapshot_is_frozen_plain_data():
    given = GraderSettings(due_dates={"01_soft_lookup": "2026-12-10 17:00"})
    snapshot = given.snapshot()
    with pytest.raises(AttributeError):
        snapshot.cell_timeout = 1
    given.due_dates = {}
    assert snapshot.due_dates == {"01_soft_lookup": "2026-12-10 17:00"}
    assert pickle.loads(pickle.dumps(snapshot)) == snapshot


SHORT = [
    (["--jobs", "3"], {"workers": 3}),
    (["--cell-timeout", "7"], {"cell_timeout": 7}),
    (["--notebook-timeout=90"], {"notebook_timeout": 90}),
    (["--memory-mb", "1024"], {"memory_mb": 1024}),
    (["--judge-seconds", "2.5"], {"judge_seconds": 2.5}),
    (["--judge-memory-mb", "40"], {"judge_memory_mb": 40}),
    (["--seed", "12345"], {"seed": 12345}),
    (["--no-sandbox"], {"sandbox": False}),
    (["--full-run"], {"skip_demo_cells": False}),
]


@pytest.mark.parametrize(("argv", "expected"), SHORT, ids=[a[0] for a, _ in SHORT])
def test_the_short_options_keep_their_meaning(argv, expected):
    snapshot = _from_command_line(argv).snapshot()
    assert {name: getattr(snapshot, name) for name in expected} == expected


def test_settings_options_are_picked_out_of_the_command_in_any_order():
    argv = ["subs", "--cell-timeout", "7", "--students", "ada", "bo", "--no-sandbox",
            "--out", "o", "--GraderSettings.unpack_depth", "2", "--quiet"]  # fmt: skip
    ours, rest = settings.split_argv(argv)
    assert ours == ["--cell-timeout", "7", "--no-sandbox", "--GraderSettings.unpack_depth", "2"]
    assert rest == ["subs", "--students", "ada", "bo", "--out", "o", "--quiet"]


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--jobs", "-1"], "--jobs: -1 refused; workers accepts a whole number of at least 0"),
        (["--seed", "abc"], "--seed: 'abc' refused"),
        (["--GraderSettings.cell_timout=3"], "unknown setting --GraderSettings.cell_timout"),
        (["--GraderSettings.unpack_depth"], "expected one argument"),
    ],
)
def test_a_bad_value_is_a_user_error(argv, says):
    with pytest.raises(UserError) as err:
        _from_command_line(argv)
    assert says in str(err.value) and "\n" not in str(err.value)


def test_a_bad_value_stops_the_command_in_one_line(tmp_path):
    """Through the real entry point: exit 2, one line on stderr, nothing graded or written."""
    proc = subprocess.run(
        [sys.executable, "-m", "grader", "autograde", str(tmp_path / "subs"),
         "--out", str(tmp_path / "out"), "--GraderSettings.memory_mb=0"],
        capture_output=True, text=True, cwd=REPO_ROOT, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith("error: --GraderSettings.memory_mb: 0 refused")
    assert proc.stderr.count("\n") == 1
    assert not (tmp_path / "out").exists()


def test_help_lists_every_short_option():
    text = settings.options_help()
    for option in [*settings.ALIASES, *settings.FLAGS]:
        assert f"  --{option} " in text


@pytest.mark.parametrize(
    ("argv", "shown"),
    [
        ([], ["error: "]),  # the one line, as without the options
        (["--log-level", "info"], ["error: "]),
        (["--debug"], ["DEBUG grader.cli: python -m grader export", "Traceback", "error: "]),
    ],
)
def test_diagnostics_are_logged_from_the_level_asked(tmp_path, capsys, argv, shown):
    """--log-level and --debug, before or after the command's name: diagnostics go to stderr
    through logging; the error stays one line at the end, its traceback only with --debug."""
    from grader import cli

    for where in (argv + ["export", str(tmp_path)], ["export", str(tmp_path), *argv]):
        assert cli.main(where) == 2
        out, err = capsys.readouterr()
        found = [next((i for i, ln in enumerate(err.splitlines()) if s in ln), -1) for s in shown]
        assert out == "" and -1 not in found and found == sorted(found), (where, err)
        assert ("Traceback" in err) == ("DEBUG" in err) == ("--debug" in argv), err
        assert err.splitlines()[-1].startswith("error: ") and "holds no graded class" in err
