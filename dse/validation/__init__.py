"""Calibration fits and their cross-validation (per device family)."""
