"""Kernel-side modules that a notebook's later changes to module globals do not steer.

Notebook code shares the kernel's process, so it can replace any module attribute
(``recorders.call_watched = ...``, ``policy._READ = ("/",)``, ``tamper._SNAPSHOT.clear()``,
``np.array_equal = ...``, ``builtins.isinstance = ...``). :func:`seal`, run at the end of a
module's import (before any notebook code), rebuilds the module's own functions over a
private copy of its namespace: builtins, the grader modules it uses (as a snapshot of their
attributes, themselves sealed the same way) and copies of its containers. The module keeps
its attributes (the sealed functions, the original containers), so replacing one changes
nothing the sealed code reads. Other modules (``sys``, ``numpy``, the ``builtins`` module)
stay live, since the sealed code must see their state as it is now: what it calls of them
in a decision it takes at import, as a name of its own (``_SET_PROFILE = sys.setprofile``).

Not covered (best-effort, and said so in the README): attributes of *objects* (classes,
instances such as the stream's socket), the functions' own ``__globals__``/``__closure__``/
``__code__``, attributes of other modules the sealed code reads at call time, Python-level
internals of other packages (numpy's own module globals), and replacing the entry point a
cell calls, or the module in ``sys.modules``.
"""

from __future__ import annotations

import builtins
import types
from typing import Any


def _snapshot(module: types.ModuleType) -> types.SimpleNamespace:
    return types.SimpleNamespace(**vars(module))


def _private_value(value: Any) -> Any:  # any module global
    if isinstance(value, types.ModuleType) and value.__name__.startswith("grader."):
        return _snapshot(value)
    if type(value) in (dict, list, set):
        return type(value)(value)
    return value


def seal(namespace: dict[str, Any]) -> dict[str, Any]:
    """Rebuild the functions defined in the module whose globals are ``namespace`` over a
    private copy of it; put them in ``namespace`` too, and return the copy."""
    private = {name: _private_value(value) for name, value in namespace.items()}
    private["__builtins__"] = dict(vars(builtins))
    own_file = namespace.get("__file__")
    rebuilt: dict[str, types.FunctionType] = {}
    for name, value in namespace.items():
        if isinstance(value, types.FunctionType) and value.__code__.co_filename == own_file:
            sealed = types.FunctionType(
                value.__code__, private, value.__name__, value.__defaults__, value.__closure__
            )
            sealed.__kwdefaults__ = value.__kwdefaults__
            sealed.__qualname__, sealed.__doc__ = value.__qualname__, value.__doc__
            sealed.__module__ = value.__module__
            rebuilt[name] = sealed
    private.update(rebuilt)
    namespace.update(rebuilt)
    return private
