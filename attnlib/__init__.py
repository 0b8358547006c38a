"""Helpers for the notebooks of *Attention, step by step*.

Import what a notebook needs from the submodules (``attnlib.checks.nb01_soft_lookup``,
``attnlib.plotting``, ...). This package imports neither torch nor matplotlib
on its own, so notebooks that do not need them start fast.
"""

__version__ = "0.1.0"
