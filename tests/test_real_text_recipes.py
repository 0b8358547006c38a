"""The shared evaluation of the real-text induction recipes (recipes/real_text_induction) on
the shipped source model, whose answer is known from issue 48's independent measurement: a
head copying from 32 characters back and not from 96. And the curriculum's phases. Seconds."""

import importlib

import torch

from attnlib import realsource

# recipes/ is the repository's own folder, not an installed package: imported by name so that
# tests/test_pins.py, which lists the top-level packages tests import, does not take it for one
common = importlib.import_module("recipes.real_text_induction.common")
evaluate = importlib.import_module("recipes.real_text_induction.evaluate")
Phase, Recipe, phased_batches = common.Phase, common.Recipe, common.phased_batches
char_held_out, items, meets = evaluate.char_held_out, evaluate.items, evaluate.meets
repeat_scores = evaluate.repeat_scores


def test_the_shipped_head_copies_from_32_back_and_not_from_96():
    model, held = realsource.load(0), char_held_out(256)
    near, gain_near = repeat_scores(model, held.repeats[32], 32)
    far, gain_far = repeat_scores(model, held.repeats[96], 96)
    assert max(near) >= 0.45 and gain_near >= 1.5  # its card: 0.495 and 1.66
    assert max(far) < 0.1 and gain_far < 0.2  # issue 48: 0.030 / 0.11 at period 63 already
    result = items(model, held)
    assert result["induction_96"] < 0.1
    assert result["head"] == max(range(4), key=lambda h: min(near[h], far[h]))
    assert not meets(result, twin_held_out=result["held_out"])["1 induction"]
    assert meets(result, twin_held_out=result["held_out"])["3 held-out"]


def test_the_ablation_is_the_loss_of_the_model_without_the_chosen_head():
    model, held = realsource.load(1), char_held_out(256)
    natural, result = held.natural, items(model, held)
    without = realsource.without_head(model, 1, int(result["head"]))
    with torch.no_grad():
        logits = without(natural)
    loss = torch.nn.functional.cross_entropy(logits[:, :-1].flatten(0, 1), natural[:, 1:].flatten())
    assert abs(loss.item() - result["held_out"] - result["ablation"]) < 1e-5


def test_a_curriculum_gives_blocks_then_text_as_it_is():
    ids = torch.arange(1, 2000) % 96 + 1  # every character distinct from its neighbours
    recipe = Recipe("t", (Phase(2, 1.0, 5, 5), Phase(2)), T=40, batch=3)
    batches, gen = phased_batches(ids, recipe), torch.Generator().manual_seed(0)
    for step in range(4):
        rows = batches(gen)[:, 1:]
        blocks = (rows[:, :5] == rows[:, 5:10]).all().item()
        assert blocks == (step < 2), step  # stretches of 5, each twice, then plain text


def test_bpe_merges_the_most_frequent_pair_first_and_decodes_what_it_encodes():
    bpe = importlib.import_module("recipes.real_text_induction.bpe")
    text = "self.value = value\nself.valve = 1\n"
    merges = bpe.learn_merges(text, 3)
    # ("v", "a") and ("a", "l") occur 3 times, more than any other pair; ties go to the larger
    assert merges[:2] == [("v", "a"), ("va", "l")]
    tokenizer = bpe.Tokenizer(merges)
    ids = tokenizer.encode(text)
    assert tokenizer.decode(ids) == text and len(ids) < len(text)
    assert tokenizer.lengths()[ids].sum().item() == len(text)
    assert ("=", " ") not in merges  # a merge never crosses two pieces


def test_the_doc_lists_only_runs_with_a_script_and_their_logged_numbers():
    """docs/real_text_recipes.md's runs table (issue 47): every run names a script of
    recipes/real_text_induction, and a run with a log in runs/ shows the log's final scores."""
    import json
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    folder = root / "recipes" / "real_text_induction"
    doc = (root / "docs" / "real_text_recipes.md").read_text()
    table = doc[doc.index("## Runs (issue 48)") :].split("\n\n")[1]
    rows = {}
    for row in table.splitlines()[2:]:
        name, seed = re.match(r"\| `(\w+)`(?: \(.*?\))?( seed 1)? \|", row).groups()
        rows[f"{name}_seed_{1 if seed else 0}"] = row
        assert (folder / f"{name}.py").is_file(), f"{name}: no script"
    for log in sorted((folder / "runs").glob("*.json")):
        final = {k: v[-1] for k, v in json.loads(log.read_text())["log"].items()}
        scores = f"{final['induction_32']:.3f} / {final['induction_96']:.3f}"
        assert scores in rows.get(log.stem, "").replace("*", ""), (log.stem, scores)
