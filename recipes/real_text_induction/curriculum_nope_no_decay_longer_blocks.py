"""curriculum_nope_no_decay_long_blocks with 1000 more steps of long blocks and 1000 fewer of
text as it is (same 6000 steps): it met item 1's scores at both periods (0.487 / 0.405) but
not its gain at 96 (0.916 nats/char); does a head with more block training copy better?"""

from recipes.real_text_induction.common import Phase, Recipe, main

RECIPE = Recipe(
    name="curriculum_nope_no_decay_longer_blocks",
    phases=(
        Phase(1000, repeat_share=1.0, min_len=8, max_len=32),
        Phase(3000, repeat_share=1.0, min_len=8, max_len=128),
        Phase(2000),
    ),
    rope_layers=(0,),
    weight_decay=0.0,
)

if __name__ == "__main__":
    main(RECIPE)
