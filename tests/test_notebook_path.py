"""One idea a notebook, in one sitting: the learner's path through each notebook in solutions/.

Path = the markdown a learner reads (outside `<details>`: hints and "Going deeper" blocks are
opened on demand) at 150 words a minute, plus the minutes each exercise states. It must fit in
45 minutes and under the time the title cell states, no markdown cell on it may be a wall of
over 200 words, and the notebook ends with its own `## Summary` cell. `pytest -s` prints each
notebook's path and stated time.
"""

import re

import pytest
from fixtures.prose import EXERCISE, markdown, words

from grader.course import assignments, source_path

WORDS_PER_MINUTE = 150
SITTING = 45  # minutes
WALL = 200  # words in one markdown cell
STATED = re.compile(r"^Time: about (\d+) minutes\.", re.M)


def path_minutes(assignment: str) -> float:
    cells = markdown(source_path(assignment))
    read = sum(words(c.text) for c in cells) / WORDS_PER_MINUTE
    return read + sum(int(m) for c in cells for m in EXERCISE.findall(c.source))


def stated_minutes(assignment: str) -> int:
    title = markdown(source_path(assignment))[0].text
    found = STATED.search(title)
    assert found, f"{assignment}: the title cell states no 'Time: about N minutes.'"
    return int(found[1])


@pytest.mark.parametrize("assignment", assignments())
def test_the_path_fits_one_sitting_and_its_stated_time(assignment):
    path, stated = path_minutes(assignment), stated_minutes(assignment)
    print(f"{assignment}: path {path:.1f} min, stated {stated} min")
    assert path <= SITTING, f"{assignment}: the path takes {path:.1f} min, over {SITTING}"
    assert path <= stated, f"{assignment}: the path takes {path:.1f} min, {stated} are stated"


@pytest.mark.parametrize("assignment", assignments())
def test_no_wall_of_text(assignment):
    walls = [
        f"[{c.index}] {words(c.text)} words"
        for c in markdown(source_path(assignment))
        if words(c.text) > WALL
    ]
    assert not walls, f"{assignment}: markdown cells over {WALL} words outside <details>: {walls}"


@pytest.mark.parametrize("assignment", assignments())
def test_ends_with_its_own_summary_cell(assignment):
    last = markdown(source_path(assignment))[-1]
    assert last.text.startswith("## Summary"), (
        f"{assignment}: the last markdown cell [{last.index}] is not a `## Summary` cell"
    )


def test_the_measure_counts_reading_and_exercises():
    """01's path is its exercises' stated minutes plus its reading: both parts are counted."""
    cells = markdown(source_path("01_soft_lookup"))
    minutes = sum(int(m) for c in cells for m in EXERCISE.findall(c.source))
    assert minutes >= 3 * 5 and path_minutes("01_soft_lookup") > minutes + 1
