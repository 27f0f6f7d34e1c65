# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Whether this node's hardware is simulated, for labelling facts a person will read.

The test bench (tests/sim) makes a container look like a GPU server by
installing stand-ins that replay real captured outputs, and writes MARKER
naming the profile. Facts modules report it as `simulated` so reports say so;
no module or role behaves differently because of it.
"""

from __future__ import annotations

import json

from ansible_collections.gpuops.bringup.plugins.module_utils import parsing

MARKER = "/etc/gpuops/simulated-hardware.json"


def simulated(read=None):
    """The marker's content ({"profile": ..., "captures": [...]}) or False on real hardware.

    read is a function path -> text or None (default: read the file), so
    callers with a rooted reader can pass theirs.
    """
    if read is None:

        def read(path):
            try:
                with open(path, encoding="utf-8", errors="replace") as handle:
                    return handle.read()
            except OSError:
                return None

    text = read(MARKER)
    if text is None:
        return False
    try:
        data = json.loads(parsing.clean(text))
    except (ValueError, RecursionError):
        return {"profile": "unknown", "captures": []}
    return data if isinstance(data, dict) else {"profile": "unknown", "captures": []}
