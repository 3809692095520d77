"""The measurement contract: what every layer above reads and writes.

Records (:mod:`nsight_lab.contract.records`) are what a backend yields and the store,
the views and the CLI read. Nothing here imports anything of nsight-lab above it.
"""
