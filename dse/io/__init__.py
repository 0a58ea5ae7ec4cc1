"""What the tool reads and writes: requests resolved, design files, outputs, writes."""
