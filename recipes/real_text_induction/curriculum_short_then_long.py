"""Curriculum, context 256: 1000 steps of windows in blocks s₁ s₁ s₂ s₂ … with stretches of
8–32 characters (the shipped recipe's blocks, in which a head formed by step 750 at
context 128), 1000 steps with stretches of 8–128 (copying from up to half the context
back), then 4000 steps of text as it is; one cosine schedule over the 6000 steps."""

from recipes.real_text_induction.common import Recipe, main, short_then_long

RECIPE = Recipe(
    name="curriculum_short_then_long",
    phases=short_then_long(),
)

if __name__ == "__main__":
    main(RECIPE)
