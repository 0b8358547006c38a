"""curriculum_short_then_long in BPE tokens (1000 merges, :mod:`.bpe`), a context of 256
tokens: 1000 steps of blocks of 8–32 tokens, 1000 of 8–128, then 4000 steps of text as it
is. In characters the curriculum's head survived the plain steps but spread its attention
over every earlier occurrence of the current character; a token recurs less often."""

from recipes.real_text_induction.common import Recipe, main, short_then_long

RECIPE = Recipe(
    name="bpe_curriculum_256",
    phases=short_then_long(),
    bpe_merges=1000,
)

if __name__ == "__main__":
    main(RECIPE)
