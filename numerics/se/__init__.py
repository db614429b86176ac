"""State evolution: overlaps, the channel moments, the SE map, the generic fixed-point solver and the solves."""
