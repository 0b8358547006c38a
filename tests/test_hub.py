"""The workshop server end to end on localhost: `make hub`'s command, real unix users, the
real proxy, nbgrader's real exchange.

As root, the module starts the hub (its command read from the Makefile) in a fresh ROOT
with its own unix groups and free ports, over HTTPS with a test certificate (``--ssl-cert``,
``--ssl-key``; every request verifies it). Two attendees and the instructor sign in through
the hub's login page (a form post with its XSRF token, as a browser does), each setting a
password of their own with the room's (or the instructors') password as the code; a second
browser that knows every shared password cannot enter their accounts; the instructor
releases notebook 01; one attendee fetches it from the Assignments tab in Chromium, the
other through the same REST call the tab makes; they type their answers (one right, one
with a catalogued mistake) through Jupyter's contents API and submit; the instructor
collects and grades with the course grader and releases feedback; the attendees fetch it
and read their points. Attendees read neither the answers nor other people's processes, and
a grade run killed halfway reruns to the same grades. The last test runs `make hub-end`'s
command (backup, then every account, home and group removed). The teardown stops whatever
is left, even after a failure. Without root (it makes unix users) the module is skipped.
"""

import base64
import csv
import grp
import hashlib
import html
import io
import json
import os
import pwd
import re
import secrets
import shutil
import signal
import socket
import sqlite3
import ssl
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from contextlib import closing, contextmanager
from pathlib import Path

import nbformat
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from fixtures import attacks
from fixtures.adversarial import honest
from fixtures.batches import Batch, uses
from fixtures.validate import ANSI
from nbgrader.api import Gradebook
from test_browser import CHROMIUM, SHOTS, _free_port, _open_notebook, browser
from test_bundle import longest  # noqa: F401 (a fixture: the longest visible message)

from attnlib.lab import INSTRUCTOR_PLUGINS
from grader.course import REPO_ROOT, exercises
from grader.hidden import catalogue
from grader.results import gradebook
from hub import graderun, limits, spawner, tls
from hub import settings as hub_settings

pytestmark = pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() != 0,
    reason="the workshop server makes and removes unix users: run the tests as root",
)
requests = pytest.importorskip("requests", reason="JupyterHub's extra is not installed")

NB = "01_soft_lookup"
MAKEFILE = (REPO_ROOT / "Makefile").read_text()
TAG = secrets.token_hex(3)
RIGHT, WRONG, INSTRUCTOR = f"ta{TAG}", f"tb{TAG}", f"ti{TAG}"
GROUP, INSTRUCTORS = f"attn-t{TAG}", f"attn-ti{TAG}"
ROOM_PASSWORD, INSTRUCTOR_PASSWORD = secrets.token_urlsafe(9), secrets.token_urlsafe(32)
OWN = {name: secrets.token_urlsafe(12) for name in (RIGHT, WRONG, INSTRUCTOR)}  # set at sign-in
MEMORY_FILES = ("memory.max", "memory.limit_in_bytes")  # cgroup v2, v1
START_WITHIN = 420  # s: the first start builds the course environment


def _recipe(target: str, root: Path, options: str) -> list[str]:
    """What `make <target> HUB_ROOT=root HUB_OPTIONS=options` runs."""
    line = re.search(rf"^{target}:.*\n\t(.+)$", MAKEFILE, re.M).group(1)
    line = line.replace("$(HUB_ROOT)", str(root)).replace("$(HUB_OPTIONS)", options)
    words = line.replace("$(PY)", sys.executable).split()
    assert "$(" not in " ".join(words), f"unexpected make variable in `{target}`: {line}"
    return words


def _wrong_answer():
    """(exercise, mistake): a catalogued mistake both checks catch, in an exercise no other
    exercise calls (so it costs exactly that exercise's points)."""
    used = set().union(*uses(NB).values())
    for name, spec in catalogue(NB).items():
        for mistake in spec.mistakes:
            if name not in used and mistake.caught_by == "both":
                return name, mistake
    raise AssertionError(f"no catalogued mistake fits in {NB}")


def _wrong_submission():
    return Batch(NB, (_wrong_answer(),)).submission()


def _answers(nb) -> dict[str, str]:
    return {
        c.metadata["nbgrader"]["grade_id"]: c.source
        for c in nb.cells
        if c.metadata.get("nbgrader", {}).get("solution")
    }


