"""`python -m kchaos` and the `kchaos` script. This module stays light: every workload client
process imports the program's main module again (multiprocessing's fork server), and the CLI imports
Spark, pandas and matplotlib."""

from __future__ import annotations


def main() -> None:
    """The `kchaos` command."""
    # here, not above: a client process importing this module must not load the CLI
    from kchaos.cli import entry

    entry()


if __name__ == "__main__":
    main()
