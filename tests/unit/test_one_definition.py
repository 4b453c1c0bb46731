"""Each anomaly is defined once, in contracts.anomalies, and each fault kind's traits once, in
contracts.faultkinds: the checkers, rules, headline, DESIGN.md's table, fault ops and validation
take them from there."""

from __future__ import annotations

import ast
from pathlib import Path

from contracts.anomalies import ANOMALIES, KINDS
from contracts.faultkinds import FAULT_KINDS
from faults.registry import OPS
from reports.checkers import CHECKERS
from reports.guarantees import RULES

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("contracts", "harness", "faults", "workloads", "reports", "runloop", "kchaos", "bench")


def test_design_md_defines_each_anomaly_as_contracts_anomalies_does():
    design = (ROOT / "docs" / "DESIGN.md").read_text()
    table = design.split("| anomaly | definition |\n|---|---|\n")[1].split("\n\n")[0].splitlines()
    assert table == [f"| {k.name} | {k.definition} |" for k in KINDS]


def test_every_anomaly_has_one_checker_and_one_rule_in_its_order():
    assert tuple(CHECKERS) == ANOMALIES and set(RULES) == set(ANOMALIES)


def sources():
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            yield path.relative_to(ROOT), ast.parse(path.read_text())


def strings(node: ast.AST) -> set[str]:
    """The string constants a dict's keys, a list, a tuple or a set holds, or a comparison's
    operands."""
    items = (node.keys if isinstance(node, ast.Dict) else getattr(node, "elts", None)
             if isinstance(node, ast.List | ast.Tuple | ast.Set) else [node.left, *node.comparators]
             if isinstance(node, ast.Compare) else None)
    return {i.value for i in items or [] if isinstance(i, ast.Constant)
            and isinstance(i.value, str)}


def test_no_other_module_lists_the_anomalies():
    """A dict, list, tuple or set naming three or more anomalies outside contracts.anomalies is a
    second list."""
    listed = [f"{path}:{node.lineno}" for path, tree in sources() for node in ast.walk(tree)
              if not isinstance(node, ast.Compare) and len(strings(node) & set(ANOMALIES)) >= 3]
    assert listed == []


def names_a_fault(node: ast.AST) -> bool:
    """`f.fault == "x"` or `fault in (...)`, or a collection of fault kinds' names beside one
    hyphenated (so not the process actions kill, pause and terminate): a trait written by name."""
    named = strings(node) & set(FAULT_KINDS)
    if isinstance(node, ast.Compare):
        sides = [node.left, *node.comparators]
        return bool(named) and any(getattr(n, "attr", getattr(n, "id", "")) == "fault"
                                   for n in sides)
    return len(named) >= 2 and any("-" in n for n in named)


def test_no_module_but_the_traits_table_and_the_ops_names_fault_kinds():
    own = {Path("contracts/faultkinds.py"), Path("faults/registry.py")}
    named = [f"{path}:{node.lineno}" for path,
             tree in sources() if path not in own for node in ast.walk(tree)
             if names_a_fault(node)]
    assert named == []


def test_every_fault_kind_has_one_op():
    assert set(OPS) == set(FAULT_KINDS)


def test_only_contracts_signals_sets_a_signal_handler():
    setters = {str(path) for path, tree in sources() for node in ast.walk(tree)
               if isinstance(node, ast.Attribute) and node.attr == "signal"
               and isinstance(node.value, ast.Name) and node.value.id == "signal"}
    assert setters == {"contracts/signals.py"}
