"""Where Kafka clients' own log lines go: nowhere a user reads them; what they report is in the
history."""

from __future__ import annotations

import logging

QUIET = logging.getLogger("kchaos.librdkafka")
QUIET.addHandler(logging.NullHandler())
QUIET.propagate = False
