"""JupyterLab set-up for the course environment (run by `make setup` and by each launch):
`python -m attnlib.lab.settings`.

Ships the course's JupyterLab settings into this environment. They make a learner's first
open quiet: no news or update pop-ups, no kernel picker, notebooks listed in course
order. They are JupyterLab *overrides* (defaults a learner can still change), written
to ``<env>/share/jupyter/lab/settings/overrides.json``. The browser test checks them.
Which of nbgrader's extensions show is decided per launch (``attnlib.lab``), not here.

It also installs the course's custom CSS (JupyterLab's ``custom_css``, served from this
environment): the Validate dialog wraps each failed check's message instead of clipping it.
"""

import json
import sys
from pathlib import Path

SETTINGS = {
    # No "Would you like to get notified about official Jupyter news?" toast, no
    # update check (both would also reach out to the network).
    "@jupyterlab/apputils-extension:notification": {
        "checkForUpdates": False,
        "fetchNews": "false",
    },
    # The notebooks carry a kernelspec; if a machine lacks it, start the default
    # Python kernel rather than asking a beginner to pick one.
    "@jupyterlab/notebook-extension:tracker": {
        "autoStartDefaultKernel": True,
        "enableKernelInitNotification": False,
    },
    # 01_..., 02_..., in course order (natural sort, folders and notebooks first).
    "@jupyterlab/filebrowser-extension:browser": {
        "sortNotebooksFirst": True,
        "sortFileNamesNaturally": True,
        "showHiddenFiles": False,
    },
    # The extension manager queries PyPI when opened; a course laptop does not need it.
    "@jupyterlab/extensionmanager-extension:plugin": {"enabled": False},
}


def settings_path(prefix: str = sys.prefix) -> Path:
    """Where JupyterLab reads this environment's setting overrides."""
    return Path(prefix, "share", "jupyter", "lab", "settings", "overrides.json")


def write_settings(prefix: str = sys.prefix) -> Path:
    path = settings_path(prefix)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(SETTINGS, indent=2) + "\n")
    return path


# nbgrader's Validate dialog shows each error in a <pre>, one unwrapped line per message.
DIALOG_CSS = """\
/* Attention, step by step: the Validate dialog shows every message of a failed check whole. */
#validation-message pre {
  white-space: pre-wrap;
  overflow-wrap: anywhere;
}
"""


def css_path(prefix: str = sys.prefix) -> Path:
    """The course's custom.css, in this environment."""
    return Path(prefix, "share", "jupyter", "attention-course", "custom", "custom.css")


def lab_config_path(prefix: str = sys.prefix) -> Path:
    """JupyterLab's config file for this environment (read by `jupyter lab` only)."""
    return Path(prefix, "etc", "jupyter", "jupyter_lab_config.json")


def install_dialog_css(prefix: str = sys.prefix) -> Path:
    """Turn on JupyterLab's custom CSS (``LabApp.custom_css``) and serve the course's from
    this environment: the server's ``static_custom_path``, set through its documented
    ``tornado_settings``. Keeps whatever else the environment's Lab config holds."""
    css = css_path(prefix)
    css.parent.mkdir(parents=True, exist_ok=True)
    css.write_text(DIALOG_CSS)
    path = lab_config_path(prefix)
    config = json.loads(path.read_text()) if path.is_file() else {}
    config.setdefault("LabApp", {})["custom_css"] = True
    server = config.setdefault("ServerApp", {}).setdefault("tornado_settings", {})
    server["static_custom_path"] = [str(css.parent)]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(config, indent=2) + "\n")
    return css


def main() -> None:
    path = write_settings()
    install_dialog_css()
    print(f"JupyterLab settings written to {path}")


if __name__ == "__main__":
    main()
