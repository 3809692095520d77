"""The backends: one module (or package) per way of measuring a cell.

Each is a collector (:class:`~nsight_lab.contract.collector.Collector`) named by a
line of the registry (:mod:`nsight_lab.contract.registry`), which imports it only when
a profile asks for it. Importing this package imports no backend module (they may
import PyTorch or CUPTI). :mod:`nsight_lab.backends.probe` asks every backend, once
per profile, whether it can run here (:class:`~nsight_lab.contract.probe.ProbeResult`).
"""
