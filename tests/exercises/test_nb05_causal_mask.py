"""Notebook 05's exercises: the catalogue's mistakes are named, its alternatives pass."""

from catalogue import catalogue_tests

NB = "05_causal_mask"

test_mistake_is_named, test_alternative_passes = catalogue_tests(NB)
