"""Notebook 06's exercise: the catalogue's mistakes are named, its alternatives pass."""

from catalogue import catalogue_tests

NB = "06_attention_assembled"

test_mistake_is_named, test_alternative_passes = catalogue_tests(NB)
