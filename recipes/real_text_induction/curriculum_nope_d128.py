"""curriculum_nope_layer_1 at d_model 128 (head size 32). Its head copied well (gain 1.01 at
period 32) but looked soft (0.281): a copy keyed on one previous character is often wrong in
real text. Wider heads let a layer-0 head write more of what came before each character, so a
layer-1 match can be surer, and worth a sharper look."""

from recipes.real_text_induction.common import Recipe, main, short_then_long

RECIPE = Recipe(
    name="curriculum_nope_d128",
    phases=short_then_long(),
    rope_layers=(0,),
    model=dict(d_model=128, n_layers=2, n_heads=4),
)

if __name__ == "__main__":
    main(RECIPE)
