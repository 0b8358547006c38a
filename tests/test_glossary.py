"""Taught before used: no notebook uses a term of docs/glossary.toml on the learner's path
(markdown outside `<details>`) before the section that teaches it."""

import re
import tomllib
from dataclasses import dataclass
from functools import cache

import pytest
from fixtures.prose import Cell, markdown

from grader.course import REPO_ROOT, assignments, source_path

GLOSSARY = REPO_ROOT / "docs" / "glossary.toml"


@dataclass(frozen=True)
class Term:
    term: str
    taught: str  # notebook, or "" for a word the course never teaches
    section: str
    forms: tuple[re.Pattern[str], ...]

    def used(self, cell: Cell) -> bool:
        return any(form.search(cell.text) for form in self.forms)


@cache
def terms() -> tuple[Term, ...]:
    entries = tomllib.loads(GLOSSARY.read_text())["term"]
    return tuple(
        Term(e["term"], e["taught"], e["section"], tuple(re.compile(f) for f in e["forms"]))
        for e in entries
    )


@cache
def path(assignment: str) -> list[Cell]:
    return markdown(source_path(assignment))


def teaching_cell(term: Term) -> int | None:
    """The first cell of the term's teaching section, or None (no such notebook or section)."""
    if term.taught not in assignments():
        return None
    return next((c.index for c in path(term.taught) if c.section == term.section), None)


def too_early(term: Term, assignment: str, cell: Cell) -> bool:
    order = assignments()
    if term.taught not in order:  # never taught (or its notebook is gone): every use is early
        return True
    here, there = order.index(assignment), order.index(term.taught)
    if here != there:
        return here < there
    start = teaching_cell(term)  # the title cell announces what the notebook will teach
    return cell.index != 0 and (start is None or cell.index < start)


@pytest.mark.parametrize("term", terms(), ids=lambda t: t.term)
def test_each_term_is_taught_where_the_glossary_says(term):
    if not term.taught:
        return  # never taught: test_no_term_before_it_is_taught forbids it everywhere
    assert term.taught in assignments(), f"{term.term!r}: no notebook {term.taught}"
    start = teaching_cell(term)
    assert start is not None, f"{term.term!r}: {term.taught} has no section {term.section!r}"
    section = [c for c in path(term.taught) if c.section == term.section]
    assert any(term.used(c) for c in section), (
        f"{term.term!r}: its teaching section {term.section!r} of {term.taught} never names it "
        "outside <details>"
    )


@pytest.mark.parametrize("assignment", assignments())
def test_no_term_before_it_is_taught(assignment):
    early = [
        f"[{cell.index}] {term.term!r} (taught in {term.taught or 'no notebook'}"
        f"{', ' + term.section if term.section else ''})"
        for cell in path(assignment)
        for term in terms()
        if term.used(cell) and too_early(term, assignment, cell)
    ]
    assert not early, f"{assignment} uses terms before they are taught: " + "; ".join(early)


def test_a_term_used_before_its_section_is_caught():
    """The check can fail: a glossary entry saying 07_positions teaches "mask" flags 05's cells,
    which name the causal mask long before."""
    mask = Term("mask", "07_positions", "## 1. RoPE: positions in the scores",
                (re.compile(r"\bmask\b"),))  # fmt: skip
    cells = path("05_causal_mask")
    assert any(mask.used(c) and too_early(mask, "05_causal_mask", c) for c in cells)


# Issue 47 found each of these used before it was taught (or never taught): all stay listed.
ISSUE_47 = {
    "linear attention": "linear attention",
    "LayerNorm": "after a LayerNorm",
    "induction head": "an induction head reads what a previous-token head wrote",
    "MLP (multi-layer perceptron)": "no MLPs",
    "cross-entropy": "cross-entropy",
    "K-composition": "K-composition",
    "layer.head notation (head 0.2 = head 2 of layer 0)": "Head 0.2",
    "the lesson (a text the learner never sees)": "the lesson says",
    "GELU": "GELU",
}


@pytest.mark.parametrize(("term", "as_found"), ISSUE_47.items())
def test_every_term_issue_47_found_is_listed_and_finds_it(term, as_found):
    listed = {t.term: t for t in terms()}
    assert term in listed, f"docs/glossary.toml lists no {term!r}"
    cell = Cell(0, as_found, as_found, "")
    assert listed[term].used(cell), f"{term!r}'s forms miss {as_found!r}"
