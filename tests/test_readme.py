"""The README is true: every command it shows is run by the suite (or the browser test),
the files it names exist, and the grading outputs it lists are the ones the grader writes."""

import json
import re
import subprocess
import sys

import pytest

from grader.course import REPO_ROOT

README = (REPO_ROOT / "README.md").read_text()
MAKEFILE = (REPO_ROOT / "Makefile").read_text()

# Each command the README shows -> (file, text in it) proving a test or `make test` runs it.
COVERED = {
    "make lab": ("tests/test_browser.py", "_lab_command(course)"),  # make lab's own command
    "make test": (".ci/run", "make test"),
    "make test-fast": ("tests/test_markers.py", "_fast_expression()"),
    "make update": ("tests/test_workspace.py", 'lab("update")'),
    "make reset": ("tests/test_workspace.py", '"make", "-s", "reset"'),
    "make release": ("tests/test_release_sync.py", "from grader.release import release"),
    "make grade": ("tests/fixtures/batch.py", '"-m", "grader", "autograde"'),
    "make formgrader": ("tests/test_formgrader.py", '_recipe("formgrader", out)'),
    "make totals": ("tests/test_formgrader.py", '"make", "-s", "totals"'),
    "make export": ("tests/test_totals_export.py", '_cli("export", out, "--roster", roster)'),
    "make collect": ("tests/test_instructor_grades.py", '_cli("collect", archive, "--roster"'),
    "make bundle": ("tests/test_bundle.py", '"-m", "grader", "bundle"'),
    "make handouts": ("tests/test_handouts.py", "from grader.commands.handouts import"),
    # `make test` depends on `setup`, whose recipe makes the venv and pip-installs the course.
    "python3 -m venv .venv": ("Makefile", "$(PYTHON) -m venv $(VENV)"),
    # The attendees' install, run in the unzipped bundle (the Makefile's PIP uses -c too).
    ".venv/bin/pip install -c constraints.txt -e .": (
        "tests/test_bundle.py",
        '"constraints.txt", "-e", "."',
    ),
    # The attendees' launch, run in the unzipped bundle (and by `make lab`).
    ".venv/bin/python -m attnlib.lab": (
        "tests/test_bundle.py",
        '[sys.executable, "-m", "attnlib.lab"]',
    ),
    "python -m attnlib.lab": ("tests/test_bundle.py", '[sys.executable, "-m", "attnlib.lab"]'),
    "conda env create -f environment.yml": ("tests/test_pins.py", "environment.yml"),
    # The workshop server: tests/test_hub.py runs its recipes and the instructor's commands.
    "make hub": ("tests/test_hub.py", '_recipe("hub", root, options)'),
    "make hub-end": ("tests/test_hub.py", '_recipe("hub-end", root, "")'),
    "python -m hub": ("tests/test_hub.py", '["python", "-m", "hub", *args]'),
    "conda activate attention-course": ("environment.yml", "name: attention-course"),
    # "Grading a big class": the Dask cluster commands, run as shown by tests/test_cluster.py.
    "dask scheduler": ("tests/test_cluster.py", '[DASK, "scheduler"'),
    "DASK_DISTRIBUTED__WORKER__DAEMON=False dask worker": (
        "tests/test_cluster.py",
        '"DASK_DISTRIBUTED__WORKER__DAEMON": "False"',
    ),
    "python -m grader autograde": ("tests/test_cluster.py", '"--scheduler", address'),
}
# What `make X` runs, for the make targets above.
RECIPES = {
    "release": "$(PY) -m grader release",
    "collect": "$(PY) -m grader collect $(ZIP) --roster $(ROSTER) --into $(SUBMISSIONS)",
    "grade": "$(PY) -m grader autograde $(SUBMISSIONS) --out $(OUT)",
    "formgrader": "$(PY) -m grader formgrader $(OUT)",
    "totals": "$(PY) -m grader totals $(OUT)",
    "export": "$(PY) -m grader export $(OUT)",
    "bundle": "$(PY) -m grader bundle",
    "handouts": "$(PY) -m grader handouts --out handouts",
    "lab": "$(PY) -m attnlib.lab",
    "update": "$(PY) -m attnlib.lab update",
    "reset": "$(PY) -m attnlib.lab reset $(NOTEBOOK) $(EXERCISE)",
    "test": "$(PY) -m pytest -n 2",
    "test-fast": '$(PY) -m pytest -m "not (graded or grading or hub or browser or bundle or slow)"',
    "bench": "$(PY) -m bench",
    "hub": "$(PY) -m hub --root $(HUB_ROOT) start $(HUB_OPTIONS)",
    "hub-end": "$(PY) -m hub --root $(HUB_ROOT) end",
}


def readme_commands() -> list[str]:
    """The command lines of the README's shell blocks, comments dropped."""
    blocks = re.findall(r"^ *```(?:sh|bash|console)\n(.*?)^ *```", README, re.S | re.M)
    lines = (line.split("#")[0].strip() for block in blocks for line in block.splitlines())
    return [line for line in lines if line]


def _recipe(target: str) -> str:
    match = re.search(rf"^{target}:.*\n((?:\t.*\n)+)", MAKEFILE, re.M)
    assert match, f"Makefile has no `{target}` target"
    return match.group(1)


