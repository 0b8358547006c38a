"""curriculum_short_then_long with no positions in layer 1 (RoPE in layer 0 only). On text as
it is, that curriculum's head kept copying but came to prefer near matches (0.255 at period 32,
0.178 at 96): with RoPE out of layer 1 its scores can depend on content only (the previous
character, written by a layer-0 head), so no distance is preferred over another."""

from recipes.real_text_induction.common import Recipe, main, short_then_long

RECIPE = Recipe(
    name="curriculum_nope_layer_1",
    phases=short_then_long(),
    rope_layers=(0,),
)

if __name__ == "__main__":
    main(RECIPE)
