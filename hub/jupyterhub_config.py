"""JupyterHub's configuration for the workshop server (``python -m hub start`` runs
``jupyterhub -f`` this file, in ``ROOT/hub``, with ``ATTN_HUB_ROOT`` set).

Everything comes from the saved settings (``hub.settings``) and passwords: the public
address (TLS when a certificate is set, ``hub.tls``), each account's own password (set at
its first sign-in, with the room's password as the code) making unix users, the course
spawner with its limits, the idle culler, and JupyterHub's proxy (configurable-http-proxy,
installed by ``make hub-setup``).
"""

import json
import sys

from hub import settings, tls
from hub.spawner import CourseSpawner, WorkshopAuthenticator

c = get_config()  # type: ignore[name-defined]  # noqa: F821 (JupyterHub provides it)
s = settings.load()
secrets = json.loads(s.passwords_file.read_text())

pair = tls.files(s)
if pair:  # the proxy serves TLS; the hub and servers behind it listen on 127.0.0.1 only
    c.JupyterHub.ssl_cert, c.JupyterHub.ssl_key = map(str, pair)
c.JupyterHub.bind_url = f"{'https' if pair else 'http'}://{s.ip}:{s.port}"
c.JupyterHub.hub_bind_url = f"http://127.0.0.1:{s.hub_port}"
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{s.proxy_api_port}"
c.ConfigurableHTTPProxy.command = [str(settings.proxy_command())]
c.JupyterHub.db_url = f"sqlite:///{s.state / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(s.state / "jupyterhub_cookie_secret")
c.JupyterHub.pid_file = str(s.state / "jupyterhub.pid")
c.JupyterHub.last_activity_interval = s.activity_interval
c.JupyterHub.cleanup_servers = True  # stopping the hub stops every attendee's server

c.JupyterHub.authenticator_class = WorkshopAuthenticator
c.WorkshopAuthenticator.room_password = secrets["students"]
c.WorkshopAuthenticator.instructor_password = secrets["instructors"]
c.WorkshopAuthenticator.dbm_path = str(s.own_passwords)
c.WorkshopAuthenticator.check_passwords_on_startup = False  # no database from before its 1.0
c.WorkshopAuthenticator.min_password_length = 8
c.WorkshopAuthenticator.request_otp = True  # the login form's second field: the code
c.WorkshopAuthenticator.otp_prompt = "Room password (first sign-in only):"
c.WorkshopAuthenticator.admin_users = set(s.instructors)
c.WorkshopAuthenticator.allow_all = True  # anyone with the room's password makes an account
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
