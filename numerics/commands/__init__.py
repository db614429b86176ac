"""The numerics' commands, one module each (solve, sweep, phase_diagram, census, scan; their shape:
:mod:`attnphase.cli`), and what they share: the job set-up at every rank (:mod:`.common`) and the record of one
fixed point (:mod:`.point_record`)."""
