"""The theory's command, ``attnphase derive`` (its shape: :mod:`attnphase.cli`)."""
