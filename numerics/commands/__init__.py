"""The numerics' commands (solve, sweep, phase-diagram, census, scan): parse, check, run the library, print and write."""
