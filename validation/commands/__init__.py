"""The validation layer's commands, one module each (their shape: :mod:`attnphase.cli`), and their shared options."""
