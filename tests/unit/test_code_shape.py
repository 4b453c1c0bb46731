"""The house limits, held by a test: no module over 400 lines, no function over 60."""

from __future__ import annotations

import ast
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MODULE_LINES, FUNCTION_LINES = 400, 60


def python_files() -> list[Path]:
    listed = subprocess.run(["git", "ls-files", "*.py"], cwd=ROOT, capture_output=True, text=True,
                            check=True)
    return [ROOT / name for name in listed.stdout.split()]


def test_no_module_runs_past_400_lines_and_no_function_past_60():
    long_modules, long_functions = [], []
    for path in python_files():
        source = path.read_text()
        if len(source.splitlines()) > MODULE_LINES:
            long_modules.append(path.relative_to(ROOT))
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = node.end_lineno - node.lineno + 1
                if lines > FUNCTION_LINES:
                    long_functions.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name} "
                                          f"({lines})")
    assert (long_modules, long_functions) == ([], [])