class Hub:
    """The server under test: its process, settings and sign-in sessions."""

    def __init__(self, root: Path, cert: Path, key: Path):
        self.root = root
        self.port = _free_port()
        self.url = f"https://127.0.0.1:{self.port}"
        options = " ".join([
            "--ip 127.0.0.1", f"--port {self.port}", f"--hub-port {_free_port()}",
            f"--proxy-api-port {_free_port()}", f"--instructors {INSTRUCTOR}",
            f"--group {GROUP}", f"--instructor-group {INSTRUCTORS}",
            # `=`: a random password may start with "-", which argparse takes for an option
            f"--student-password={ROOM_PASSWORD}", f"--instructor-password={INSTRUCTOR_PASSWORD}",
            f"--ssl-cert {cert}", f"--ssl-key {key}",
        ])  # fmt: skip
        self.end_cmd = _recipe("hub-end", root, "") + ["--yes"]
        self.log = (root.parent / "hub.log").open("w")
        self.proc = subprocess.Popen(
            _recipe("hub", root, options), cwd=REPO_ROOT, stdout=self.log,
            stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
        self.sessions = {}

    def wait_ready(self) -> None:
        deadline = time.monotonic() + START_WITHIN
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, f"the hub exited:\n{self.log_text()}"
            try:
                if requests.get(f"{self.url}/hub/login", timeout=5).status_code == 200:
                    self.settings = hub_settings.load(self.root)
                    return
            except requests.ConnectionError:
                pass
            time.sleep(1)
        pytest.fail(f"the hub did not answer within {START_WITHIN} s:\n{self.log_text()}")

    def log_text(self, tail: int | None = 5000) -> str:
        self.log.flush()
        return Path(self.log.name).read_text()[-tail if tail else 0 :]

    def attempt(self, name: str, password: str, code: str = ""):
        """A fresh browser session that sends the login form: ``code`` in its second field
        (the room's password, which a new account needs)."""
        s = requests.Session()
        form = s.get(f"{self.url}/hub/login", timeout=10).text
        xsrf = re.search(r'name="_xsrf" value="([^"]+)"', form).group(1)
        data = {"username": name, "password": password, "otp": code, "_xsrf": xsrf}
        s.post(f"{self.url}/hub/login", timeout=60, data=data)
        return s

    def sign_in(self, name: str):
        """``name``'s own password (set now if new), then their Lab once their server runs."""
        s = self.attempt(
            name, OWN[name], INSTRUCTOR_PASSWORD if name == INSTRUCTOR else ROOM_PASSWORD
        )
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            lab = s.get(f"{self.url}/user/{name}/lab", timeout=30)
            if lab.url.startswith(f"{self.url}/user/{name}/lab") and lab.ok:
                self.sessions[name] = s
                return s
            time.sleep(1)
        pytest.fail(f"{name}'s server did not start within 120 s:\n{self.log_text()}")

    def call(self, name: str, method: str, path: str, **kwargs):
        s = self.sessions[name]
        xsrf = s.cookies.get("_xsrf", path=f"/user/{name}/")
        r = s.request(method, f"{self.url}/user/{name}/{path}", timeout=120,
                      headers={"X-XSRFToken": xsrf}, **kwargs)  # fmt: skip
        r.raise_for_status()
        return r

    def assignments(self, name: str, action: str = "") -> list[dict]:
        """The Assignments tab's own REST calls (list, fetch, submit, fetch_feedback)."""
        data = {"course_id": self.settings.course_id, "assignment_id": NB}
        if not action:
            r = self.call(name, "GET", "assignments", params={"course_id": data["course_id"]})
        else:
            r = self.call(name, "POST", f"assignments/{action}", data=data)
        body = r.json()
        assert body["success"], body
        return body["value"]

    def as_instructor(self, *args: str, timeout: float = 900) -> subprocess.CompletedProcess:
        """``python -m hub ARGS`` as the instructor."""
        return self.instructor_runs(["python", "-m", "hub", *args], self.settings.instructor,
                                    timeout)  # fmt: skip

    def instructor_runs(self, argv: list[str], cwd: Path, timeout: float = 900, check=True):
        """``argv`` as the instructor, with their Lab terminal's environment and umask
        (``hub.spawner``); it must succeed unless ``check`` is false."""
        proc = subprocess.run(self._instructor_command(argv), cwd=cwd, capture_output=True,
                              text=True, timeout=timeout, preexec_fn=_instructor_umask)  # fmt: skip
        assert proc.returncode == 0 or not check, f"{' '.join(argv)}:\n{proc.stdout}{proc.stderr}"
        return proc

    def instructor_starts(self, argv: list[str], output) -> subprocess.Popen:
        """``argv`` as the instructor, in a session of its own (a terminal's), not waited for."""
        return subprocess.Popen(self._instructor_command(argv), cwd=self.settings.instructor,
                                stdout=output, stderr=subprocess.STDOUT, start_new_session=True,
                                preexec_fn=_instructor_umask)  # fmt: skip

    def _instructor_command(self, argv: list[str]) -> list[str]:
        account = pwd.getpwnam(INSTRUCTOR)
        env = spawner.role_env(self.settings, instructor=True) | {
            "HOME": account.pw_dir, "USER": INSTRUCTOR, "LANG": "C.UTF-8",
        }  # fmt: skip
        cmd = ["runuser", "-u", INSTRUCTOR, "--", "env", "-i"]
        return cmd + [f"{k}={v}" for k, v in env.items()] + argv

    def stop(self) -> None:
        """`make hub-end`'s command if the last test did not run it, then whatever is left."""
        if self.proc.poll() is None:
            subprocess.run(self.end_cmd, cwd=REPO_ROOT, capture_output=True, timeout=180)
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=30)
        self.log.close()


def _instructor_umask() -> None:
    """As an instructor's terminal: umask 007, and a hangup ends the process (a test run under
    nohup, as CI may be, would otherwise hand down an ignored SIGHUP)."""
    os.umask(0o007)
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


def _remove_leftovers() -> None:
    for name in (RIGHT, WRONG, INSTRUCTOR):
        try:
            uid = pwd.getpwnam(name).pw_uid
        except KeyError:
            continue
        subprocess.run(["pkill", "-KILL", "-U", str(uid)], check=False)
        subprocess.run(["userdel", "--remove", name], check=False, capture_output=True)
    for group in (GROUP, INSTRUCTORS):
        subprocess.run(["groupdel", group], check=False, capture_output=True)


# What host commands wrote in the checkout before `make hub`, as they wrote it (0755/0644): an
# OUT under another name than out/ (another student's answered notebook, the seed),
# handouts/ (the executed solutions), an older `make collect`'s submitted/ and the LMS's
# roster the README keeps there, planted where none is.
OUT_PLANTED = REPO_ROOT / f"out-hub-test-{TAG}"
PLANTED = {
    OUT_PLANTED / "nbgrader" / "autograded" / "ada" / NB / f"{NB}.ipynb": "{}",
    OUT_PLANTED / "work" / "seed.json": '{"seed": 1}',
    OUT_PLANTED / "gradebook.db": "",
    REPO_ROOT / "handouts" / "solution" / f"{NB}.html": "<html></html>",
    REPO_ROOT / "submitted" / "ada" / f"{NB}.ipynb": "{}",
    REPO_ROOT / "roster.csv": "student,name,id\nada,Ada Lovelace,101\n",
}
SHARED_TOPS = ("handouts", "submitted", "roster.csv")  # planted only where there is none


