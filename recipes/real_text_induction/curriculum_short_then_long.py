"""Curriculum, context 256: 1000 steps of windows in blocks s₁ s₁ s₂ s₂ … with stretches of
8–32 characters (the shipped recipe's blocks, in which a head formed by step 750 at
context 128), 1000 steps with stretches of 8–128 (copying from up to half the context
back), then 4000 steps of text as it is; one cosine schedule over the 6000 steps."""

from recipes.real_text_induction.common import Phase, Recipe, main

RECIPE = Recipe(
    name="curriculum_short_then_long",
    phases=(
        Phase(1000, repeat_share=1.0, min_len=8, max_len=32),
        Phase(1000, repeat_share=1.0, min_len=8, max_len=128),
        Phase(4000),
    ),
)

if __name__ == "__main__":
    main(RECIPE)
