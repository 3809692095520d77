"""The isolated ``ncu`` path: the cell re-run in a child Python under Nsight Compute."""
