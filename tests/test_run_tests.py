"""What the test runner says when it passes: the database legs that ran, and only those."""

from __future__ import annotations

from scripts.run_tests import summary


def test_the_summary_names_only_the_legs_that_ran() -> None:
    assert summary(["sqlite"]) == "All checks passed, and the test suite on sqlite."
    assert "postgres" not in summary(["sqlite"]) and "both" not in summary(["sqlite"])
    assert summary(["sqlite", "postgres"]).endswith("on sqlite and postgres.")
