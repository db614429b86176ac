"""The validation layer's commands: ``simulate``, ``validate``, ``check`` and ``histogram`` (their shape:
:mod:`attnphase.cli`), and the options of a finite-d run they share (:mod:`.finite_d_options`)."""
