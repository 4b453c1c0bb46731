"""Benchmarks behind BENCHMARKS.md (`make bench`), each beside the baseline it names, measured in
the same run."""
