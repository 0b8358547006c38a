"""Every CSV the grader writes, through one helper: no cell opens as a spreadsheet formula.

A student id, a message or a flag can be text a student chose, e.g. a folder named
``=HYPERLINK(...)``. Excel, LibreOffice and Google Sheets run a cell that starts with
``= + - @`` (or a tab or carriage return before one) as a formula, so such a cell is written
with a ``'`` in front (OWASP's advice), and so is one that already starts with ``'``: then
:func:`original` gives back exactly the text that was written, and :func:`read` maps every
student id to the same student as before. Numbers stay numbers ("-1.5" is not a formula).
A cell holding a carriage return or a line feed is always quoted: it stays one cell.
"""

import csv
import io
from collections.abc import Collection, Iterable, Mapping, Sequence
from pathlib import Path

from grader.errors import UserError
from grader.results import out as out_files

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
QUOTE = "'"


def _number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return text == text.strip()


def safe(value: object) -> str | int | float:
    """``value`` as a cell no spreadsheet runs; numbers (and numeric text) unchanged."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    text = "" if value is None else str(value)
    if text.startswith(QUOTE) or (text.startswith(FORMULA_STARTS) and not _number(text)):
        return QUOTE + text
    return text


def original(text: str) -> str:
    """The text :func:`safe` was given (for cells read back from a file written here)."""
    return text[1:] if text.startswith(QUOTE) else text


def write(
    path: Path,
    columns: list[str],
    rows: Iterable[Mapping[str, object] | Sequence[object]],
    encoding: str = "utf-8",
    as_is: Collection[str] = (),
) -> None:
    """Write ``columns`` then ``rows`` (dicts by column name, or sequences) to ``path``,
    replacing it at once (an interrupted write leaves the old file). The columns ``as_is``
    names are written exactly as given, header too (an LMS's own cells it reads back, such
    as a Moodle worksheet's feedback: a ``'`` would change them); only quoted as CSV."""
    exact = [c in as_is for c in columns]

    def cells_of(cells: Sequence[object]) -> list[object]:
        keeps = exact + [False] * (len(cells) - len(exact))  # a row may be longer
        return [c if keep else safe(c) for c, keep in zip(cells, keeps, strict=False)]

    with out_files.replaced(path) as tmp, open(tmp, "w", newline="", encoding=encoding) as fh:
        fh.write(_line(cells_of(columns)))
        for row in rows:
            cells = [row.get(c, "") for c in columns] if isinstance(row, Mapping) else row
            fh.write(_line(cells_of(cells)))


def _line(cells: Sequence[object]) -> str:
    """One row, ended by "\n". The csv module quotes a cell holding a character of its line
    terminator, and (before Python 3.12) only those: written with "\r\n", a cell holding a
    lone CR or LF is quoted too, so no id splits a row into a fake one (issue 46)."""
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\r\n").writerow(cells)
    return buffer.getvalue().removesuffix("\r\n") + "\n"


def read(path: Path) -> list[dict[str, str]]:
    """The rows of a CSV written by :func:`write`, as dicts of the original texts."""
    with open(path, newline="", encoding="utf-8") as fh:
        return [{original(k): original(v) for k, v in row.items()} for row in csv.DictReader(fh)]


def rows(path: Path, what: str) -> list[list[str]]:
    """The rows of an LMS's CSV file (``what`` it is, for the error), a leading BOM dropped;
    a file that cannot be read is a one-line error."""
    try:
        with open(path, newline="", encoding="utf-8-sig") as fh:
            return list(csv.reader(fh))
    except (OSError, UnicodeDecodeError, csv.Error) as err:
        raise UserError(f"cannot read {what} {path}: {err}") from None
