"""JupyterHub's configuration for the workshop server (``python -m hub start`` runs
``jupyterhub -f`` this file, in ``ROOT/hub``, with ``ATTN_HUB_ROOT`` set).

Everything comes from the saved settings (``hub.settings``) and passwords: the public
address, shared-password login making unix users, the course spawner with its limits, the
idle culler, and JupyterHub's proxy (configurable-http-proxy, installed by ``make hub-setup``).
"""

import json
import sys

from hub import settings
from hub.spawner import CourseSpawner, WorkshopAuthenticator

c = get_config()  # type: ignore[name-defined]  # noqa: F821 (JupyterHub provides it)
s = settings.load()
secrets = json.loads(s.passwords_file.read_text())

c.JupyterHub.bind_url = f"http://{s.ip}:{s.port}"
c.JupyterHub.hub_bind_url = f"http://127.0.0.1:{s.hub_port}"
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{s.proxy_api_port}"
c.ConfigurableHTTPProxy.command = [str(settings.proxy_command())]
c.JupyterHub.db_url = f"sqlite:///{s.state / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(s.state / "jupyterhub_cookie_secret")
c.JupyterHub.pid_file = str(s.state / "jupyterhub.pid")
c.JupyterHub.last_activity_interval = s.activity_interval
c.JupyterHub.cleanup_servers = True  # stopping the hub stops every attendee's server

c.JupyterHub.authenticator_class = WorkshopAuthenticator
c.WorkshopAuthenticator.user_password = secrets["students"]
c.WorkshopAuthenticator.admin_password = secrets["instructors"]
c.WorkshopAuthenticator.admin_users = set(s.instructors)
c.WorkshopAuthenticator.allow_all = True  # anyone with the room's password
c.WorkshopAuthenticator.create_system_users = True
c.WorkshopAuthenticator.add_user_cmd = [
    "useradd", "--create-home", "--home-dir", f"{s.homes}/USERNAME", "--shell", "/bin/bash",
    "--groups", s.group, "--comment", f"{s.course_id} workshop",
]  # fmt: skip
c.WorkshopAuthenticator.username_pattern = r"^[a-z][a-z0-9_-]{0,31}$"

c.JupyterHub.spawner_class = CourseSpawner
c.Spawner.cmd = [str(s.env / "bin" / "jupyterhub-singleuser")]
c.Spawner.default_url = "/lab"
c.Spawner.start_timeout = 120
c.Spawner.http_timeout = 90
# A server stops on SIGTERM; on SIGINT, without a terminal, it waits out the whole timeout.
c.LocalProcessSpawner.interrupt_timeout = 1

c.JupyterHub.services = [
    {
        "name": "idle-culler",
        "command": [
            sys.executable, "-m", "jupyterhub_idle_culler",
            f"--timeout={s.idle_timeout}", f"--cull-every={s.cull_every}",
        ],
    }
]  # fmt: skip
c.JupyterHub.load_roles = [
    {
        "name": "idle-culler",
        "scopes": ["list:users", "read:users:activity", "read:servers", "delete:servers"],
        "services": ["idle-culler"],
    }
]
