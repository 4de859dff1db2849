"""Helpers for tests that run real components (pywb) rather than mocks of them."""
