"""grader/results/csvfile.py, directly: what a spreadsheet would run is written inert, numbers
stay numbers, a cell with a line break stays one cell, and read gives back what write got."""

import pytest

from grader.results import csvfile


@pytest.mark.parametrize(
    ("value", "cell"),
    [
        ('=HYPERLINK("x")', '\'=HYPERLINK("x")'),
        ("+1+2", "'+1+2"),
        ("-cmd", "'-cmd"),
        ("@SUM(A1)", "'@SUM(A1)"),
        ("\t=1", "'\t=1"),
        ("\r=1", "'\r=1"),
        ("'quoted", "''quoted"),  # so original() gives back exactly what was written
        ("-1.5", "-1.5"),  # a number, not a formula
        ("+3", "+3"),
        (" -1", " -1"),  # a leading space: no formula starts with one
        ("-1 ", "'-1 "),  # numeric only once stripped: not a number as written
        (-2, -2),
        (1.5, 1.5),
        (True, "True"),  # a bool is text
        (None, ""),
        ("alice", "alice"),
    ],
)
def test_safe_makes_formulas_inert_and_keeps_numbers(value, cell):
    assert csvfile.safe(value) == cell
    if isinstance(cell, str):
        assert csvfile.original(cell) == ("" if value is None else str(value))


def test_write_then_read_round_trips_hostile_cells(tmp_path):
    path = tmp_path / "out" / "grades.csv"
    rows = [
        {"student": "=cmd|' /C calc'!A0", "message": "line one\nline two", "points": -1.5},
        {"student": "bob\rfake", "message": "'tick", "points": 2},
        ["carol", 'a "quote", a comma', ""],
    ]
    csvfile.write(path, ["student", "message", "points"], rows)
    text = path.read_bytes().decode()  # as written: no newline translation
    assert text.splitlines()[0] == "student,message,points"
    assert "\n'=cmd" in text and '"line one\nline two"' in text and '"bob\rfake"' in text
    assert csvfile.read(path) == [
        {"student": "=cmd|' /C calc'!A0", "message": "line one\nline two", "points": "-1.5"},
        {"student": "bob\rfake", "message": "'tick", "points": "2"},
        {"student": "carol", "message": 'a "quote", a comma', "points": ""},
    ]
    assert not list(path.parent.glob(".*.tmp"))  # written at once, through a temporary file


def test_a_failed_write_leaves_the_old_file(tmp_path):
    path = tmp_path / "grades.csv"
    csvfile.write(path, ["a"], [{"a": 1}])

    def rows():
        yield {"a": 2}
        raise RuntimeError("interrupted")

    with pytest.raises(RuntimeError):
        csvfile.write(path, ["a"], rows())
    assert csvfile.read(path) == [{"a": "1"}] and not list(tmp_path.glob(".*.tmp"))
