"""Curriculum, context 256: 1500 steps of windows in blocks s₁ s₁ s₂ s₂ … with stretches of
8–128 characters (periods up to half the context, so the head learns to copy from 96 back),
then 4500 steps of text as it is, one cosine schedule over the 6000 steps."""

from recipes.real_text_induction.common import Phase, Recipe, main

RECIPE = Recipe(
    name="curriculum_256",
    phases=(Phase(1500, repeat_share=1.0, min_len=8, max_len=128), Phase(4500)),
)

if __name__ == "__main__":
    main(RECIPE)
