"""curriculum_nope_no_decay with 1000 more steps of long blocks and 1000 fewer of text as it
is (same 6000 steps). On text as it is its head kept softening for all 4000 steps (0.732 at
the switch, 0.510 after 1000 steps, 0.476 at the end): does a head trained longer on blocks
soften less, and what does the model give up on held-out text for it?"""

from recipes.real_text_induction.common import Recipe, main, short_then_long

RECIPE = Recipe(
    name="curriculum_nope_no_decay_long_blocks",
    phases=short_then_long(2000, 3000),
    rope_layers=(0,),
    weight_decay=0.0,
)

if __name__ == "__main__":
    main(RECIPE)
