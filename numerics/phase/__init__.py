"""Phase structure: branches over alpha, their ends, the phase boundaries and their refinement, the census of fixed points."""
