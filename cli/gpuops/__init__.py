"""gpuops: the operator's command for gpuops.bringup (ansible-runner underneath)."""

__version__ = "0.1.0"
