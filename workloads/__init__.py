"""Producers, consumers, the final drain reader and the metadata sampler."""