def _plant_outputs() -> list[Path]:
    """The planted files' top paths (to remove after)."""
    tops = [OUT_PLANTED] + [REPO_ROOT / n for n in SHARED_TOPS if not (REPO_ROOT / n).exists()]
    for path, text in PLANTED.items():
        if any(top == path or top in path.parents for top in tops):
            path.parent.mkdir(mode=0o755, parents=True, exist_ok=True)
            path.write_text(text)
            os.chmod(path, 0o644)
    for top in tops:
        for folder, _dirs, _files in os.walk(top):
            os.chmod(folder, 0o755)
    return tops


def _remove(path: Path) -> None:
    if path.is_dir():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


@contextmanager
def _trusted(cert: Path):
    """Requests (REQUESTS_CA_BUNDLE) and Chromium (its key's hash: an attendee who checked the
    fingerprint) trust the test certificate, and only while the module runs."""
    import test_browser

    key = x509.load_pem_x509_certificate(cert.read_bytes()).public_key()
    spki = key.public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    pin = base64.b64encode(hashlib.sha256(spki).digest()).decode()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("REQUESTS_CA_BUNDLE", str(cert))
        args = [*test_browser.CHROMIUM_ARGS, f"--ignore-certificate-errors-spki-list={pin}"]
        patch.setattr(test_browser, "CHROMIUM_ARGS", args)
        yield


@pytest.fixture(scope="module")
def hub():
    if not shutil.which("useradd") or not hub_settings.proxy_command().is_file():
        pytest.fail("the hub's set-up is missing (useradd, the proxy): run `make hub-setup`")
    top = Path(tempfile.mkdtemp(prefix="attn-hub-test-"))
    os.chmod(top, 0o755)  # attendees must reach the course environment in it
    planted = _plant_outputs()
    cert, key = top / "test-cert.pem", top / "test-key.pem"
    tls.make_self_signed(cert, key, "127.0.0.1")
    server = Hub(top / "root", cert, key)
    try:
        with _trusted(cert):
            server.wait_ready()
            yield server
    finally:
        server.stop()
        _remove_leftovers()
        shutil.rmtree(top, ignore_errors=True)
        for path in planted:
            _remove(path)
    assert all(_no_account(n) for n in (RIGHT, WRONG, INSTRUCTOR)), "accounts left behind"


def _no_account(name: str) -> bool:
    try:
        pwd.getpwnam(name)
    except KeyError:
        return True
    return False


def test_attendees_sign_in_and_get_their_role(hub):
    """Any new name with the room's password as the code gets an account (made on first
    login) with the password typed as its own, and a Lab with the Assignments tab and
    Validate; the instructor's has formgrader too. A wrong code, and a host account the hub
    did not make, are refused."""
    for name in (RIGHT, WRONG):
        hub.sign_in(name)
        account = pwd.getpwnam(name)
        assert account.pw_dir == str(hub.settings.homes / name)
        assert os.stat(account.pw_dir).st_mode & 0o777 == 0o700, "homes must be private"
        assert name in grp.getgrnam(GROUP).gr_mem
    hub.sign_in(INSTRUCTOR)
    assert INSTRUCTOR in grp.getgrnam(INSTRUCTORS).gr_mem
    assert hub.call(INSTRUCTOR, "GET", "formgrader/api/assignments").ok
    with pytest.raises(requests.HTTPError, match="404"):
        hub.call(RIGHT, "GET", "formgrader/api/assignments")
    for name, plugins in ((RIGHT, set(INSTRUCTOR_PLUGINS)), (INSTRUCTOR, set())):
        html = hub.call(name, "GET", "lab").text
        found = re.search(r'id="jupyter-config-data"[^>]*>(.*?)</script>', html, re.S)
        assert set(json.loads(found.group(1))["disabledExtensions"]) == plugins, name
    for name, code in (("intruder", "not-the-password"), ("root", INSTRUCTOR_PASSWORD)):
        s = hub.attempt(name, secrets.token_urlsafe(12), code)
        assert not _enters(hub, s, name), f"{name} signed in"
    assert _no_account("intruder")


def _enters(hub, session, name: str) -> bool:
    """Whether ``session`` reaches ``name``'s server (their files, through Jupyter's API)."""
    r = session.get(f"{hub.url}/user/{name}/api/contents", timeout=30)
    return r.ok and r.url == f"{hub.url}/user/{name}/api/contents" and "content" in r.json()


def test_no_shared_password_opens_an_account_someone_has(hub):
    """Issue 46: a second browser that knows every shared secret (the room's password, the
    instructors') types it as the password, the code or both for an attendee's and an
    instructor's existing account, and gets in neither; the attendee's own password, in a
    third browser, still does (the honest control)."""
    for name in (RIGHT, INSTRUCTOR):
        if name not in hub.sessions:  # this test alone
            hub.sign_in(name)
    shared = (ROOM_PASSWORD, INSTRUCTOR_PASSWORD)
    for name in (RIGHT, INSTRUCTOR):
        for password, code in [(p, c) for p in shared for c in (p, "")]:
            assert not _enters(hub, hub.attempt(name, password, code), name), (name, password, code)
    assert _enters(hub, hub.attempt(RIGHT, OWN[RIGHT]), RIGHT), "the owner's own password"
    assert _enters(hub, hub.attempt(INSTRUCTOR, OWN[INSTRUCTOR]), INSTRUCTOR)


