"""Calibration fits of the device models to published measurements, and their cross-validation."""
