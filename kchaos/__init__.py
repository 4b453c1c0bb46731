"""The front doors: the `kchaos` CLI and its commands, the catalog of scenarios, matrices and
shrinking, the console, the history builder and the pytest plugin."""
