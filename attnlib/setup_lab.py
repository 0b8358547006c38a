"""JupyterLab set-up for the course environment (run by `make setup` and by each launch).

Ships the course's JupyterLab settings into this environment. They make a learner's first
open quiet: no news or update pop-ups, no kernel picker, notebooks listed in course
order. They are JupyterLab *overrides* (defaults a learner can still change), written
to ``<env>/share/jupyter/lab/settings/overrides.json``. The browser test checks them.
Which of nbgrader's extensions show is decided per launch (``attnlib.lab``), not here.
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


def main() -> None:
    print(f"JupyterLab settings written to {write_settings()}")


if __name__ == "__main__":
    main()
