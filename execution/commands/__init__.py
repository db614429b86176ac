"""The execution layer's command, ``attnphase show`` (its shape: :mod:`attnphase.cli`)."""
