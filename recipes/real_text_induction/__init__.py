"""Candidate recipes for a layer-1 induction head grown from real text (issue 48).

Each script here trains one recipe and logs, every few hundred steps, the numbers of
:func:`evaluate.items` (the issue's items 1–3); ``docs/real_text_recipes.md`` records each
run's command and numbers. Run one from the repository root, niced, on one thread:
``nice -n 19 python -m recipes.real_text_induction.<name> --seed 0``.
"""
