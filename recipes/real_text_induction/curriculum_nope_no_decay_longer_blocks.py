"""curriculum_nope_no_decay_long_blocks with 1000 more steps of long blocks and 1000 fewer of
text as it is (same 6000 steps): it met item 1's scores at both periods (0.487 / 0.405) but
not its gain at 96 (0.916 nats/char); does a head with more block training copy better?"""

from recipes.real_text_induction.common import Recipe, main, short_then_long

RECIPE = Recipe(
    name="curriculum_nope_no_decay_longer_blocks",
    phases=short_then_long(3000, 2000),
    rope_layers=(0,),
    weight_decay=0.0,
)

if __name__ == "__main__":
    main(RECIPE)
