"""PySpark analysis of a run's history, the guarantee model, verdicts and reports."""
