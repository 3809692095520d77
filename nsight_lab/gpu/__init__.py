"""The GPU software stack seen from Python: NVML devices, per-run telemetry, probes."""
