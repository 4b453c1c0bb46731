"""The front doors: the run loop and check pipeline, the `kchaos` CLI and the pytest plugin."""
