"""xnpu's dialects, one per level: `nn` (float graph), and the lower levels as they land."""
