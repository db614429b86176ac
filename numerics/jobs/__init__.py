"""Jobs and their outputs: the numerics' tasks for the execution layer, the phase-diagram job, its tables, figures and datasets."""
