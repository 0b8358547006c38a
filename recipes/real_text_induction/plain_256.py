"""Text as it is, context 256, 6000 steps: the plain-window twin of the 6000-step recipes
(same model, batches, learning rate and schedule), and a candidate of its own."""

from recipes.real_text_induction.common import Phase, Recipe, main

RECIPE = Recipe(name="plain_256", phases=(Phase(6000),))

if __name__ == "__main__":
    main(RECIPE)