def test_the_hub_is_reached_over_https_with_the_given_certificate(hub, tmp_path):
    """`--ssl-cert/--ssl-key`: the public port serves the test certificate (every test here
    verifies it), plain HTTP there gets no page, an unverified client is refused, and the
    banner gives the certificate's fingerprint in place of the plain-HTTP warning."""
    cert, served = hub.root.parent / "test-cert.pem", tmp_path / "served.pem"
    served.write_text(ssl.get_server_certificate(("127.0.0.1", hub.port)))
    assert tls.fingerprint(served) == tls.fingerprint(cert)
    assert requests.get(f"{hub.url}/hub/login", timeout=10).ok  # the control: verified
    tls.make_self_signed(tmp_path / "other.pem", tmp_path / "other-key.pem", "127.0.0.1")
    with pytest.raises(requests.exceptions.SSLError):  # a client that trusts another one
        requests.get(f"{hub.url}/hub/login", timeout=10, verify=str(tmp_path / "other.pem"))
    try:
        plain = requests.get(f"http://127.0.0.1:{hub.port}/hub/login", timeout=10).status_code
    except requests.ConnectionError:
        plain = None
    assert plain != 200, "plain HTTP on the public port"
    log = hub.log_text(None)
    assert f"https://127.0.0.1:{hub.port}/" in log and tls.fingerprint(cert) in log, log[:3000]
    assert "PLAIN HTTP" not in log and "without SSL" not in log


def _servers(name: str) -> list[Path]:
    """``name``'s server processes as the host sees them (/proc), not the bwrap around one."""
    uid = pwd.getpwnam(name).pw_uid
    found = []
    for p in Path("/proc").iterdir():
        try:
            mine = p.name.isdigit() and p.stat().st_uid == uid
            cmdline = (p / "cmdline").read_bytes() if mine else b""
        except OSError:  # ended meanwhile
            continue
        if b"jupyterhub-singleuser" in cmdline and not cmdline.startswith(b"bwrap\0"):
            found.append(p)
    return found


def test_servers_run_from_the_shared_environment_with_limits(hub):
    """Each server runs the course environment (readable by all, writable by root only),
    with the per-attendee process limit (and a cgroup or a memory rlimit)."""
    s = hub.settings
    assert os.stat(s.env).st_mode & 0o777 == 0o755 and os.stat(s.env).st_uid == 0
    servers = _servers(RIGHT)
    assert servers, "no server process runs as the attendee"
    cmdline = (servers[0] / "cmdline").read_bytes().split(b"\0")
    assert Path(cmdline[0].decode()).resolve().is_relative_to(s.root), cmdline
    rlimits = (servers[0] / "limits").read_text()
    assert re.search(rf"Max processes\s+{s.processes}\s+{s.processes}", rlimits), rlimits
    cgroups = limits.folders(RIGHT, GROUP)
    if cgroups:  # the server is in the attendee's cgroup, which caps their memory
        joined = (servers[0] / "cgroup").read_text()
        assert f"/{GROUP}/{RIGHT}\n" in joined, joined
        memory = next(f for f in (c / n for c in cgroups for n in MEMORY_FILES) if f.is_file())
        assert int(memory.read_text()) == s.memory_mb * 2**20, memory
    else:  # no cgroup allowed here: a memory rlimit per process
        size = s.memory_mb * 2**20
        assert re.search(rf"Max address space\s+{size}\s+{size}", rlimits), rlimits
    assert "idle-culler@127.0.0.1" in hub.log_text(None), "the idle culler never asked the hub"


def _terminal(hub, name: str, command: str, marker: str, seconds: float = 60) -> str:
    """What ``command``, typed into a new terminal of ``name``'s Lab, prints until
    ``marker`` appears, the shell exits or ``seconds`` pass (the terminal's websocket, as
    the Lab's Terminal panel uses it)."""
    import asyncio

    from tornado.httpclient import HTTPRequest
    from tornado.websocket import websocket_connect

    terminal = hub.call(name, "POST", "api/terminals").json()["name"]
    session, prefix = hub.sessions[name], f"/user/{name}/"
    cookies = "; ".join(f"{c.name}={c.value}" for c in session.cookies if prefix.startswith(c.path))
    url = f"wss://127.0.0.1:{hub.port}{prefix}terminals/websocket/{terminal}"
    request = HTTPRequest(
        url, headers={"Cookie": cookies}, ca_certs=os.environ["REQUESTS_CA_BUNDLE"]
    )

    async def talk() -> str:
        conn = await websocket_connect(request)
        conn.write_message(json.dumps(["stdin", command + "\n"]))
        seen, deadline = "", time.monotonic() + seconds
        while marker not in seen and (left := deadline - time.monotonic()) > 0:
            try:
                message = await asyncio.wait_for(conn.read_message(), left)
            except TimeoutError:
                break
            if message is None:
                break
            kind, *data = json.loads(message)
            seen += data[0] if kind == "stdout" else ""
        conn.close()
        return seen

    try:
        return asyncio.run(talk())
    finally:
        hub.call(name, "DELETE", f"api/terminals/{terminal}")


def test_the_instructor_s_terminal_runs_the_course_commands(hub):
    """The README's `python -m hub ...`, typed in the instructor's Lab terminal, finds the
    course environment (a login shell's /etc/profile would reset PATH)."""
    said = _terminal(hub, INSTRUCTOR, "python -m hub --help > /dev/null && echo HUB-$((6 * 7))",
                     "HUB-42")  # fmt: skip
    assert "HUB-42" in said, f"the terminal printed:\n{said}"


