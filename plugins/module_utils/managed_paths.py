# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The paths a stage manages, judged in one pass: what each entry wants, what the node has, what differs.

An entry is {path, state, ...}: state directory (mode), link (src), file (content, mode) or absent. The module
managed_paths reads every entry's path once (lstat, readlink, the file's bytes), asks differences() what differs and
acts only there: one round trip for a stage's files, directories and links instead of one task, and one module call
per loop item, each. Pure functions here, so the judgment is unit-tested without a node.
"""

from __future__ import annotations

import re

STATES = ("directory", "link", "file", "absent")
MODE = re.compile(r"^0?[0-7]{3}$")
# What a managed file may hold: configuration and scripts, not payloads.
MAX_CONTENT = 1 << 20


def entry_problems(entries):
    """Why the entries cannot be applied as given: one sentence per problem, [] when they can."""
    if not isinstance(entries, list):
        return [f"paths is not a list of entries (got {type(entries).__name__})"]
    problems = []
    seen = set()
    for index, entry in enumerate(entries):
        where = f"paths[{index}]"
        if not isinstance(entry, dict):
            problems.append(f"{where} is not a mapping (got {type(entry).__name__})")
            continue
        path = entry.get("path")
        state = entry.get("state")
        if not isinstance(path, str) or not path.startswith("/") or "\n" in path or "\0" in path:
            problems.append(f"{where} path {path!r} is not an absolute path on one line")
        elif path.rstrip("/") in seen:
            problems.append(f"{where} path {path} is named twice")
        else:
            seen.add(path.rstrip("/"))
        if state not in STATES:
            problems.append("{} state {!r} is not one of {}".format(where, state, ", ".join(STATES)))
        if state == "link" and not (isinstance(entry.get("src"), str) and entry["src"]):
            problems.append(f"{where} is a link without src")
        if state == "file":
            content = entry.get("content")
            if not isinstance(content, str):
                problems.append(f"{where} is a file without content")
            elif len(content.encode("utf-8", "surrogateescape")) > MAX_CONTENT:
                problems.append(f"{where} content is over {MAX_CONTENT} bytes")
        mode = entry.get("mode")
        if mode is not None and not (isinstance(mode, str) and MODE.match(mode)):
            problems.append(f"{where} mode {mode!r} is not an octal mode such as 0644")
    return problems


def differences(entry, seen, uid=0, gid=0):
    """What differs between an entry and what the node has at its path: a list of short phrases, [] when nothing.

    seen: {type: absent|directory|link|file|other, target (a link's), mode (int, permission bits), uid, gid,
    content (bytes, a file's)}. Links are judged by their target alone (a link's mode and owner mean nothing to the
    kernel); a directory and a file also by mode and owner.
    """
    state = entry["state"]
    kind = seen["type"]
    if state == "absent":
        return [] if kind == "absent" else [f"{kind} present"]
    if kind != state:
        return ["absent"] if kind == "absent" else [f"{kind} in place of a {state}"]
    found = []
    if state == "link":
        if seen.get("target") != entry["src"]:
            found.append("points to {}, not {}".format(seen.get("target"), entry["src"]))
        return found
    if state == "file" and seen.get("content") != entry["content"].encode("utf-8", "surrogateescape"):
        found.append("content differs")
    mode = entry.get("mode")
    if mode is not None and seen.get("mode") != int(mode, 8):
        found.append("mode {:04o}, not {:04o}".format(seen.get("mode"), int(mode, 8)))
    if (seen.get("uid"), seen.get("gid")) != (uid, gid):
        found.append("owner {}:{}, not {}:{}".format(seen.get("uid"), seen.get("gid"), uid, gid))
    return found
