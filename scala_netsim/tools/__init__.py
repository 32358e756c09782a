"""The tools layer: sweeps (tools.sweep: cells, their planning, the local and Ray executors)
and the model-inversion attack (tools.attack)."""
