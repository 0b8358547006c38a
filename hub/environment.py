"""The course environment every attendee's server runs, and the student materials.

The checkout's ``.venv`` cannot serve the room: its interpreter may sit under a 0700 home
(``/root/.pyenv``), and it holds ``grader/`` (the hidden checks) as an editable install. So
``ROOT/env`` is a new venv of the very Python ``make setup`` used (copied to ``ROOT/python``
when other users cannot run it where it is: another build of the same minor version is not
the same, e.g. Debian's 3.11 breaks the packages' soupsieve), seeded with the packages
``make setup`` already installed and tested: files are hard-linked where the file system
allows it (nothing ever writes them in place), copied elsewhere. The course's own editable
install is left out; instead ``ROOT/course`` holds the student materials, built like the
student bundle (``grader.commands.bundle``: a fresh release, attnlib, data, from an allow-list and
scanned for solutions), and a ``.pth`` file makes its ``attnlib`` importable (and, for the
instructors only, who alone can open it, their private copy of the course with the grader).
Everything is owned by root and readable by all, writable by nobody else.
"""

import hashlib
import os
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Callable
from importlib import metadata
from pathlib import Path

from grader.commands import bundle
from grader.errors import UserError

COURSE_DIST = "attention_step_by_step"  # the checkout's own editable install, never seeded
SCRIPT = """#!{python}
import sys
from {module} import {attr}
sys.exit({call}())
"""


SetupError = UserError  # a problem with the host, said in one line: the grader's one user error


def world_usable(path: Path) -> bool:
    """Every user can reach and run ``path`` (each parent folder searchable by others)."""
    path = path.resolve()
    if not path.exists() or not os.stat(path).st_mode & 0o001:
        return False
    return all(os.stat(p).st_mode & 0o001 for p in path.parents)


def _version() -> str:
    return f"python{sys.version_info.major}.{sys.version_info.minor}"


def interpreter(python_home: Path) -> Path:
    """This very Python (the one `make setup` tested the packages with), where every user can
    run it: in place if they can, else a copy of its installation in ``python_home``
    (hard links, without its own site-packages; the binary itself copied, with its library
    path made relative by Debian's patchelf, since it names the private folder)."""
    this = Path(sys.base_prefix, "bin", _version())
    if world_usable(this) and world_usable(Path(sysconfig.get_paths()["stdlib"])):
        return this
    copy = python_home / "bin" / _version()
    if (python_home / ".copied-from").is_file():
        if (python_home / ".copied-from").read_text() == str(this):
            return copy
    if not shutil.which("patchelf"):
        raise SetupError(
            f"{this} is in a folder other users cannot open, and patchelf (to copy it) is "
            "missing: run `make hub-setup` (it installs Debian's patchelf, as root)"
        )
    shutil.rmtree(python_home, ignore_errors=True)
    _link_tree(Path(sys.base_prefix), python_home, skip=lambda name: name == "site-packages")
    copy.unlink()
    shutil.copy2(this, copy)  # a copy: patchelf rewrites the file it is given
    subprocess.run(["patchelf", "--set-rpath", "$ORIGIN/../lib", str(copy)], check=True)
    (python_home / ".copied-from").write_text(str(this))
    for folder, _dirs, _files in os.walk(python_home):
        os.chmod(folder, 0o755)
    return copy


def _link_tree(src: Path, dest: Path, skip: Callable[[str], bool] = lambda name: False) -> None:
    def link(s: str, d: str) -> None:
        try:
            os.link(s, d)
        except OSError:
            shutil.copy2(s, d)

    def ignore(folder: str, names: list[str]) -> list[str]:
        return [n for n in names if skip(n)]

    shutil.copytree(src, dest, symlinks=True, copy_function=link, ignore=ignore, dirs_exist_ok=True)


def _site_packages(prefix: Path) -> Path:
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    return prefix / "lib" / version / "site-packages"


def _is_course_install(name: str) -> bool:
    return COURSE_DIST in name.replace("-", "_")


def _write_scripts(env: Path) -> int:
    """The console scripts of the seeded packages (``jupyterhub-singleuser``, ``jupyter``,
    ``nbgrader``...), pointing at the new interpreter."""
    python = env / "bin" / "python"
    count = 0
    for dist in metadata.distributions(path=[str(_site_packages(env))]):
        for ep in dist.entry_points:
            if ep.group != "console_scripts" or not ep.attr:
                continue
            script = env / "bin" / ep.name
            attr = ep.attr.split(".")[0]
            call = ep.attr
            script.write_text(SCRIPT.format(python=python, module=ep.module, attr=attr, call=call))
            script.chmod(0o755)
            count += 1
    return count


def fingerprint() -> str:
    """What the environment is made of: the seeded distributions and versions."""
    names = sorted(
        f"{d.metadata['Name']}=={d.version}"
        for d in metadata.distributions(path=[str(_site_packages(Path(sys.prefix)))])
        if not _is_course_install(d.metadata["Name"] or "")
    )
    return hashlib.sha256("\n".join(names).encode()).hexdigest()


def build_env(env: Path, python_home: Path, importable: list[Path]) -> bool:
    """Make (or remake, if the checkout's packages changed) the course environment in ``env``
    (its Python in ``python_home`` if it must be copied), with the folders ``importable`` on
    its path, first first. Returns whether anything was built."""
    stamp = env / ".seeded-from"
    if sys.prefix == sys.base_prefix:
        raise SetupError("run this from the course's .venv (`make hub` does)")
    python = interpreter(python_home)
    wanted = f"{python}\n{fingerprint()}"
    if stamp.is_file() and stamp.read_text() == wanted:
        _add_paths(env, importable)
        return False
    shutil.rmtree(env, ignore_errors=True)
    subprocess.run([str(python), "-m", "venv", "--without-pip", str(env)], check=True)
    seed = Path(sys.prefix)
    _link_tree(_site_packages(seed), _site_packages(env), skip=_is_course_install)
    for folder in ("share", "etc"):
        if (seed / folder).is_dir():
            _link_tree(seed / folder, env / folder)
    _write_scripts(env)
    # The course's JupyterLab settings, as `make setup` writes them (a fresh file, not the
    # hard-linked one).
    settings = env / "share" / "jupyter" / "lab" / "settings" / "overrides.json"
    settings.unlink(missing_ok=True)
    _add_paths(env, importable)
    subprocess.run([str(env / "bin" / "python"), "-m", "attnlib.setup_lab"], check=True,
                   stdout=subprocess.DEVNULL)  # fmt: skip
    stamp.write_text(wanted)
    return True


def _add_paths(env: Path, folders: list[Path]) -> None:
    """A ``.pth`` file: Python adds each folder the running user can open, in order (the
    instructors' private course is skipped for everyone else)."""
    path = _site_packages(env) / "attention_course.pth"
    path.write_text("".join(f"{folder}\n" for folder in folders))
    os.chmod(path, 0o644)


def write_course(course: Path, release: Path) -> list[str]:
    """The student materials in ``course`` (the bundle's files, with the release notebooks
    generated in ``release``); returns the notebooks' names."""
    notebooks = {p.parent.name: p.read_bytes() for p in sorted(release.glob("*/*.ipynb"))}
    contents = bundle.files(notebooks)
    bad = bundle.problems(contents)
    if bad:
        raise SetupError(f"refusing to publish the course: {bad[0]}")
    shutil.rmtree(course, ignore_errors=True)
    for name, data in contents.items():
        path = course / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    for folder, _dirs, files in os.walk(course):
        os.chmod(folder, 0o755)
        for name in files:
            os.chmod(Path(folder, name), 0o644)
    return sorted(notebooks)
