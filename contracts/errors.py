"""Errors a user can act on: each carries one message that names the fix."""


class ChaosError(Exception):
    """An error the CLI prints as one line (no traceback) and exits with `exit_code`."""

    exit_code = 1


class UsageError(ChaosError):
    """Bad input from the user: a scenario file, a flag, a version."""

    exit_code = 2


class EngineError(ChaosError):
    """No usable Docker engine (bad input to the machine, as a bad scenario is to the file: nothing
    started)."""

    exit_code = 2


class ImageError(ChaosError):
    """An image could not be built or a Kafka version could not be resolved."""

    exit_code = 3


class ClusterError(ChaosError):
    """A broker did not come up or an operation on it did not take effect."""

    exit_code = 4


def first_line(exc: BaseException) -> str:
    """An error's first line (a tool's reason, before the log tail some carry), else its type."""
    return (str(exc).splitlines() or [type(exc).__name__])[0]


UNKNOWN_EXIT = 5  # a run's verdict was unknown (and none failed); `--allow-unknown` makes it 0
