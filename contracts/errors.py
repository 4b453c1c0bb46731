"""Errors a user can act on: each carries one message that names the fix."""


class ChaosError(Exception):
    """An error the CLI prints as one line (no traceback) and exits with `exit_code`."""

    exit_code = 1


class UsageError(ChaosError):
    """Bad input from the user: a scenario file, a flag, a version."""

    exit_code = 2


class EngineError(ChaosError):
    """No usable Docker engine."""

    exit_code = 3


class ImageError(ChaosError):
    """An image could not be built or a Kafka version could not be resolved."""

    exit_code = 3


class ClusterError(ChaosError):
    """A broker did not come up or an operation on it did not take effect."""

    exit_code = 4
