"""What every op computes, written once: float semantics now, integer semantics below it."""
