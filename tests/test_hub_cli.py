"""The workshop server's commands without a server (no root, no users): settings come from
the course, and bad input gets one clear line, never a traceback."""

import os
import signal
import sqlite3
import subprocess
import sys
from contextlib import closing

import pytest
from traitlets.config.loader import PyFileConfigLoader

from grader.course import REPO_ROOT, assignments
from hub import instructor, limits, settings


def _hub(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hub", *args], cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=120)  # fmt: skip


def test_the_course_id_is_the_courses_own():
    config = PyFileConfigLoader("nbgrader_config.py", path=str(REPO_ROOT)).load_config()
    assert settings.Settings().course_id == config.CourseDirectory.course_id


def test_a_command_without_a_server_says_how_to_start_one(tmp_path):
    proc = _hub("--root", str(tmp_path), "release", "01_soft_lookup")
    assert proc.returncode != 0
    assert proc.stderr.strip().splitlines() == [
        f"error: no workshop server at {tmp_path} (no readable {tmp_path}/settings.json): "
        "start one with `make hub` (or pass --root)"
    ], proc.stderr


def test_grading_an_unknown_notebook_lists_the_known_ones(tmp_path, capsys):
    s = settings.Settings(root=tmp_path)
    assert instructor.grade(s, ["01_soft_lookups"]) == 2
    said = capsys.readouterr().err.strip()
    assert said == "error: unknown notebook '01_soft_lookups'; the course has: " + ", ".join(
        assignments()
    )
    assert not any(tmp_path.iterdir()), "nothing may be made for a refused command"


def test_grade_with_a_scheduler_grades_on_that_cluster(tmp_path, monkeypatch):
    """`python -m hub grade --scheduler ADDRESS` hands the address to the course grader, so
    the notebooks run on the cluster's workers, not inside the instructor's server."""
    from hub import cli

    seen = {}
    monkeypatch.setattr(instructor, "grade", lambda s, notebooks, scheduler=None: seen.update(
        notebooks=notebooks, scheduler=scheduler) or 0)  # fmt: skip
    monkeypatch.setattr(settings, "load", lambda root: settings.Settings(root=tmp_path))
    assert cli.main(["grade", "01_soft_lookup", "--scheduler", "tcp://head:8786"]) == 0
    assert seen == {"notebooks": ["01_soft_lookup"], "scheduler": "tcp://head:8786"}
    assert cli.main(["grade", "01_soft_lookup"]) == 0 and seen["scheduler"] is None
    s = settings.Settings(root=tmp_path)
    local = instructor.grader_command(s, ["01_soft_lookup"], None)
    assert "--scheduler" not in local
    on_cluster = instructor.grader_command(s, ["01_soft_lookup"], "tcp://head:8786")
    assert on_cluster == [*local, "--scheduler", "tcp://head:8786"]


def test_grade_with_a_scheduler_it_cannot_use_says_why_in_one_line(tmp_path, capsys, monkeypatch):
    s = settings.Settings(root=tmp_path)
    assert instructor.grade(s, ["01_soft_lookup"], " ") == 2
    said = capsys.readouterr().err.strip().splitlines()
    assert said == ["error: --scheduler needs a Dask scheduler's address, e.g. tcp://head:8786"]
    import importlib.util

    real = importlib.util.find_spec
    no_dask = lambda name, *a: None if name == "distributed" else real(name, *a)  # noqa: E731
    monkeypatch.setattr(importlib.util, "find_spec", no_dask)
    assert instructor.grade(s, ["01_soft_lookup"], "tcp://head:8786") == 2
    said = capsys.readouterr().err.strip().splitlines()
    assert len(said) == 1 and "the hub's environment lacks" in said[0], said
    assert not any(tmp_path.iterdir()), "nothing may be made for a refused command"


def test_cgroup_limits_are_the_settings():
    s = settings.Settings()
    bounds = limits.Limits(s.memory_mb, s.cpus, s.processes)
    v2 = bounds.cgroup_files(2)[""]
    assert int(v2["memory.max"]) == s.memory_mb * 2**20
    assert v2["cpu.max"] == f"{int(s.cpus * 100_000)} 100000"
    assert v2["pids.max"] == str(s.processes)
    v1 = bounds.cgroup_files(1)
    assert int(v1["memory"]["memory.limit_in_bytes"]) == s.memory_mb * 2**20
    assert v1["cpu"]["cpu.cfs_quota_us"] == str(int(s.cpus * 100_000))


def test_start_takes_its_root_from_the_environment_as_the_help_says(tmp_path, monkeypatch):
    from hub import cli

    monkeypatch.setenv(settings.ROOT_VARIABLE, str(tmp_path))
    assert cli._settings_for_start(cli._parser().parse_args(["start"])).root == tmp_path.resolve()
    given = cli._parser().parse_args(["--root", str(tmp_path / "other"), "start"])
    assert cli._settings_for_start(given).root == (tmp_path / "other").resolve()


def test_a_group_the_host_already_had_is_refused(tmp_path):
    """The end of the day removes the hub's groups and their members: never the host's."""
    from hub import server
    from hub.environment import SetupError

    with pytest.raises(SetupError, match="already exists and this hub did not make it"):
        server.ensure_group("root", tmp_path / "groups.json")
    assert not (tmp_path / "groups.json").exists()


def test_start_makes_the_checkouts_answers_and_outputs_unreadable_to_others(tmp_path):
    """An attendee is "other" to the checkout: solutions/, grader/hidden/, the git history
    and what commands wrote there (the default OUT, handouts/ with the executed solutions,
    the host's work/ and its backups, an OUT under another name, a stray gradebook) lose
    every access of others (owner and group keep theirs); a rerun changes nothing."""
    from hub import answers

    private = [*answers.ANSWERS, *answers.OUTPUTS, "grades-2026"]
    for name in private:
        (tmp_path / name).mkdir(parents=True)
        os.chmod(tmp_path / name, 0o755)
    (tmp_path / "grades-2026" / "gradebook.db").write_bytes(b"")
    (tmp_path / "gradebook.db").write_bytes(b"")
    os.chmod(tmp_path / "gradebook.db", 0o644)
    (tmp_path / "attnlib").mkdir(mode=0o755)
    closed = sorted(answers.close_to_others(tmp_path))
    assert closed == sorted(tmp_path / n for n in [*private, "gradebook.db"])
    for name in private:
        assert os.stat(tmp_path / name).st_mode & 0o777 == 0o750, name
    assert os.stat(tmp_path / "gradebook.db").st_mode & 0o777 == 0o640
    assert os.stat(tmp_path / "attnlib").st_mode & 0o777 == 0o755, "only those change"
    assert answers.close_to_others(tmp_path) == []


def test_start_refuses_while_an_output_stays_readable(tmp_path, monkeypatch):
    """A file system that ignores chmod (or refuses it) leaves OUT readable: no start."""
    from hub import answers
    from hub.environment import SetupError

    (tmp_path / "out").mkdir(mode=0o755)
    os.chmod(tmp_path / "out", 0o755)
    monkeypatch.setattr(answers.os, "chmod", lambda path, mode: None)
    with pytest.raises(SetupError, match=r"attendees could read .*/out and it cannot be made"):
        answers.close_to_others(tmp_path)


def test_the_hubs_state_is_roots_alone_and_its_settings_readable(tmp_path):
    """ROOT/hub (JupyterHub's database: users, admin flags, ports) 0700 and the database
    0600 even where an earlier start left it 0644; the settings (no secret) stay readable
    by the instructors' commands."""
    from hub import server

    s = settings.Settings(root=tmp_path)
    s.state.mkdir(mode=0o755)
    database = s.state / "jupyterhub.sqlite"
    database.write_bytes(b"")
    os.chmod(database, 0o644)
    s.save()
    server.private_database(database)
    assert os.stat(s.state).st_mode & 0o777 == 0o700
    assert os.stat(database).st_mode & 0o777 == 0o600
    assert os.stat(s.settings_file).st_mode & 0o777 == 0o644
    assert settings.load(tmp_path).port == s.port


def _gradebook_rows(path) -> list:
    with closing(sqlite3.connect(path)) as db:
        return db.execute("SELECT * FROM grade ORDER BY id").fetchall()


def _half_write(path, signum: int) -> None:
    """A writer killed by ``signum`` in the middle of a transaction (a hot journal left)."""
    code = (
        "import os, signal, sqlite3, sys\n"
        "signal.signal(signal.SIGHUP, signal.SIG_DFL)  # not as handed down (nohup)\n"
        "db = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
        "db.execute('BEGIN')\n"
        "db.execute('UPDATE grade SET score = -1 WHERE id = 1')\n"
        "db.execute('PRAGMA cache_spill = 1')\n"
        "db.execute('INSERT INTO grade (score) SELECT score FROM grade')\n"
        "os.kill(os.getpid(), int(sys.argv[2]))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code, str(path), str(signum)], timeout=60)
    assert proc.returncode == -signum
    assert path.with_name(path.name + "-journal").exists(), "no transaction was cut"


@pytest.mark.parametrize("signum", [signal.SIGHUP, signal.SIGKILL])
def test_a_grade_run_s_gradebook_changes_are_undone_when_it_was_interrupted(tmp_path, signum):
    """hub.graderun: a run keeps the gradebook aside; the next run finds the copy, so the
    interrupted run's writes (committed ones, and a transaction cut by a kill) are undone as
    one; a finished run keeps its changes."""
    from hub import graderun

    database = tmp_path / "gradebook.db"
    with closing(sqlite3.connect(database)) as db, db:
        db.execute("CREATE TABLE grade (id INTEGER PRIMARY KEY, score REAL)")
        db.executemany("INSERT INTO grade (score) VALUES (?)", [(float(i),) for i in range(500)])
    before = _gradebook_rows(database)
    assert graderun.begin(tmp_path) is False
    with closing(sqlite3.connect(database)) as db, db:  # a committed half of the run
        db.execute("UPDATE grade SET score = 99 WHERE id > 250")
    _half_write(database, signum)
    assert graderun.begin(tmp_path) is True, "the unfinished run was not noticed"
    assert _gradebook_rows(database) == before
    with closing(sqlite3.connect(database)) as db, db:
        db.execute("UPDATE grade SET score = 7 WHERE id = 3")
    graderun.finish(tmp_path)
    assert graderun.begin(tmp_path) is False, "a finished run was undone"
    assert _gradebook_rows(database)[2] == (3, 7.0)


def test_grade_says_in_one_line_that_another_run_holds_the_gradebook(tmp_path):
    from hub import graderun

    s = settings.Settings(root=tmp_path)
    s.save()
    proc = _hub("--root", str(tmp_path), "grade", "01_soft_lookup")
    assert proc.returncode == 2 and proc.stderr == (
        f"error: no grading folder {s.grading}: start the hub (`make hub`) to make it\n"
    ), proc.stderr
    s.grading.mkdir(parents=True)
    with graderun.one_at_a_time(s.grading):
        proc = _hub("--root", str(tmp_path), "grade", "01_soft_lookup")
    assert proc.returncode == 2 and proc.stderr == (
        "error: another `python -m hub grade` is running on this hub: let it finish, or stop "
        "it, then run this again\n"
    ), proc.stderr


def test_the_hub_settings_are_traits_saved_and_read_back_whole(tmp_path):
    """hub.settings is the grader's machinery (traitlets): every setting a typed trait,
    ``hub start`` has an option for each, and settings.json gives back what was saved."""
    from hub import cli

    s = settings.Settings(root=tmp_path, port=9000, instructors=["ada", "grace"], cpus=0.5)
    s.save()
    assert settings.load(tmp_path).values() == s.values()
    assert isinstance(settings.load(tmp_path).root, type(tmp_path))
    start = cli._parser().parse_args(["start"])
    names = settings.Settings.class_trait_names(config=True)
    assert {n for n in names if n not in ("root", "course_id")} <= set(vars(start))


@pytest.mark.parametrize(
    ("option", "says"),
    [
        (["--port", "70000"], "'port' trait"),
        (["--cpus", "0"], "cpus: 0.0 is not a number of cores above 0"),
        (["--instructors", "Ada Lovelace"], "instructors: 'Ada Lovelace' is no unix user"),
        (["--ip", "room-12"], "ip: 'room-12' is no IP address"),
    ],
)
def test_a_bad_hub_setting_is_one_line_naming_it(tmp_path, option, says):
    proc = _hub("--root", str(tmp_path), "start", *option)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert proc.stderr.startswith("error: workshop server settings: ") and says in proc.stderr


def test_collect_writes_submissions_for_their_owner_alone(tmp_path):
    """`make collect`'s SUBMISSIONS holds every student's work: 0700 however the umask would
    make it; with private_outputs off (a folder shared on purpose) it is left as made."""
    from test_collect import NB, _collect

    from grader import cli

    old = os.umask(0o022)
    try:
        for private, mode in ((True, 0o700), (False, 0o755)):
            (tmp_path / str(private)).mkdir()
            subs, argv = _collect(tmp_path / str(private), {
                f"lovelaceada_101_5001_{NB}.ipynb": ("ada's", (2026, 12, 1, 10, 0, 0)),
            }, private_outputs=private)  # fmt: skip
            assert cli.main(argv) == 0
            assert (subs / "ada" / f"{NB}.ipynb").read_text() == "ada's"
            assert os.stat(subs).st_mode & 0o777 == mode, private
    finally:
        os.umask(old)


@pytest.mark.parametrize("name", ["submitted", "roster.csv", "download.zip"])
def test_start_closes_the_class_s_files_and_refuses_while_one_stays_readable(
    tmp_path, monkeypatch, name
):
    """submitted/ (every student's work), the LMS's roster and its download, left readable
    by others in the checkout: the start closes them (the honest control: nothing else
    changes), and where chmod does nothing it stops in one line naming the path."""
    from hub import answers
    from hub.environment import SetupError

    path = tmp_path / name
    path.mkdir(mode=0o755) if name == "submitted" else path.write_text("ada,101\n")
    os.chmod(path, 0o755 if name == "submitted" else 0o644)
    (tmp_path / "attnlib").mkdir(mode=0o755)
    assert answers.close_to_others(tmp_path) == [path]
    assert not os.stat(path).st_mode & 0o007 and os.stat(tmp_path / "attnlib").st_mode & 0o005
    os.chmod(path, 0o755)
    monkeypatch.setattr(answers.os, "chmod", lambda path, mode: None)
    with pytest.raises(SetupError) as refused:
        answers.close_to_others(tmp_path)
    assert str(refused.value).count("\n") == 0 and f"attendees could read {path} " in str(
        refused.value
    )


def test_the_class_s_files_are_git_ignored():
    ignored = subprocess.run(["git", "check-ignore", "submitted/ada/x.ipynb", "roster.csv",
                              "download.zip", "out/grades.csv"], cwd=REPO_ROOT,
                             capture_output=True, text=True)  # fmt: skip
    assert ignored.stdout.split() == ["submitted/ada/x.ipynb", "roster.csv", "download.zip",
                                      "out/grades.csv"]  # fmt: skip


def test_a_self_signed_certificate_is_made_once_root_s_alone_with_its_fingerprint(tmp_path):
    """`--self-signed`: key 0600 in ROOT/hub, kept across restarts (the fingerprint attendees
    checked stays), the same SHA-256 fingerprint as openssl's, and the banner's; without a
    certificate the banner warns loudly that everything crosses the network in clear."""
    from hub import server, tls

    s = settings.Settings(root=tmp_path, self_signed=True)
    s.save()
    cert, key = tls.prepare(s)
    assert cert.parent == key.parent == s.state and os.stat(key).st_mode & 0o777 == 0o600
    made = cert.read_bytes()
    assert tls.prepare(s) == (cert, key) and cert.read_bytes() == made, "made again"
    said = subprocess.run(["openssl", "x509", "-in", cert, "-noout", "-fingerprint", "-sha256"],
                          capture_output=True, text=True, check=True).stdout  # fmt: skip
    assert said.strip().endswith("=" + tls.fingerprint(cert))
    codes = {"students": "room-code", "instructors": "i" * 32}
    shown = server.banner(s, codes, (cert, key))
    assert tls.fingerprint(cert) in shown and "https://" in shown and "PLAIN HTTP" not in shown
    plain = server.banner(settings.Settings(root=tmp_path), codes, None)
    assert "PLAIN HTTP, NO TLS" in plain and "http://" in plain


@pytest.mark.parametrize(
    ("option", "says"),
    [
        (["--ssl-cert", "/nonexistent/cert.pem"], "TLS needs both --ssl-cert and --ssl-key"),
        (["--ssl-cert", "c.pem", "--ssl-key", "k.pem", "--self-signed"], "give either"),
        (["--ssl-cert", "README.md", "--ssl-key", "README.md"], "do not load as a pair"),
        (["--student-password", "short"], "--student-password: at least 8 characters"),
    ],
)
def test_bad_tls_options_or_a_short_code_are_one_line(tmp_path, option, says):
    """What `python -m hub start` checks before it lays anything out."""
    from grader.errors import UserError
    from hub import cli, tls

    given = cli._parser().parse_args(["--root", str(tmp_path), "start", *option])
    s = cli._settings_for_start(given)
    with pytest.raises(UserError, match=says) as refused:
        settings.passwords(s, given.student_password, given.instructor_password)
        tls.prepare(s)
    assert "\n" not in str(refused.value)


def test_own_passwords_are_checked_and_a_reset_account_needs_the_instructors_code(
    tmp_path, monkeypatch
):
    """hub.spawner's login without a hub (the real one: tests/test_hub.py): a new account
    needs its code (an instructor's: the instructors'), and its own password may not be a
    shared one; once set, only it opens the account. An account reset on the Admin page
    (its unix account left, its password deleted) is taken back with the instructors' code
    only, never the room's."""
    import asyncio

    from hub import spawner

    room, instructors = "room-code-1", "i" * 32
    login = spawner.WorkshopAuthenticator(
        room_password=room, instructor_password=instructors, admin_users={"ada"},
        dbm_path=str(tmp_path / "own"), check_passwords_on_startup=False,
        min_password_length=8, allow_all=True,
    )  # fmt: skip
    accounts: set[str] = set()  # the unix accounts the hub made, faked
    monkeypatch.setattr(spawner.pwd, "getpwnam", lambda n: n if n in accounts else {}[n])
    monkeypatch.setattr(spawner, "in_group", lambda name, group: True)
    monkeypatch.setattr(spawner.settings, "load", lambda: settings.Settings(root=tmp_path))
    hashing = sys.modules[spawner.FirstUseAuthenticator.__module__].bcrypt
    cheap = hashing.gensalt  # the fewest rounds: the same checks, a second instead of seven
    monkeypatch.setattr(hashing, "gensalt", lambda: cheap(rounds=4))

    def signs_in(name: str, password: str, code: str = "") -> bool:
        data = {"username": name, "password": password, "otp": code}
        return asyncio.run(login.authenticate(type("Form", (), {})(), data)) == name

    assert not signs_in("bob", "bob-own-pw", "wrong-code")
    assert not signs_in("bob", room, room), "the room's password as one's own"
    assert not signs_in("ada", "ada-own-pw", room), "an instructor's account with the room's"
    assert signs_in("bob", "bob-own-pw", room) and signs_in("ada", "ada-own-pw", instructors)
    accounts |= {"bob", "ada"}
    for shared in (room, instructors):
        assert not signs_in("bob", shared, shared) and not signs_in("ada", shared, shared)
    assert signs_in("bob", "bob-own-pw") and signs_in("ada", "ada-own-pw")
    assert not signs_in("bob", "x" * 80), "over bcrypt's 72 bytes: refused, not an error"
    assert "own" in login.reset_password("bob", room), "the change-password page's rules"
    assert not signs_in("bob", room) and signs_in("bob", "bob-own-pw")
    login.delete_user(type("User", (), {"name": "bob"})())  # the Admin page's delete
    assert not signs_in("bob", "bob-new-pw", room), "a reset account taken with the room's"
    assert signs_in("bob", "bob-new-pw", instructors) and not signs_in("bob", "bob-own-pw")
