"""plain_256 without weight decay and without RoPE in layer 1: the plain-window twin of
curriculum_nope_no_decay (item 3 compares a recipe with the same model, steps and batches on
text as it is)."""

from recipes.real_text_induction.common import Phase, Recipe, main

RECIPE = Recipe(name="plain_no_decay", phases=(Phase(6000),), rope_layers=(0,), weight_decay=0.0)

if __name__ == "__main__":
    main(RECIPE)
