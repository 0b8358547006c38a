"""Names a student chose, made safe to print: every line the grader's CLI prints and every
name intake quotes goes through :func:`printable`.

A student id or file name may hold control characters: an ESC or OSC sequence retitles or
clears the instructor's terminal and can hide earlier lines, a carriage return overwrites a
line, a bidi override reverses what follows (issue 46). Each character Python does not
consider printable (C0 and C1 controls, DEL, format characters such as U+202E, line and
paragraph separators, lone surrogates from a name that is not UTF-8) is shown as its escape,
as ``repr`` writes it (``\\x1b``, ``\\r``, ``\\u202e``), so the line stays one line and says
what the name holds.
"""


def printable(text: str) -> str:
    """``text`` with every non-printable character written as its escape."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else ascii(c)[1:-1] for c in text)


def printable_lines(text: str) -> str:
    """:func:`printable` line by line: a traceback or a multi-line message keeps its lines."""
    return "\n".join(printable(line) for line in text.split("\n"))


def holds_control(name: str) -> bool:
    """Whether ``name`` holds a character :func:`printable` would escape."""
    return not name.isprintable()
