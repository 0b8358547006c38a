"""curriculum_nope_no_decay at d_model 128 (head size 32). Without weight decay the head
stayed sharp on text as it is (0.476 at period 32) but weaker at 96 (0.376), where a one-
character key has more earlier matches to confuse it; at d_model 128 (with decay) the held-out
loss fell by 0.17 and the layer-0 heads can write more of what came before."""

from recipes.real_text_induction.common import Recipe, main, short_then_long

RECIPE = Recipe(
    name="curriculum_nope_d128_no_decay",
    phases=short_then_long(),
    rope_layers=(0,),
    weight_decay=0.0,
    model=dict(d_model=128, n_layers=2, n_heads=4),
)

if __name__ == "__main__":
    main(RECIPE)
