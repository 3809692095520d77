"""The ``pm`` backend: CUPTI PM sampling, hardware counters per region in this process.

One module per job: :mod:`.attribution` (samples -> regions, pure), :mod:`.series`
(the compact counter timelines stored with each run, pure), :mod:`.metrics` (which
metrics, their kinds and units, the per-device check of what PM sampling takes),
:mod:`.errors` (CUPTI's failures as one-line messages), :mod:`.sampler` (the thin
wrapper of ``cupti.pm_sampling``) and :mod:`.collector` (the backend itself, on top of
the cupti backend's activity records). Importing this package imports no CUPTI and no
PyTorch.
"""
