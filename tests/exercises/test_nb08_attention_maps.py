"""Notebook 08's exercises: the catalogue's mistakes are named, its alternatives pass."""

from catalogue import catalogue_tests

NB = "08_attention_maps"

test_mistake_is_named, test_alternative_passes = catalogue_tests(NB)
