"""Torch's own interception points, for the shortcut tripwire (``recorders.call_watched``).

The profiler sees every Python function at any depth, and the builtins that Python code calls
itself; a builtin that C code calls for the learner (``functools.partial``,
``operator.methodcaller``, ``map``, a key function, an ``nn.Module``) raises no profiler
event. Torch's builtins are also out of reach of replacement: ``torch._C._VariableFunctions``
and ``torch._C.TensorBase`` are immutable types, so a wrapper put on ``torch.softmax`` would
leave ``torch._C._VariableFunctions.softmax`` and ``torch._C.TensorBase.softmax`` as they are.

Torch itself sends every call of its API, whatever object the caller holds (``torch.softmax``,
``torch._C._VariableFunctions.softmax``, ``Tensor``/``TensorBase`` methods, ``torch.special``,
``torch.nn.functional``, ``torch.ops.aten.*``), through the ``__torch_function__`` modes on
its stack. :func:`push` puts one such mode on that stack while a graded call runs; it notes
every call whose name is a shortcut. The class is made inside a sealed function
(``grader.kernel.seal``), so its method reads this module's private namespace, not its
attributes. (A ``__torch_dispatch__`` mode would also see calls made with torch's function
handling switched off, but its first use imports some 800 modules, sympy among them: seconds
in every kernel that grades a torch-ruled exercise.)

Torch's function-mode stack is reached through ``torch._C`` (torch has no public reader of
it); ``tests/test_recorders.py`` guards every route listed above.
"""

from __future__ import annotations

import sys
import types
from typing import TYPE_CHECKING, Any

from grader.kernel import seal

if TYPE_CHECKING:
    from collections.abc import Callable, Collection

    from torch.overrides import TorchFunctionMode

TORCH = "torch"


def qualified(func: Any) -> str:  # any callable, a hostile one too
    """A dotted name for a callable that torch or the profiler reports, e.g. ``torch.softmax``,
    ``torch._C.TensorBase.softmax``, ``torch.ops.aten._softmax`` (its last part is what a rule
    names); "?" for an object that will not say."""
    try:
        if type(func).__module__ == "torch._ops":  # aten._softmax.default, aten.softmax
            namespace, op = str(func).split(".")[:2]
            return f"torch.ops.{namespace}.{op}"
        owner = getattr(func, "__objclass__", None)  # a method descriptor: TensorBase.softmax
        if isinstance(owner, type):
            return f"{owner.__module__}.{owner.__qualname__}.{func.__name__}"
        owner = getattr(func, "__self__", None)
        if owner is not None and not isinstance(owner, types.ModuleType):  # a bound method
            cls = type(owner)
            return f"{cls.__module__}.{cls.__qualname__}.{func.__name__}"
        if isinstance(func, types.FunctionType):
            return f"{func.__module__}.{func.__qualname__}"
        where = getattr(func, "__module__", None) or getattr(owner, "__name__", "?")
        return f"{where}.{func.__name__}"
    except Exception:  # noqa: BLE001 (a hostile object)
        return "?"


def names_for(rules: dict[str, list[str]]) -> frozenset[str]:
    """The names ``rules`` ({module prefix: names}) bans under torch."""
    found = [names for prefix, names in rules.items() if prefix.split(".")[0] == TORCH]
    return frozenset().union(*found)


def loaded() -> bool:
    """True once ``import torch`` has got as far as its modes."""
    return "torch.overrides" in sys.modules and "torch._C" in sys.modules


def push(names: frozenset[str], seen: dict[str, None]) -> TorchFunctionMode | None:
    """Push a function mode that notes in ``seen`` every call of torch named in ``names``;
    return it (to :func:`pop`), or None where torch is not loaded."""
    if not names or not loaded():
        return None
    from torch.overrides import TorchFunctionMode

    class Functions(TorchFunctionMode):
        def __torch_function__(
            self,
            func: Callable[..., Any],
            types: Collection[type],
            args: tuple[Any, ...] = (),
            kwargs: dict[str, Any] | None = None,
        ) -> Any:
            name = qualified(func)
            if name.rsplit(".", 1)[-1] in names:
                seen[name] = None
            return func(*args, **(kwargs or {}))

    mode = Functions()
    mode.__enter__()  # type: ignore[no-untyped-call]  # torch leaves __enter__ unannotated
    return mode


def pop(mode: TorchFunctionMode | None) -> bool:
    """Take the mode :func:`push` returned off torch's stack; False when it was no longer on
    top (the learner's code popped or replaced it: tampering)."""
    if mode is None:
        return True
    import torch

    depth = torch._C._len_torch_function_stack()
    on_top = depth > 0 and torch._C._get_function_stack_at(depth - 1) is mode
    if on_top:
        mode.__exit__(None, None, None)  # type: ignore[no-untyped-call]  # torch: unannotated
    return on_top


seal.seal(globals())
