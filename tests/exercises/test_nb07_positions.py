"""Notebook 07_positions' exercise: the catalogue's mistakes are named, its alternatives pass,
the solution agrees with the library's RoPE, and the prose matches what the cells measure."""

import numpy as np
import torch
from catalogue import catalogue_tests

from attnlib.model import rope as model_rope

NB = "07_positions"

test_mistake_is_named, test_alternative_passes = catalogue_tests(NB)


def test_solution_rope_matches_the_model_convention(solution):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(2, 3, 7, 16))  # [B, heads, T, d]
    positions = rng.integers(0, 500, size=7)
    theirs = model_rope(torch.from_numpy(X), torch.from_numpy(positions)).numpy()
    np.testing.assert_allclose(solution(NB)["rope"](X, positions), theirs, atol=1e-4)


def test_solution_accepts_float32_and_integer_positions(solution):
    X = np.random.default_rng(2).normal(size=(4, 8)).astype(np.float32)
    rotated = solution(NB)["rope"](X, np.arange(4, dtype=np.int64))
    np.testing.assert_allclose(np.linalg.norm(rotated, axis=-1), np.linalg.norm(X, axis=-1), 1e-5)


# ---------------------------------------------------------------- prose against output
def _notebook_cells():
    import nbformat

    from grader.course import source_path

    return nbformat.read(source_path(NB), as_version=4).cells


def _section_of_each_cell(cells):
    """The number of the last "## N." heading at or above each cell (0 before the first)."""
    import re

    section, sections = 0, []
    for cell in cells:
        found = cell.cell_type == "markdown" and re.search(r"^## (\d+)\.", cell.source, re.M)
        section = int(found.group(1)) if found else section
        sections.append(section)
    return sections


def _first(cells, predicate):
    return next(i for i, cell in enumerate(cells) if predicate(cell))


def test_rope_and_the_scores_are_taught_before_a_trained_model_uses_them():
    """Issue 24: 07 used notebook 08's model and induction scores, and a RoPE model before
    its RoPE section."""
    cells = _notebook_cells()
    rope_exercise = _first(cells, lambda c: c.get("id") == "rope")  # the exercise's answer cell
    first_model = _first(cells, lambda c: c.cell_type == "code" and "load_shipped(" in c.source)
    assert rope_exercise < first_model
    taught = " ".join(c.source for c in cells[:first_model] if c.cell_type == "markdown")
    for definition in ("A[t, t − 1]", "A[t, t − L + 1]", "previous-token", "induction"):
        assert definition in taught
    prose = " ".join(" ".join(c.source.split()) for c in cells if c.cell_type == "markdown")
    assert "model of notebook 08" not in prose and "notebook 08's" not in prose


def test_the_written_question_points_at_the_sections_that_measure_it():
    import nbformat

    from grader.course import source_path

    cells = _notebook_cells()
    sections = _section_of_each_cell(cells)
    seen = _first(cells, lambda c: c.cell_type == "code" and "on tokens already seen" in c.source)
    question = _first(cells, lambda c: "## 3. Written question" in c.source)
    text = " ".join(cells[question].source.split())
    heads = nbformat.read(source_path("07_heads"), as_version=4).cells
    shuffle = _first(heads, lambda c: c.cell_type == "code" and "X_r[order]" in c.source)
    assert f"notebook `07_heads`, section {_section_of_each_cell(heads)[shuffle]})" in text
    assert f"second copy (section {sections[seen]})" in text


def test_the_trained_model_maps_are_readable_and_fit_the_output_cap():
    """Issue 24: the four maps were drawn at 72 dpi with ticks about 6 px tall; issue 47: at
    100 dpi (tests/test_figures.py), a PNG of about two thirds of the cap, one per cell."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from attnlib import tasks
    from attnlib.plotting import figure_bundle, heatmap
    from attnlib.shipped import evaluate, load_shipped
    from grader.settings import GraderSettings

    cells = _notebook_cells()
    define = cells[_first(cells, lambda c: "def draw_best_heads" in c.source)].source
    models = {"RoPE": load_shipped("induction"), "no positions": load_shipped("no_positions")}
    namespace = dict(np=np, torch=torch, plt=plt, tasks=tasks, heatmap=heatmap, models=models)
    namespace["results"] = {label: evaluate(m) for label, m in models.items()}
    figures, bundles = [], []

    def show(fig, alt):  # the notebook's attnlib.plotting.show, keeping what it would display
        figures.append(fig)
        bundles.append(figure_bundle(fig, alt)[0])

    namespace["show"] = show
    exec(define, namespace)  # draws the RoPE model's maps, as the notebook does
    namespace["draw_best_heads"]("no positions")
    cap = GraderSettings.max_output_chars.default_value
    for fig, bundle in zip(figures, bundles, strict=True):
        assert len(bundle["image/png"]) < 0.7 * cap  # what the grader keeps of it
        assert sum(len(v) for v in bundle.values()) < cap
        ticks = [t for ax in fig.axes[:2] for t in ax.get_xticklabels() + ax.get_yticklabels()]
        assert min(t.get_fontsize() * fig.dpi / 72 for t in ticks if t.get_visible()) >= 10
    assert len(figures) == 2 and all(fig.dpi >= 100 for fig in figures)
    plt.close("all")


def test_the_model_and_data_the_prose_names_are_printed_from_the_model_and_its_recipe():
    """Every number in prose comes from a cell: the shape and the data of section 2's models."""
    from attnlib.shipped import RECIPE, load_shipped

    cells = _notebook_cells()
    shape, data = load_shipped("induction").config, RECIPE["data"]
    prose = " ".join(" ".join(c.source.split()) for c in cells if c.cell_type == "markdown")
    assert (
        f"{shape['n_layers']} layers of {shape['n_heads']} heads, d_model {shape['d_model']}"
        in (prose)
    )
    assert (
        f"blocks of {data['min_len']}–{data['max_len']} random tokens out of {data['vocab']}"
        in (prose)
    )
    code = [c.source for c in cells if c.cell_type == "code" and "load_shipped(" in c.source]
    assert "shape['n_layers']} layers of {shape['n_heads']} heads" in code[0]
    assert "blocks of {data['min_len']}–{data['max_len']} tokens" in code[0]