def test_the_two_commands_come_first():
    first = readme_commands()[:2]
    assert first == ["make lab", "make test"], first
    assert README.index("make lab") < README.index("## Learners")


@pytest.mark.parametrize("command", readme_commands())
def test_every_command_shown_is_tested(command):
    key = next((k for k in COVERED if command == k or command.startswith(k + " ")), None)
    assert key, f"README shows `{command}`, which no test covers: add a test, then COVERED"
    path, evidence = COVERED[key]
    assert evidence in (REPO_ROOT / path).read_text(), f"{path} no longer runs `{command}`"
    if key.startswith("make "):
        target = key.split()[1]
        assert RECIPES[target] in _recipe(target), f"`{key}` no longer runs {RECIPES[target]}"
        for assignment in re.findall(r"(\w+)=\S+", command):  # e.g. SUBMISSIONS=..., OUT=...
            assert f"$({assignment})" in _recipe(target), f"`{key}` ignores {assignment}"


def test_make_test_runs_the_browser_test():
    assert re.search(r"^test: .*\bbrowser\b", MAKEFILE, re.M)
    assert "executable_path" in (REPO_ROOT / "tests" / "test_browser.py").read_text()


def test_attendee_set_up_steps_have_one_source():
    """The attendees' set-up is written once, between markers, and the bundle's README is
    built from that block (test_bundle.py checks the zip carries it)."""
    from grader.commands.bundle import SETUP_MARKERS, setup_steps, student_readme

    start, end = SETUP_MARKERS
    assert README.count(start) == README.count(end) == 1
    steps = setup_steps()
    assert README.index("## Workshop hosts") < README.index(start)
    assert steps in student_readme()
    shown = [c for c in readme_commands() if c in steps.splitlines()]
    assert shown[:3] == ["python3 -m venv .venv", ".venv/bin/pip install -c constraints.txt -e .",
                         ".venv/bin/python -m attnlib.lab"], shown  # fmt: skip


def test_instructor_guide_shows_every_instructor_command():
    """Every grader command (but the hosts' handouts) is shown as its make target."""
    from grader.cli import COMMANDS

    section = README[README.index("## Instructors") : README.index("## Workshop hosts")]
    for command in set(COMMANDS) - {"handouts"}:
        target = {"autograde": "grade"}.get(command, command)
        assert re.search(rf"^make {target}\b", section, re.M), f"`make {target}` not shown"
        assert f"-m grader {command}" in _recipe(target), f"`make {target}` runs no {command}"


def test_links_and_named_files_exist():
    for link in re.findall(r"\]\(([^)#]+)\)", README):
        assert (REPO_ROOT / link).exists(), f"README links to a missing {link}"
    for name in ("environment.yml", "pyproject.toml", "STYLE_GUIDE.md", "solutions", "notebooks"):
        assert name in README and (REPO_ROOT / name).exists(), name


def test_the_series_lists_every_notebook_in_order():
    from grader.course import assignments

    listed = re.findall(r"^\d+\. `(\d\d_\w+)`", README, re.M)
    assert listed == assignments(), "README's list of notebooks is out of date"


def test_grading_outputs_listed_are_written_by_the_grader():
    section = README[README.index("## Instructors") : README.index("## Workshop hosts")]
    listed = set(re.findall(r"`([\w/<>.-]+\.(?:csv|html|png|db)|[\w]+/)`", section))
    grader = "".join(p.read_text() for p in (REPO_ROOT / "grader").rglob("*.py"))
    # What the instructor downloads from the LMS (the README's term walk) is read, not written.
    from_the_lms = {"roster.csv", "export.csv"}
    for name in listed - {"notebooks/", "solutions/", "grader/"} - from_the_lms:
        stem = name.replace("<student>", "").strip("/").split("/")[-1] or name
        assert stem in grader, f"README says OUT holds {name}, but the grader never writes it"
    assert {"grades.csv", "totals.csv", "report/index.html"} <= listed


def test_bench_runner_states_the_machine_and_finds_the_benchmarks():
    """`make bench` (see docs/benchmarks.md) runs every bench/p*.py and states the machine."""
    probe = (
        "import json; from bench.__main__ import machine, modules, table; "
        "print(json.dumps([modules(), machine(), table([('m', '1 s', '<= 2 s')])]))"
    )
    run = subprocess.run([sys.executable, "-c", probe], cwd=REPO_ROOT, capture_output=True,
                         text=True, timeout=60)  # fmt: skip
    assert run.returncode == 0, run.stderr
    found, info, rows = json.loads(run.stdout)
    assert {"p1_series", "p4_first_feedback"} <= set(found)
    assert info["cores"].isdigit() and "GiB" in info["RAM"] and info["CPU"] != "unknown"
    assert info["torch"] != "not installed" and info["numpy"] != "not installed"
    assert rows[-1] == "| m | 1 s | <= 2 s |"
    wrong = subprocess.run([sys.executable, "-m", "bench", "p0_nothing"], cwd=REPO_ROOT,
                           capture_output=True, text=True, timeout=60)  # fmt: skip
    assert wrong.returncode != 0 and "no benchmark p0_nothing" in wrong.stderr
    doc = (REPO_ROOT / "docs" / "benchmarks.md").read_text()
    assert "Machine:" in doc and "cores" in doc and "| metric | measured | target |" in doc
