"""The grader's one exception for problems the user can fix (bad input, a missing tool).

``python -m grader`` prints it as one line and exits with code 2 (``grader.cli``). It lives
apart from ``grader.cli`` so every layer can raise it without importing the CLI.
"""


class UserError(Exception):
    """A problem with the user's input, reported as one clear line (exit code 2)."""
