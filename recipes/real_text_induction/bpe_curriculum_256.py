"""curriculum_short_then_long in BPE tokens (1000 merges, :mod:`.bpe`), a context of 256
tokens: 1000 steps of blocks of 8–32 tokens, 1000 of 8–128, then 4000 steps of text as it
is. In characters the curriculum's head survived the plain steps but spread its attention
over every earlier occurrence of the current character; a token recurs less often."""

from recipes.real_text_induction.common import Phase, Recipe, main

RECIPE = Recipe(
    name="bpe_curriculum_256",
    phases=(
        Phase(1000, repeat_share=1.0, min_len=8, max_len=32),
        Phase(1000, repeat_share=1.0, min_len=8, max_len=128),
        Phase(4000),
    ),
    bpe_merges=1000,
)

if __name__ == "__main__":
    main(RECIPE)
