"""`python -m attnlib.lab`: open the course in JupyterLab, on the learner's own copy.

    python -m attnlib.lab [JUPYTER LAB OPTIONS]     # `make lab`
    python -m attnlib.lab update                    # `make update`
    python -m attnlib.lab reset NOTEBOOK [EXERCISE] # `make reset NOTEBOOK=... EXERCISE=...`

The first launch makes ``work/`` from the release (see ``attnlib.lab.workspace``) and JupyterLab
opens it. Each launch states which of nbgrader's extensions it shows with a *launch profile*:
a Jupyter config folder put first on ``JUPYTER_CONFIG_PATH`` for that server only (a page
config for the JupyterLab plugins, a server config for the server extensions). A learner's
profile turns off nbgrader's instructor tools, which the environment has installed for every
launch; the instructor's (``python -m grader formgrader``) turns them on. The environment
itself is never switched.
"""

import argparse
import json
import os
import sys
from pathlib import Path

from attnlib.lab import workspace

# nbgrader's extensions (its installation guide says which is which): the instructor's tools.
# Create Assignment has a JupyterLab part only; the others a server extension too.
INSTRUCTOR_PLUGINS = [
    "@jupyter/nbgrader:formgrader",
    "@jupyter/nbgrader:course-list",
    "@jupyter/nbgrader:create-assignment",
]
INSTRUCTOR_SERVER_EXTENSIONS = [
    "nbgrader.server_extensions.formgrader",
    "nbgrader.server_extensions.course_list",
]
# The learner's: the Validate button and the Assignments list (for a course with an exchange).
LEARNER_PLUGINS = ["@jupyter/nbgrader:validate-assignment", "@jupyter/nbgrader:assignment-list"]
LEARNER_SERVER_EXTENSIONS = [
    "nbgrader.server_extensions.validate_assignment",
    "nbgrader.server_extensions.assignment_list",
]


def write_profile(folder: Path, instructor: bool) -> Path:
    """A Jupyter config folder that shows (instructor) or hides nbgrader's instructor tools."""
    disabled = {p: not instructor for p in INSTRUCTOR_PLUGINS} | dict.fromkeys(
        LEARNER_PLUGINS, False
    )
    enabled = {e: instructor for e in INSTRUCTOR_SERVER_EXTENSIONS} | dict.fromkeys(
        LEARNER_SERVER_EXTENSIONS, True
    )
    (folder / "labconfig").mkdir(parents=True, exist_ok=True)
    (folder / "labconfig" / "page_config.json").write_text(
        json.dumps({"disabledExtensions": disabled}, indent=1) + "\n"
    )
    (folder / "jupyter_server_config.json").write_text(
        json.dumps({"ServerApp": {"jpserver_extensions": enabled}}, indent=1) + "\n"
    )
    return folder


def _settings_current() -> None:
    """The course's JupyterLab settings (``make setup`` writes them; a shared, read-only
    environment keeps the ones its owner wrote)."""
    from attnlib.lab import settings  # not at import: `python -m attnlib.lab.settings` runs it

    path = settings.settings_path()
    try:
        current = json.loads(path.read_text())
    except (OSError, ValueError):
        current = None
    if current != settings.SETTINGS:
        try:
            settings.write_settings()
        except OSError as err:
            print(f"note: could not write the course's JupyterLab settings ({err})")


def launch(root_dir: Path, profile: Path, args: list[str], cwd: Path | None = None) -> None:
    """Replace this process with ``jupyter lab`` on ``root_dir`` using ``profile``."""
    _settings_current()
    env = dict(os.environ)
    env["JUPYTER_CONFIG_PATH"] = os.pathsep.join(
        [str(profile), *filter(None, [os.environ.get("JUPYTER_CONFIG_PATH")])]
    )
    # Jupyter refuses to run as root unless told; a learner's laptop never needs this.
    allow_root = ["--allow-root"] if hasattr(os, "geteuid") and os.geteuid() == 0 else []
    cmd = [sys.executable, "-m", "jupyterlab", *allow_root, f"--ServerApp.root_dir={root_dir}"]
    sys.stdout.flush()
    if cwd is not None:
        os.chdir(cwd)
    os.execve(sys.executable, [*cmd, *args], env)


ACTIONS = ("update", "reset")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m attnlib.lab",
        description=__doc__.split("\n")[0],
        epilog="Any other option goes to `jupyter lab`, e.g. `python -m attnlib.lab --port 8899`.",
    )
    parser.add_argument("--work", type=Path, default=workspace.WORK, help="the learner's folder")
    sub = parser.add_subparsers(dest="action")
    sub.add_parser("update", help="bring a new release into the work folder, keeping answers")
    reset = sub.add_parser("reset", help="put one exercise (or a notebook) back as released")
    reset.add_argument("notebook", nargs="?", default="")
    reset.add_argument("exercise", nargs="?", default=None)
    return parser


def _split(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    """``(args, jupyter_args)``: an action (update, reset) parsed whole; otherwise
    ``--work`` and ``--help`` are ours and every other argument is JupyterLab's, values
    included (``--port 8899``: a bare value must not be read as an action)."""
    parser = _parser()
    ours = argparse.ArgumentParser(add_help=False)
    ours.add_argument("--work", type=Path, default=workspace.WORK)
    known, rest = ours.parse_known_args(argv)
    if rest and rest[0] in ACTIONS:
        return parser.parse_args(argv), []
    if "-h" in rest or "--help" in rest:
        parser.parse_args(["--help"])  # prints the help and exits
    return argparse.Namespace(work=known.work, action=None), rest


def main(argv: list[str] | None = None) -> int:
    args, jupyter_args = _split(sys.argv[1:] if argv is None else list(argv))
    try:
        if args.action == "update":
            print("\n".join(workspace.update(work=args.work)))
        elif args.action == "reset":
            print(workspace.reset(args.notebook, args.exercise, work=args.work))
        else:
            for line in workspace.ensure(work=args.work):
                print(line)
            profile = write_profile(args.work / ".jupyter", instructor=False)
            launch(args.work.resolve(), profile, jupyter_args)
    except workspace.WorkspaceError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0
