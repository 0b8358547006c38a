"""What checks and IPython rely on, snapshotted when the kernel starts, so changes show.

The judge replays visible checks outside the kernel, so a patched ``np.allclose`` or check
function changes no grade; these reports tell the instructor who tried. Sealed when imported
(``grader.kernel.seal``): the snapshot lives where notebook code cannot clear it through this
module's attributes.
"""

from __future__ import annotations

import builtins
import sys
from typing import TYPE_CHECKING, Any

from grader.kernel import seal

if TYPE_CHECKING:
    from collections.abc import Callable
    from types import ModuleType

# {"watched": {name: function}, "shell": {what: its state}}, filled by snapshot()
_SNAPSHOT: dict[str, dict[str, object]] = {}
_NUMPY_NAMES = (
    "allclose",
    "isclose",
    "all",
    "any",
    "array_equal",
    "asarray",
    "array",
    "save",
    "load",
    "abs",
    "max",
    "min",
    "sum",
    "exp",
    "isfinite",
    "where",
    "argmax",
)
_BUILTIN_NAMES = ("isinstance", "abs", "print", "len", "callable", "type", "hasattr", "getattr")


def _owners() -> dict[str, tuple[ModuleType, str]]:
    """{name: (object, attribute)} for the functions checks rely on."""
    import numpy as np

    owners = {f"np.{a}": (np, a) for a in _NUMPY_NAMES}
    owners["np.testing.assert_allclose"] = (np.testing, "assert_allclose")
    owners |= {f"builtins.{a}": (builtins, a) for a in _BUILTIN_NAMES}
    for name, mod in list(sys.modules.items()):
        if name.startswith("attnlib.checks") and mod is not None:
            for attr, value in list(vars(mod).items()):
                if callable(value) and not attr.startswith("__"):
                    owners[f"{name}.{attr}"] = (mod, attr)
    return owners


def _watched() -> dict[str, object]:
    return {name: getattr(obj, attr, None) for name, (obj, attr) in _owners().items()}


def _user_defined(obj: object) -> bool:
    """True for hooks written in a notebook cell rather than shipped by a library."""
    code = getattr(obj, "__code__", None) or getattr(
        vars(type(obj)).get("__call__"), "__code__", None
    )
    filename = getattr(code, "co_filename", "") if code is not None else ""
    return not filename.startswith((sys.prefix, sys.base_prefix))


def _shell_state(shell: Any) -> dict[str, object]:
    # ``shell``: IPython's, as notebook code left it (any attribute may have been replaced)
    hooks = list(shell.input_transformers_cleanup) + list(shell.input_transformers_post)
    hooks += list(shell.ast_transformers)
    hooks += [cb for cbs in shell.events.callbacks.values() for cb in cbs]
    return {
        "user-defined IPython hooks (input/AST transformers, events)": sum(
            map(_user_defined, hooks)
        ),
        "custom exception handler (set_custom_exc)": repr(shell.custom_exceptions),
        "showtraceback": "showtraceback" in vars(shell) or "_showtraceback" in vars(shell),
        "sys.excepthook": sys.excepthook is sys.__excepthook__,
        "sys.settrace": sys.gettrace() is None,
        "sys.setprofile": sys.getprofile() is None,
    }


def snapshot(shell: Any) -> None:  # the kernel's IPython shell
    """Remember how things are before any student code runs."""
    _SNAPSHOT["watched"] = _watched()
    _SNAPSHOT["shell"] = _shell_state(shell)


def anomalies() -> list[str]:
    """What changed since the kernel started, among things checks and IPython rely on."""
    found = []
    for name, fn in _watched().items():
        if name in _SNAPSHOT["watched"] and _SNAPSHOT["watched"][name] is not fn:
            found.append(f"{name} was replaced")
    try:
        from IPython import get_ipython

        now = _shell_state(get_ipython())
        for key, before in _SNAPSHOT["shell"].items():
            if now[key] != before:
                found.append(f"changed at run time: {key}")
    except Exception as err:  # noqa: BLE001 (any failure here is itself suspicious)
        found.append(f"could not inspect the shell: {type(err).__name__}")
    return sorted(set(found))[:50]


def pristine(fn: Callable[..., object], *args: object) -> object:
    """``fn(*args)`` with the functions checks rely on put back as they were, then the
    learner's again: a learner's monkeypatch then cannot steer a visible check down another
    path."""
    changed = []
    for name, (obj, attr) in _owners().items():
        original = _SNAPSHOT["watched"].get(name)
        current = getattr(obj, attr, None)
        if original is not None and current is not original:
            try:
                setattr(obj, attr, original)
                changed.append((obj, attr, current))
            except (AttributeError, TypeError):
                pass
    try:
        return fn(*args)
    finally:
        for obj, attr, value in changed:
            setattr(obj, attr, value)


seal.seal(globals())
