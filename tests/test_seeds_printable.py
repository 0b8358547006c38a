"""grader/seeds.py and grader/printable.py, directly: pure helpers of the base layer."""

import pytest

from grader.printable import holds_control, printable, printable_lines
from grader.seeds import derived, keyed


def test_derived_seeds_are_fixed_32_bit_values_of_their_parts():
    assert derived(2026, "ada", "softmax") == derived("2026", "ada", "softmax")
    assert (
        derived(2026, "ada") == 2162000644
    )  # crc32 of "2026:ada": the same on every machine and every process
    assert derived(2026, "ada") != derived(2026, "bob") and 0 <= derived("x") < 2**32


def test_keyed_seeds_depend_on_the_secret_and_every_part():
    seed = keyed(2**200 + 1, "ada", "01", "inputs")
    assert seed == keyed(2**200 + 1, "ada", "01", "inputs") and 0 <= seed < 2**64
    assert len({seed, keyed(2**200, "ada", "01", "inputs"), keyed(2**200 + 1, "bob", "01",
                "inputs"), keyed(2**200 + 1, "ada", "01", "cases")}) == 4  # fmt: skip
    assert keyed(1, "a:b") != keyed(1, "a", "b")  # parts are not joined ambiguously


@pytest.mark.parametrize(
    ("name", "shown"),
    [
        ("ada", "ada"),
        ("zoë 名前", "zoë 名前"),
        ("\x1b]0;pwned\x07", "\\x1b]0;pwned\\x07"),
        ("a\rb\nc", "a\\rb\\nc"),
        ("evil\u202etxt.exe", "evil\\u202etxt.exe"),
        ("bad\udcffbytes", "bad\\udcffbytes"),
        ("del\x7f", "del\\x7f"),
    ],
)
def test_printable_escapes_what_would_move_or_hide_a_terminal_s_text(name, shown):
    assert printable(name) == shown
    assert holds_control(name) is (name != shown)


def test_printable_lines_keeps_the_lines_of_a_message():
    assert printable_lines("one\x1b[2J\ntwo\r") == "one\\x1b[2J\ntwo\\r"
