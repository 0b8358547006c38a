"""Notebook 07's exercises: the catalogue's mistakes are named, its alternatives pass, and the
solution agrees with the library code and PyTorch module the notebook compares it with."""

import numpy as np
import pytest
import torch
from catalogue import catalogue_tests

from attnlib.checks import CheckFailed
from attnlib.checks import nb07_heads_and_positions as checks
from attnlib.model import rope as model_rope

NB = "07_heads_and_positions"

test_mistake_is_named, test_alternative_passes = catalogue_tests(NB)


@pytest.mark.parametrize(("d_model", "n_heads"), [(6, 4), (10, 3), (7, 2)])
def test_split_heads_error_names_both_numbers(solution, d_model, n_heads):
    with pytest.raises(ValueError) as err:
        solution(NB)["split_heads"](np.zeros((2, d_model)), n_heads)
    assert str(d_model) in str(err.value) and str(n_heads) in str(err.value)


def _raises(exc):
    def split_heads(X, n_heads):
        if X.shape[-1] % n_heads:
            raise exc
        *lead, T, d = X.shape
        return np.swapaxes(X.reshape(*lead, T, n_heads, d // n_heads), -2, -3)

    return split_heads


def test_split_heads_check_accepts_a_replayed_value_error():
    """The grader replays a recorded error as a new class that is only *named* ValueError."""
    replayed = type("ValueError", (Exception,), {})
    checks.check_split_heads(_raises(replayed("n_heads = 4 does not divide d_model = 6")))


@pytest.mark.parametrize(
    ("exc", "says"),
    [
        (TypeError("n_heads = 4 does not divide d_model = 6"), "raised TypeError"),
        (ValueError("cannot split the columns"), "both numbers"),
    ],
)
def test_split_heads_check_wants_a_value_error_with_both_numbers(exc, says):
    with pytest.raises(CheckFailed, match=says):
        checks.check_split_heads(_raises(exc))


def _split_two_axes_only(X, n_heads):
    T, d_model = X.shape  # a batch [B, T, d_model]: too many values to unpack
    return X.reshape(T, n_heads, d_model // n_heads).transpose(1, 0, 2)


def _split_reshape_to_t(X, n_heads):
    T, d_model = X.shape[-2:]  # a batch: cannot reshape B·T·d_model numbers into T rows
    return X.reshape(T, n_heads, d_model // n_heads).transpose(1, 0, 2)


def _split_fixed_transpose(X, n_heads):
    H = X.reshape(*X.shape[:-1], n_heads, X.shape[-1] // n_heads)
    return H.transpose(0, 2, 1, 3)  # without a batch axis: axes don't match array


def _merge_two_axes_only(H):
    n_heads, T, d_head = H.shape
    return H.transpose(1, 0, 2).reshape(T, n_heads * d_head)


@pytest.mark.parametrize(
    ("check", "wrong"),
    [
        (checks.check_split_heads, _split_two_axes_only),
        (checks.check_split_heads, _split_reshape_to_t),
        (checks.check_split_heads, _split_fixed_transpose),
        (checks.check_merge_heads, _merge_two_axes_only),
    ],
    ids=lambda v: v.__name__,
)
def test_code_for_a_fixed_number_of_axes_is_told_to_unpack_from_the_end(check, wrong):
    """Issue 24: without (or with) batch axes such code crashed with NumPy's words only."""
    with pytest.raises(CheckFailed, match=r"no batch axes or several.*unpack from the end"):
        check(wrong)


def test_solution_rope_matches_the_model_convention(solution):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(2, 3, 7, 16))  # [B, heads, T, d]
    positions = rng.integers(0, 500, size=7)
    theirs = model_rope(torch.from_numpy(X), torch.from_numpy(positions)).numpy()
    np.testing.assert_allclose(solution(NB)["rope"](X, positions), theirs, atol=1e-4)


def test_solution_matches_torch_multihead_attention(solution):
    rng = np.random.default_rng(1)
    B, T, d_model, n_heads = 2, 5, 12, 3
    X = rng.normal(size=(B, T, d_model))
    W_Q, W_K, W_V, W_O = rng.normal(size=(4, d_model, d_model)) / np.sqrt(d_model)
    M = np.triu(np.full((T, T), -np.inf), k=1)
    out, weights = solution(NB)["multi_head_attention"](X, W_Q, W_K, W_V, W_O, n_heads, mask=M)
    mha = torch.nn.MultiheadAttention(
        d_model, n_heads, bias=False, batch_first=True, dtype=torch.float64
    )
    with torch.no_grad():
        mha.in_proj_weight.copy_(torch.from_numpy(np.concatenate([W_Q, W_K, W_V])))
        mha.out_proj.weight.copy_(torch.from_numpy(W_O))
        x = torch.from_numpy(X)
        ref, ref_w = mha(x, x, x, attn_mask=torch.from_numpy(M), average_attn_weights=False)
    np.testing.assert_allclose(out, ref.numpy(), atol=1e-10)
    np.testing.assert_allclose(weights, ref_w.numpy(), atol=1e-10)


def test_solution_accepts_float32_and_integer_positions(solution):
    fns = solution(NB)
    rng = np.random.default_rng(2)
    X = rng.normal(size=(4, 8)).astype(np.float32)
    Ws = rng.normal(size=(4, 8, 8)).astype(np.float32)
    out, weights = fns["multi_head_attention"](X, *Ws, 2)
    assert out.shape == (4, 8) and np.allclose(weights.sum(-1), 1, atol=1e-5)
    rotated = fns["rope"](X, np.arange(4, dtype=np.int64))
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
    cells = _notebook_cells()
    sections = _section_of_each_cell(cells)
    shuffle = _first(cells, lambda c: c.cell_type == "code" and "X_r[order]" in c.source)
    probe = _first(cells, lambda c: c.cell_type == "code" and "probe_r2[where]" in c.source)
    question = _first(cells, lambda c: "## 7. Written question" in c.source)
    text = " ".join(cells[question].source.split())
    assert f"measurement of section {sections[shuffle]})" in text
    assert f"where a token is (section {sections[probe]})" in text


def test_the_trained_model_maps_are_readable_and_fit_the_output_cap(monkeypatch):
    """Issue 24: the four maps were drawn at 72 dpi with ticks about 6 px tall."""
    import base64
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from attnlib import tasks
    from attnlib.plotting import heatmap
    from attnlib.shipped import evaluate, load_shipped
    from grader.settings import GraderSettings

    cells = _notebook_cells()
    define = cells[_first(cells, lambda c: "def draw_best_heads" in c.source)].source
    models = {"RoPE": load_shipped("induction"), "no positions": load_shipped("no_positions")}
    namespace = dict(np=np, torch=torch, plt=plt, tasks=tasks, heatmap=heatmap, models=models)
    namespace["results"] = {label: evaluate(m) for label, m in models.items()}
    figures = []
    monkeypatch.setattr(plt, "show", lambda: figures.append(plt.gcf()))
    exec(define, namespace)  # draws the RoPE model's maps, as the notebook does
    namespace["draw_best_heads"]("no positions")
    cap = GraderSettings.max_output_chars.default_value
    for fig in figures:
        buf = io.BytesIO()
        fig.savefig(buf, format="png", bbox_inches="tight", dpi=fig.dpi)
        assert len(base64.b64encode(buf.getvalue())) < 0.6 * cap
        ticks = [t for ax in fig.axes[:2] for t in ax.get_xticklabels() + ax.get_yticklabels()]
        assert min(t.get_fontsize() * fig.dpi / 72 for t in ticks if t.get_visible()) >= 10
    assert len(figures) == 2 and all(fig.dpi >= 80 for fig in figures)
    plt.close("all")


def test_the_model_and_data_the_prose_names_are_printed_from_the_model_and_its_recipe():
    """Every number in prose comes from a cell: the shape and the data of section 6's models."""
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
