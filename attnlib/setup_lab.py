"""One-time JupyterLab set-up for the course environment (run by `make setup`).

Ships the course's JupyterLab settings into this environment (no news or update
pop-ups) and enables nbgrader's extensions, so the Validate button is there.
"""

import json
import subprocess
import sys
from pathlib import Path

SETTINGS = {
    "@jupyterlab/apputils-extension:notification": {
        "checkForUpdates": False,
        "fetchNews": "false",
    },
    "@jupyterlab/filebrowser-extension:browser": {"sortNotebooksFirst": True},
}


def main() -> None:
    settings_dir = Path(sys.prefix, "share", "jupyter", "lab", "settings")
    settings_dir.mkdir(parents=True, exist_ok=True)
    (settings_dir / "overrides.json").write_text(json.dumps(SETTINGS, indent=2) + "\n")
    jupyter = Path(sys.executable).with_name("jupyter")
    for cmd in (
        [jupyter, "labextension", "enable", "@jupyter/nbgrader", "--level=sys_prefix"],
        [jupyter, "server", "extension", "enable", "nbgrader", "--sys-prefix"],
    ):
        subprocess.run(cmd, check=True, capture_output=True)
    print(f"JupyterLab settings written to {settings_dir}")


if __name__ == "__main__":
    main()
