"""What every layer may use: roles, caps, array aliases, special functions, lazy names."""
