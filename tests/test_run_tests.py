"""What the test runner says when it passes (the database legs that ran, and only those), and
which leg runs the pure packages' tests."""

from __future__ import annotations

from scripts.run_tests import PURE_TESTS, pure_tests_ignored, summary


def test_the_summary_names_only_the_legs_that_ran() -> None:
    assert summary(["sqlite"]) == "All checks passed, and the test suite on sqlite."
    assert "postgres" not in summary(["sqlite"]) and "both" not in summary(["sqlite"])
    assert summary(["sqlite", "postgres"]).endswith("on sqlite and postgres.")


def test_every_pure_test_folder_runs_in_exactly_one_leg() -> None:
    for legs in (["sqlite", "postgres"], ["postgres", "sqlite"], ["sqlite"], ["postgres"]):
        for path in PURE_TESTS:
            skipped = f"--ignore={path}"
            running = [leg for leg in legs if skipped not in pure_tests_ignored(leg, legs)]
            assert len(running) == 1, (legs, path, running)


def test_a_pure_folder_whose_home_leg_does_not_run_goes_to_the_first_leg() -> None:
    assert pure_tests_ignored("sqlite", ["sqlite"]) == []
    assert pure_tests_ignored("postgres", ["postgres"]) == []
    both = ["sqlite", "postgres"]
    assert pure_tests_ignored("sqlite", both) == ["--ignore=tests/hacs"]
    assert pure_tests_ignored("postgres", both) == ["--ignore=tests/hacs_demo"]
