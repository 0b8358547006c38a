"""curriculum_nope_layer_1 without weight decay. On text as it is every curriculum's head
softened within 250 steps; a sharp pattern needs large query and key weights, which weight
decay (0.1) shrinks wherever the gradient for sharpness is weak: here nothing shrinks them."""

from recipes.real_text_induction.common import Recipe, main, short_then_long

RECIPE = Recipe(
    name="curriculum_nope_no_decay",
    phases=short_then_long(),
    rope_layers=(0,),
    weight_decay=0.0,
)

if __name__ == "__main__":
    main(RECIPE)
