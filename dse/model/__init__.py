"""What the model is: the Design, its workflow and verifier, schedules, mean values."""