def test_attendees_cannot_read_the_answers(hub):
    """`make hub` made the checkout's answers (solutions/, grader/hidden/, its git history)
    and what commands wrote there (an OUT, handouts/) unreadable to attendees, who can reach
    the checkout itself: neither their account nor their Lab's terminal reads them."""
    reach = subprocess.run(["runuser", "-u", RIGHT, "--", "ls", REPO_ROOT], capture_output=True)
    if reach.returncode:
        pytest.skip(f"{REPO_ROOT} is out of attendees' reach anyway")
    targets = [
        REPO_ROOT / "solutions" / NB / f"{NB}.ipynb",
        next((REPO_ROOT / "grader" / "hidden").glob("nb01_*.py")),
        REPO_ROOT / ".git" / "HEAD",
        *(path for path in PLANTED if path.is_file()),  # handouts/ only if planted
    ]
    for path in targets:
        assert path.is_file(), path
        peek = subprocess.run(["runuser", "-u", RIGHT, "--", "cat", path], capture_output=True)
        assert peek.returncode != 0 and b"Permission denied" in peek.stderr, path
    typed = f"cat {' '.join(map(str, targets))}; ls {REPO_ROOT / 'solutions'}; echo END-$((6 * 7))"
    said = _terminal(hub, RIGHT, typed, "END-42")
    assert "END-42" in said and said.count("Permission denied") == len(targets) + 1, said


def test_attendees_cannot_read_the_hubs_database(hub):
    """ROOT/hub (JupyterHub's database: every user with admin flags, every server's port;
    the codes; each account's password hash) is root's alone; the settings the instructors'
    commands read are not secret."""
    state = hub.settings.state
    assert os.stat(state).st_mode & 0o777 == 0o700
    assert os.stat(state / "jupyterhub.sqlite").st_mode & 0o777 == 0o600
    own = sorted(state.glob(f"{hub.settings.own_passwords.name}*"))  # dbm may add a suffix
    assert own and all(os.stat(p).st_mode & 0o777 == 0o600 for p in own), own
    for path in (state / "jupyterhub.sqlite", state / "passwords.json", *own):
        peek = subprocess.run(["runuser", "-u", RIGHT, "--", "cat", path], capture_output=True)
        assert peek.returncode != 0 and b"Permission denied" in peek.stderr, path
    shown = subprocess.run(["runuser", "-u", RIGHT, "--", "cat", hub.settings.settings_file],
                           capture_output=True, text=True)  # fmt: skip
    assert json.loads(shown.stdout)["port"] == hub.port


def test_attendees_see_only_their_own_processes(hub):
    """Each attendee's server has a PID namespace and a /proc of its own: `ps` in their
    terminal lists their own processes only, while the other attendee's and the instructor's
    servers, and the hub (root), run on the host."""
    uids = {name: pwd.getpwnam(name).pw_uid for name in (RIGHT, WRONG, INSTRUCTOR)}
    assert _servers(WRONG) and _servers(INSTRUCTOR), "the others' servers must be running"
    hub_pid = int((hub.settings.state / "jupyterhub.pid").read_text())
    typed = f"ps -ww -eo uid=,args=; ls -d /proc/{hub_pid}; echo PS-$((6 * 7))"
    said = _terminal(hub, RIGHT, typed, "PS-42")
    listed = re.findall(r"^\s*(\d+) +(\S.*?)\r?$", said, re.M)
    assert any("jupyterhub-singleuser" in args for _, args in listed), said
    assert {int(uid) for uid, _ in listed} == {uids[RIGHT]}, said
    assert f"cannot access '/proc/{hub_pid}'" in said, said


def test_validate_on_the_hub_shows_the_longest_message_whole(hub, longest, tmp_path):  # noqa: F811
    """An attendee's `nbgrader validate`, typed into their Lab terminal (their profile, as
    `python -m hub` starts it), and their Lab's Validate button (the REST call it makes, then
    the button itself in Chromium) show the longest message any visible check gives for the
    catalogue whole, in lines of at most 80 columns (the course's Validate settings)."""
    if RIGHT not in hub.sessions:  # this test alone
        hub.sign_in(RIGHT)
    nb, line = longest
    content = {"type": "notebook", "format": "json", "content": nb}
    hub.call(RIGHT, "PUT", "api/contents/longest.ipynb", json=content)
    said = _terminal(hub, RIGHT, "nbgrader validate longest.ipynb; echo VALIDATED-$((6 * 7))",
                     "VALIDATED-42", seconds=300)  # fmt: skip
    out = said.split("VALIDATION FAILED", 1)[-1].split("VALIDATED-42")[0].replace("\r", "")
    assert " ".join(line.split()) in " ".join(out.split()), f"cut or missing:\n{said[-3000:]}"
    assert max(map(len, out.split("\n"))) <= 80, f"wider than 80 columns:\n{out}"
    answer = hub.call(RIGHT, "POST", "assignments/validate", params={"path": "longest.ipynb"})
    failed = answer.json()["value"].get("failed", [])
    errors = [" ".join(ANSI.sub("", f["raw_error"]).split()) for f in failed]
    assert any(" ".join(line.split()) in e for e in errors), errors
    if not CHROMIUM.exists():
        pytest.fail("Debian's chromium is missing: run `make browser` (make test does).")
    with browser(f"{hub.url}/hub/login", tmp_path / "chromium") as page:
        _sign_in(page)
        page.locator("#jp-MainMenu").wait_for()
        panel = _open_notebook(page, "longest.ipynb")
        panel.locator(".validate-button").click()
        verdict = page.locator(".jp-Dialog #validation-message")
        verdict.wait_for(timeout=300_000)
        page.screenshot(path=SHOTS / "hub-3-validate-longest.png")
        shown = " ".join(verdict.inner_text().split())
    assert " ".join(line.split()) in shown, shown[-3000:]


def _sign_in(page):
    """Sign in as RIGHT through the hub's login page (the code makes the account if new)."""
    page.fill("#username_input", RIGHT)
    page.fill("#password_input", OWN[RIGHT])
    page.fill("#otp_input", ROOM_PASSWORD)
    page.click("#login_submit")


def test_instructor_releases_to_the_exchange(hub):
    hub.as_instructor("release", NB)
    exchange = hub.settings.exchange
    assert os.stat(exchange).st_mode & 0o7777 == 0o755, "attendees add nothing to the exchange"
    released = exchange / hub.settings.course_id / "outbound" / NB / f"{NB}.ipynb"
    assert released.is_file(), "nothing released"
    assert "### BEGIN SOLUTION" not in released.read_text(), "a solution was released"


