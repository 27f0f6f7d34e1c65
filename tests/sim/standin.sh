#!/bin/sh
# A simulated hardware tool on a bench node (tests/sim): the bench mounts this
# file as /usr/local/bin/<tool>; it replays the tool's real captured output.
exec python3 /usr/share/gpuops-sim/replay.py "$(basename "$0")" "$@"
