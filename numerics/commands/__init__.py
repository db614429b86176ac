"""The numerics' commands, one module each (their shape: :mod:`attnphase.cli`), and the set-up they share."""