def test_assignments_tab_lists_the_release_and_fetches_it(hub, tmp_path):
    """In Chromium: sign in through the login page, open the Assignments list, press Fetch."""
    if not CHROMIUM.exists():
        pytest.fail("Debian's chromium is missing: run `make browser` (make test does).")
    with browser(f"{hub.url}/hub/login", tmp_path / "chromium") as page:
        _sign_in(page)
        page.locator("#jp-MainMenu").get_by_text("Nbgrader", exact=True).click()
        page.locator(".lm-Menu:visible").get_by_text("Assignment List").click()
        row = page.locator("#released_assignments_list .list_item", has_text=NB)
        row.wait_for()
        page.screenshot(path=SHOTS / "hub-1-released.png")
        row.get_by_role("button", name="Fetch").click()
        page.locator("#fetched_assignments_list .list_item", has_text=NB).first.wait_for()
        page.screenshot(path=SHOTS / "hub-2-fetched.png")
    fetched = hub.settings.homes / RIGHT / NB / f"{NB}.ipynb"
    assert fetched.is_file() and fetched.stat().st_uid == pwd.getpwnam(RIGHT).pw_uid


def test_attendees_answer_and_submit(hub):
    fetched = hub.assignments(WRONG, "fetch")
    assert any(a["status"] == "fetched" and a["assignment_id"] == NB for a in fetched), fetched
    typed = {
        RIGHT: _answers(honest(NB)),
        WRONG: _answers(_wrong_submission()),
    }
    path = f"api/contents/{NB}/{NB}.ipynb"
    for name, answers in typed.items():
        nb = nbformat.from_dict(hub.call(name, "GET", path).json()["content"])
        for cell in nb.cells:
            grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
            if grade_id in answers:
                cell.source = answers[grade_id]
        hub.call(name, "PUT", path, json={"type": "notebook", "format": "json", "content": nb})
        listed = hub.assignments(name, "submit")
        assert any(a["status"] == "submitted" for a in listed), listed


def _points(hub) -> dict[str, float]:
    with open(hub.settings.grading / "totals.csv", newline="") as fh:
        return {row["student"]: float(row[NB]) for row in csv.DictReader(fh)}


def test_instructor_grades_with_the_course_grader(hub):
    proc = hub.as_instructor("grade", NB)
    assert "collected 01_soft_lookup: 2 submissions" in proc.stdout, proc.stdout
    autograded = sum(e.max_points for e in exercises(NB) if e.autograded)
    lost = next(e.max_points for e in exercises(NB) if e.grade_id == _wrong_answer()[0])
    assert _points(hub) == {RIGHT: autograded, WRONG: autograded - lost}
    gradebook = hub.settings.grading / "gradebook.db"
    peek = subprocess.run(["runuser", "-u", RIGHT, "--", "cat", gradebook], capture_output=True)
    assert peek.returncode != 0 and b"Permission denied" in peek.stderr, "attendees read grades"


def _gradebook_scores(s) -> dict[str, float]:
    with Gradebook(gradebook.db_url(s.grading), gradebook.COURSE_ID) as gb:
        return {sub.student.id: sub.score for sub in gb.assignment_submissions(NB)}


def test_an_interrupted_grade_reruns_to_the_same_grades(hub, tmp_path):
    """`hub grade` killed in a write to the gradebook (a closed terminal's SIGHUP, then
    SIGKILL), then run again: the rerun undoes the half-written gradebook, succeeds, and gives
    the grades of the uninterrupted run before it, in totals.csv and in the gradebook."""
    s = hub.settings
    points, scores = _points(hub), _gradebook_scores(s)
    database = s.grading / "gradebook.db"
    journal = database.with_name("gradebook.db-journal")  # there while a write is under way
    for signum in (signal.SIGHUP, signal.SIGKILL):
        with closing(sqlite3.connect(database)) as db, db:  # so the run has grades to write
            db.execute("UPDATE grade SET auto_score = 0")
        # A reader (as formgrader) holds the gradebook: the run's first write waits at its
        # commit, its journal written, and is killed there.
        with closing(sqlite3.connect(database, isolation_level=None)) as reader:
            reader.execute("BEGIN")
            reader.execute("SELECT count(*) FROM grade").fetchone()
            with (tmp_path / f"grade-{signum}.log").open("w+") as log:
                run = hub.instructor_starts(["python", "-m", "hub", "grade", NB], log)
                while not journal.exists() and run.poll() is None:
                    time.sleep(0.005)
                assert run.poll() is None, f"it finished before a write was seen:\n{log.read()}"
                os.killpg(run.pid, signum)
                run.wait(timeout=60)
            reader.execute("ROLLBACK")
        assert journal.exists() and (s.grading / graderun.BEFORE).is_file()
        rerun = hub.as_instructor("grade", NB)
        said = rerun.stdout + rerun.stderr  # a warning: the log goes to stderr
        assert "its gradebook changes are undone" in said, said
        assert _points(hub) == points and _gradebook_scores(s) == scores, signum
    assert not (s.grading / graderun.BEFORE).exists() and not journal.exists()


SANDBOX_PROBES = ("probe", "native_reads", "native_writes", "sockets")


