"""Cluster lifecycle, images, history and the run loop of kafka-chaos."""

import os

# The Ryuk reaper image cannot be pulled here; kafka-chaos labels and removes its own containers.
os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")
