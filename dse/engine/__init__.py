"""The evaluators: the closed form (expected values, vectorised) and the trace-driven simulator
(its referee), with the Report both produce."""