def test_the_instructors_sandbox_walls_in_student_code(hub):
    """The hub's instructor is not root, so their grading runs the unprivileged sandbox:
    the attack class's probes get their own user namespace, no capabilities, no network,
    and none of the instructor's files (solutions, hidden checks, the gradebook)."""
    s = hub.settings
    top = s.instructor / f"probes-{TAG}"
    subs, out = top / "submissions", top / "out"
    with socket.create_server(("127.0.0.1", 0)) as listener:
        attacks.build(subs, s.private_course, out, listener.getsockname()[1])
        shutil.chown(top, INSTRUCTOR)
        for path in top.rglob("*"):
            shutil.chown(path, INSTRUCTOR)
        argv = ["python", "-m", "grader", "autograde", str(subs), "--out", str(out),
                "--notebooks", NB, "--students", *SANDBOX_PROBES]  # fmt: skip
        hub.instructor_runs(argv, s.private_course)
        argv[argv.index("--out") + 1] = str(s.private_course / "out")  # read-only for them
        refused = hub.instructor_runs(argv, s.private_course, check=False)
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1, refused.stderr
    assert "is not writable by you" in refused.stderr, refused.stderr
    seen = {name: attacks.seen(out, name) for name in SANDBOX_PROBES}
    probe = seen["probe"]
    assert probe["uid"] == pwd.getpwnam(INSTRUCTOR).pw_uid, probe
    assert probe["CapEff"] == "0000000000000000" and probe["NoNewPrivs"] == "1", probe
    assert probe["interfaces"] == ["lo"] and probe["hostname"] == "sandbox", probe
    assert sorted(probe["repo"]) == [".", "..", "attnlib", "data", "grader"], probe["repo"]
    for path, (status, text) in seen["native_reads"].items():
        if path.startswith("/"):
            assert status != 0 and "No such file or directory" in text, (path, text)
    for path in seen["native_writes"]:  # a folder under /tmp is the sandbox's private /tmp
        target = Path(path)
        assert not target.exists() or "hacked" not in target.read_text(), path
    sockets = seen["sockets"]
    assert "refused" in sockets["native localhost"][1], sockets
    assert "unreachable" in sockets["native network"][1], sockets


def _first_test(exercise: str) -> str:
    return next(e.test_ids[0] for e in exercises(NB) if e.grade_id == exercise)


def _hand_grades() -> dict[tuple[str, str], dict]:
    """What the instructor saves in formgrader, {(attendee, exercise): the fields of its
    first test cell's grade}: WRONG's failed check overridden, extra credit for RIGHT."""
    wrong = _wrong_answer()[0]
    other = next(e.grade_id for e in exercises(NB) if e.autograded and e.grade_id != wrong)
    return {
        (WRONG, wrong): {"manual_score": 1.0, "extra_credit": None},
        (RIGHT, other): {"manual_score": None, "extra_credit": 0.5},
    }


def test_points_set_in_formgrader_reach_the_hub_s_totals(hub):
    """An override of a failed check's points and extra credit, saved in the instructor's
    formgrader (its Save button's call to nbgrader's API) after `hub grade`: `python -m hub
    totals` carries both into grades.csv (its by_hand column saying what was set) and
    totals.csv."""
    if INSTRUCTOR not in hub.sessions:  # this test alone
        hub.sign_in(INSTRUCTOR)
    s, before = hub.settings, _points(hub)
    with Gradebook(gradebook.db_url(s.grading), gradebook.COURSE_ID) as gb:
        ids = {(n, e): gb.find_grade(_first_test(e), NB, NB, n).id for n, e in _hand_grades()}
    for key, fields in _hand_grades().items():
        hub.call(INSTRUCTOR, "PUT", f"formgrader/api/grade/{ids[key]}", json=fields)
    hub.as_instructor("totals")
    with open(s.grading / "grades.csv", newline="") as fh:
        rows = {(r["student"], r["exercise"]): r for r in csv.DictReader(fh)}
    max_points = {e.grade_id: e.max_points for e in exercises(NB)}
    (wrong, overridden), (right, credited) = _hand_grades()
    shown = {key: (float(rows[key]["points"]), rows[key]["by_hand"]) for key in _hand_grades()}
    assert shown == {
        (wrong, overridden): (1.0, "set in formgrader (the checks gave 0)"),
        (right, credited): (max_points[credited] + 0.5, "extra credit +0.5"),
    }
    assert {r["by_hand"] for k, r in rows.items() if k not in shown} == {""}
    assert _points(hub) == {RIGHT: before[RIGHT] + 0.5, WRONG: before[WRONG] + 1.0}


def test_the_instructor_s_formgrader_page_runs_only_its_own_scripts(hub):
    """On the hub too, an attendee's submission page comes with the course's policy
    (grader/results/formgrade_csp.py; tests/test_formgrader.py tries it in Chromium)."""
    if INSTRUCTOR not in hub.sessions:  # this test alone
        hub.sign_in(INSTRUCTOR)
    listed = hub.call(INSTRUCTOR, "GET", f"formgrader/api/submitted_notebooks/{NB}/{NB}").json()
    sid = next(s["id"] for s in listed if s["student"] == WRONG)
    page = hub.call(INSTRUCTOR, "GET", f"formgrader/submissions/{sid}/")
    policy = page.headers.get("Content-Security-Policy", "")
    assert "script-src 'self' 'unsafe-hashes' 'sha256-" in policy, policy
    assert "'unsafe-inline'" not in policy.split("; style-src")[0], policy
    listing = hub.call(INSTRUCTOR, "GET", "formgrader/api/assignments")
    assert "script-src" not in listing.headers.get("Content-Security-Policy", "")


def test_feedback_reaches_the_attendees(hub):
    hub.as_instructor("feedback", NB)
    points = _points(hub)
    for name in (RIGHT, WRONG):
        hub.assignments(name, "fetch_feedback")
        found = sorted((hub.settings.homes / name / NB / "feedback").glob(f"*/{NB}.html"))
        assert found, f"no feedback fetched for {name}"
        score = re.search(
            r"\(Score: ([\d.]+)(?: \+ [\d.]+ pending)? / ([\d.]+)\)", found[-1].read_text()
        )
        assert score and float(score.group(1)) == points[name], (name, score)


