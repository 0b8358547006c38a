"""Visible checks for the exercises, one module per notebook.

Each ``check_<name>(fn)`` calls the learner's function on small inputs, checks
shape first, then values, and on a failure raises :class:`CheckFailed` with a
message that names the likely mistake. The checks test properties and
hand-worked examples; they hold no reference solution.
"""

from attnlib.checks._core import CheckFailed

__all__ = ["CheckFailed"]
