"""Text as it is in BPE tokens (1000 merges, :mod:`.bpe`; about 2.2 characters a token), a
context of 256 tokens (about 560 characters), 6000 steps: a repeated identifier is a few
tokens apart, and one previous token says more than one previous character. Trained on
plain windows only, it is its own plain-window twin."""

from recipes.real_text_induction.common import Phase, Recipe, main

RECIPE = Recipe(name="bpe_plain_256", phases=(Phase(6000),), bpe_merges=1000)

if __name__ == "__main__":
    main(RECIPE)