def test_the_fetched_feedback_is_the_attendee_s_notebook_with_each_check_s_message(hub):
    """What `python -m hub feedback` sends WRONG is their own notebook, the failed check's
    message under its test cell (the course grader's wording, as in grades.csv), and
    nothing of the hidden checks."""
    exercise = _wrong_answer()[0]
    with open(hub.settings.grading / "grades.csv", newline="") as fh:
        row = next(
            r for r in csv.DictReader(fh) if (r["student"], r["exercise"]) == (WRONG, exercise)
        )
    page = sorted((hub.settings.homes / WRONG / NB / "feedback").glob(f"*/{NB}.html"))[-1]
    raw = page.read_text()
    text = html.unescape(re.sub(r"<[^>]+>", "", raw))
    cell = raw.split(f'<a name="{_first_test(exercise)}"></a>', 1)[1]  # the test cell on
    under = html.unescape(re.sub(r"<[^>]+>", "", cell))[:3000]
    assert row["message"] and row["message"] in under, (row["message"], under[:800])
    hidden = (REPO_ROOT / "grader" / "hidden" / f"nb{NB}.py").read_text()
    for secret in ("_softmax_cases", "rng.normal"):
        assert secret in hidden and secret not in text


def test_the_fetched_feedback_shows_the_points_set_in_formgrader(hub):
    """The feedback each attendee fetched shows, at the hand-graded test cell, the points
    the instructor set: the override, or the checks' points plus the extra credit."""
    for (name, exercise), fields in _hand_grades().items():
        page = sorted((hub.settings.homes / name / NB / "feedback").glob(f"*/{NB}.html"))[-1]
        cell = re.escape(_first_test(exercise))
        score = re.search(rf'href="#{cell}">Test cell</a> \(Score: ([\d.]+) / ([\d.]+)\)',
                          page.read_text())  # fmt: skip
        assert score, f"no score for {cell} in {name}'s feedback"
        given, most = float(score.group(1)), float(score.group(2))
        manual = fields["manual_score"]  # else RIGHT's check, passed: all its points
        expected = manual if manual is not None else most + fields["extra_credit"]
        assert given == expected, (name, exercise, given)


def test_hub_feedback_shows_a_written_answer_to_grade_as_pending(small_class, tmp_path):
    """`python -m hub feedback` runs nbgrader's generate_feedback with the instructors'
    config (``instructor._nbgrader_config``): alice's written answer, not graded yet, shows
    "pending", not nbgrader's "Score: 0.0 / 2.0"; bob's unanswered one is a real 0. No hub
    runs: the same command on a copy of the small graded class."""
    from fixtures.small_class import BEFORE, WRITTEN, copy_out
    from fixtures.small_class import NB as CLASS_NB

    from hub import instructor

    s = hub_settings.Settings(root=tmp_path / "root")
    copy_out(small_class, s.grading)
    (s.course_root / "nbgrader_config.py").unlink()  # it names the original's folders
    s.private_course.mkdir(parents=True)  # the course's settings (no due dates), as the hub's
    shutil.copyfile(REPO_ROOT / "nbgrader_config.py", s.private_course / "nbgrader_config.py")
    (s.profiles / "instructor").mkdir(parents=True)
    (s.profiles / "instructor" / "nbgrader_config.py").write_text(instructor._nbgrader_config(s))
    assert instructor._nbgrader(s, "generate_feedback", CLASS_NB, "--force") == 0

    def scores(student):
        page = (s.course_root / "feedback" / student / CLASS_NB / f"{CLASS_NB}.html").read_text()
        return re.findall(r"Score: ([^<)]*?) / ([\d.]+)", page)

    written = f"{WRITTEN.max_points:.1f}"
    assert ("pending", written) in scores("alice")
    assert ("0.0", written) not in scores("alice")
    most = BEFORE + WRITTEN.max_points
    whole = (f"{BEFORE:.1f} + {WRITTEN.max_points:g} pending", f"{most:.1f}")
    assert scores("alice")[0] == whole  # the notebook's score, heading the page
    assert ("0.0", written) in scores("bob") and "pending" not in str(scores("bob"))


def test_attendees_download_their_work_as_a_zip(hub):
    """What the Lab's "Download as an Archive" asks (jupyter-archive): a zip of a folder."""
    params = {"archiveToken": secrets.token_hex(8), "archiveFormat": "zip"}
    r = hub.call(WRONG, "GET", f"directories/{NB}", params=params)
    with zipfile.ZipFile(io.BytesIO(r.content)) as archive:
        name = next(n for n in archive.namelist() if n.endswith(f"{NB}.ipynb"))
        notebook = nbformat.reads(archive.read(name), as_version=4)
    exercise = _wrong_answer()[0]
    assert _answers(notebook)[exercise] == _answers(_wrong_submission())[exercise]


def test_end_of_day_backs_up_and_wipes(hub):
    s = hub.settings
    proc = subprocess.run(hub.end_cmd, cwd=REPO_ROOT, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    hub.proc.wait(timeout=30)
    backups = sorted(s.backups.glob("*.tar.gz"))
    assert len(backups) == 1 and backups[0].stat().st_mode & 0o077 == 0
    with tarfile.open(backups[0]) as tar:
        names = tar.getnames()
    assert "instructor/grading/gradebook.db" in names, names[:20]
    assert any(n.startswith(f"exchange/{s.course_id}/inbound/{WRONG}+{NB}") for n in names)
    for name in (RIGHT, WRONG, INSTRUCTOR):
        assert _no_account(name), f"{name} is still an account"
        assert not (s.homes / name).exists()
    for group in (GROUP, INSTRUCTORS):
        with pytest.raises(KeyError):
            grp.getgrnam(group)
    assert not s.exchange.exists() and not s.instructor.exists()
    assert not s.state.exists(), "the codes, everyone's password hash and the key go with the day"
    assert not [n for n in names if "password" in n or n.endswith(".pem")], names
    assert s.env.is_dir(), "the course environment stays for the next day"
