"""Calibration fits of the device models to published measurements, and their cross-validation
(per serving family, GPU generation and FPGA design)."""
