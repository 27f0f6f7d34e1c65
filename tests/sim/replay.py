"""Replays a real captured tool output on a simulated-hardware bench node (see tests/sim/README.md).

Runs inside the node container as `replay.py TOOL ARGS...`, for the stand-in
the bench mounted as /usr/local/bin/TOOL. The node's profile.json maps each
argument string the collection's modules use to a capture and its exit
status; any other invocation fails the way an unsupported option would.
"""

import json
import sys

STAGE = "/usr/share/gpuops-sim"


def main(argv):
    tool, args = argv[0], " ".join(argv[1:])
    with open(f"{STAGE}/profile.json", encoding="utf-8") as handle:
        commands = json.load(handle)["commands"].get(tool, {})
    entry = commands.get(args)
    if entry is None:
        known = ", ".join(repr(a) for a in sorted(commands)) or "none"
        sys.stderr.write(f"{tool} (simulated): no capture for arguments {args!r}; captured: {known}\n")
        return 2
    with open(f"{STAGE}/{entry['file']}", "rb") as handle:
        sys.stdout.buffer.write(handle.read())
    return entry["rc"]


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
