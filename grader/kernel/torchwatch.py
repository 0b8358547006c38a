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
its stack, and every operator that reaches a kernel through the ``__torch_dispatch__`` modes
(so ``softmin`` shows as ``_softmax`` there). :func:`push` puts one mode of each on those
stacks while a graded call runs; they note every call whose name is a shortcut. Both
classes are made inside a sealed function (``grader.kernel.seal``), so their methods read
this module's private namespace, not its attributes.

Private API of torch used: ``torch.utils._python_dispatch.TorchDispatchMode`` and its
``_get_current_dispatch_mode`` (torch has no public one), and ``torch._C``'s function-mode
stack; ``tests/test_recorders.py`` guards every route listed above.
"""

import sys
import types

from grader.kernel import seal

TORCH = "torch"


def qualified(func) -> str:
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


def names_for(rules: dict) -> frozenset:
    """The names ``rules`` ({module prefix: names}) bans under torch."""
    found = [names for prefix, names in rules.items() if prefix.split(".")[0] == TORCH]
    return frozenset().union(*found)


def loaded() -> bool:
    """True once ``import torch`` has finished (its modes exist)."""
    return "torch.utils._python_dispatch" in sys.modules and "torch.overrides" in sys.modules


def push(names: frozenset, seen: dict):
    """Push a function mode and a dispatch mode that note in ``seen`` every call of torch
    named in ``names``; return them (to :func:`pop`), or None where torch is not loaded."""
    if not names or not loaded():
        return None
    from torch.overrides import TorchFunctionMode
    from torch.utils._python_dispatch import TorchDispatchMode

    def note(func):
        name = qualified(func)
        if name.rsplit(".", 1)[-1] in names:
            seen[name] = None

    class Functions(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            note(func)
            return func(*args, **(kwargs or {}))

    class Operators(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            note(func)
            return func(*args, **(kwargs or {}))

    modes = (Functions(), Operators())
    for mode in modes:
        mode.__enter__()
    return modes


def pop(modes) -> bool:
    """Take the modes :func:`push` returned off torch's stacks; False when they were no longer
    on top (the learner's code popped or replaced them: tampering)."""
    if modes is None:
        return True
    import torch
    from torch.utils._python_dispatch import _get_current_dispatch_mode

    functions, operators = modes
    intact = _get_current_dispatch_mode() is operators
    if intact:
        operators.__exit__(None, None, None)
    depth = torch._C._len_torch_function_stack()
    on_top = depth > 0 and torch._C._get_function_stack_at(depth - 1) is functions
    if on_top:
        functions.__exit__(None, None, None)
    return intact and on_top


seal.seal(globals())
