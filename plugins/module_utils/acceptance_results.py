# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where the acceptance stage's results go on the controller, and how they are written.

One directory per run, <results dir>/<run id>/:

    run.json                        the run: when, by whom, with what, each node's verdict (schema acceptance-run)
    nodes/<node>.json               one node's results: every check, the inventory, the evidence list (acceptance-node)
    evidence/<node>/<file>          the raw evidence the node's checks judged (acceptance_evidence.FILES)
    evidence/<node>/SHA256SUMS      sha256sum's format, to check the evidence was not changed since

Directories are made 0750 and files 0640, at creation: evidence holds serial numbers and the kernel log. A rerun on a
subset of nodes with the same run id replaces those nodes' files and adds them to run.json; the other nodes' stay.
Controller-side only (the action plugin acceptance_results); the JSON schemas of both documents are in
schemas/ at the collection's root.
"""

from __future__ import annotations

import getpass
import hashlib
import json
import os
import re
import tempfile
import time

from ansible_collections.gpuops.bringup.plugins.module_utils import acceptance, acceptance_evidence

# The run document's schema name (schemas/acceptance-run.schema.json): what tells a run.json of this stage.
RUN_SCHEMA = "gpuops.bringup/acceptance-run"
DIR_MODE = 0o750
FILE_MODE = 0o640
# A results directory inside an installed collection would be lost with its next install, and is no place for a
# site's records (ansible-galaxy installs under .../ansible_collections/<namespace>/<name>/).
_INSTALLED = re.compile(r"(^|/)ansible_collections/[^/]+/[^/]+(/|$)")


def default_results_dir(inventory_dir, cwd):
    """reports/ beside the inventory's directory (its parent's reports/), else the current directory's reports/."""
    if inventory_dir:
        return os.path.normpath(os.path.join(inventory_dir, os.pardir, "reports"))
    return os.path.normpath(os.path.join(cwd, "reports"))


def results_dir_problem(path, variable="acceptance_results_dir"):
    """Why results cannot be written to path (a sentence naming the variable, the value and the fix), or None."""
    if not isinstance(path, str) or not os.path.isabs(path):
        return f"{variable} is {path!r}: not an absolute path. Fix: give an absolute directory on the controller."
    real = os.path.realpath(path)
    if _INSTALLED.search(real.replace(os.sep, "/")):
        return (
            f"{variable} is {path!r}, inside an installed collection ({real}): results there are lost with the "
            "collection's next install. Fix: give a directory of the site's, e.g. /srv/gpuops/reports."
        )
    existing = real
    while not os.path.exists(existing):
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing):
        return f"{variable} is {path!r}, but {existing} is a file. Fix: give a directory."
    if not os.access(existing, os.W_OK | os.X_OK):
        return (f"{variable} is {path!r}, but {existing} is not writable for user {getpass.getuser()}. Fix: give a "
                "directory this user may write, or run as one who may.")  # fmt: skip
    return None


def run_id_problem(run_id):
    if run_id and not acceptance.RUN_ID.fullmatch(run_id):
        return (f"acceptance_run_id is {run_id!r}: a run id is 1 to 64 letters, digits, '.', '_' or '-', starting "
                "with a letter or digit. Fix: give an existing run's directory name to add to it, or \"\" for a new "
                "run.")  # fmt: skip
    return None


def new_run_id(results_dir, now=None):
    """A new run's id: the UTC time to the second (20261205T091500Z), with -2, -3... when that directory exists."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now))
    run_id, n = stamp, 1
    while os.path.exists(os.path.join(results_dir, run_id)):
        n += 1
        run_id = f"{stamp}-{n}"
    return run_id


def node_name_problem(node):
    if not acceptance.FILE_NAME.fullmatch(node) or node in (".", ".."):
        return (f"inventory host {node!r} cannot name a results file (letters, digits, '.', '_' and '-' only). "
                "Fix: rename the host in the inventory (ansible_host keeps its address).")  # fmt: skip
    return None


def _mkdir(path):
    """Make path and every missing parent with DIR_MODE (os.makedirs gives the parents the umask's mode)."""
    missing = []
    while path and not os.path.isdir(path):
        missing.append(path)
        path = os.path.dirname(path)
    for directory in reversed(missing):
        try:
            os.mkdir(directory, DIR_MODE)
        except FileExistsError:
            continue
        os.chmod(directory, DIR_MODE)


def write_file(path, data):
    """Write bytes or text to path atomically, mode FILE_MODE from creation; returns (sha256, size)."""
    data = data.encode("utf-8", "replace") if isinstance(data, str) else data
    directory = os.path.dirname(path)
    _mkdir(directory)
    fd, temp = tempfile.mkstemp(dir=directory, prefix=".tmp-")
    try:
        os.fchmod(fd, FILE_MODE)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(temp, path)
    except BaseException:
        if os.path.exists(temp):
            os.unlink(temp)
        raise
    return hashlib.sha256(data).hexdigest(), len(data)


def _json_bytes(document):
    return (json.dumps(document, indent=2, sort_keys=False, ensure_ascii=False) + "\n").encode("utf-8")


def evidence_entries(evidence):
    """(files to write {name: bytes}, the node document's evidence list without hashes) from acceptance_read's."""
    files, entries = {}, []
    for name in acceptance_evidence.FILES:
        item = (evidence or {}).get(name)
        if not isinstance(item, dict):
            continue
        entry = {"name": name, "command": item.get("cmd") or item.get("path"), "rc": item.get("rc"),
                 "missing": bool(item.get("missing")), "skipped": item.get("skipped"),
                 "truncated": bool(item.get("truncated")), "source": item.get("source")}  # fmt: skip
        if isinstance(item.get("stdout"), str):
            files[name] = item["stdout"].encode("utf-8", "replace")
            entry["file"] = name
        if item.get("stderr"):
            files[name + ".stderr"] = str(item["stderr"]).encode("utf-8", "replace")
            entry["stderr_file"] = name + ".stderr"
        entries.append(entry)
    return files, entries


def write_node(run_dir, document, read):
    """Write a node's evidence (read: acceptance_read's result), its SHA256SUMS and its results document; returns the
    document as written."""
    node = document["node"]
    files, entries = evidence_entries((read or {}).get("evidence"))
    evidence_dir = os.path.join(run_dir, "evidence", node)
    sums = {}
    for name, data in sorted(files.items()):
        sums[name], _size = write_file(os.path.join(evidence_dir, name), data)
    for entry in entries:
        for key in ("file", "stderr_file"):
            if key in entry:
                entry[key.replace("file", "sha256")] = sums[entry[key]]
                entry[key] = f"evidence/{node}/{entry[key]}"
    manifest = "".join(f"{sums[name]}  {name}\n" for name in sorted(sums))
    write_file(os.path.join(evidence_dir, "SHA256SUMS"), manifest)
    document = {**document, "evidence": entries}
    write_file(os.path.join(run_dir, "nodes", f"{node}.json"), _json_bytes(document))
    return document


def node_entry(document):
    """A node's line in run.json."""
    entry = {key: document.get(key) for key in ("node", "rack", "profile", "verdict", "accepted", "counts", "summary")}
    entry.update(
        simulated=bool(document.get("simulated")),
        results=f"nodes/{document['node']}.json",
        finished_at=document.get("finished_at"),
    )
    return entry


def unreachable_entry(node, rack, profile, why):
    return {
        "node": node,
        "rack": rack,
        "profile": profile,
        "verdict": "incomplete",
        "accepted": False,
        "counts": dict.fromkeys(acceptance.STATUSES, 0),
        "summary": f"{node} ({profile}): INCOMPLETE - {why}",
        "simulated": False,
        "results": None,
        "finished_at": None,
        "error": why,
    }


def write_run(run_dir, run, entries):
    """Write run.json: run's fields, and every node's entry - those of this attempt replacing earlier ones."""
    path = os.path.join(run_dir, "run.json")
    previous = {}
    try:
        with open(path, encoding="utf-8") as handle:
            previous = json.load(handle)
    except (OSError, ValueError):
        previous = {}
    nodes = {n["node"]: n for n in previous.get("nodes", []) if isinstance(n, dict) and n.get("node")}
    nodes.update({e["node"]: e for e in entries})
    attempts = [a for a in previous.get("attempts", []) if isinstance(a, dict)]
    attempts.append({"started_at": run["started_at"], "finished_at": run["finished_at"],
                     "operator": run["operator"], "nodes": sorted(e["node"] for e in entries)})  # fmt: skip
    ordered = [nodes[n] for n in sorted(nodes)]
    document = {
        "schema": RUN_SCHEMA,
        "schema_version": acceptance.SCHEMA_VERSION,
        "run_id": run["run_id"],
        "started_at": previous.get("started_at") or run["started_at"],
        "finished_at": run["finished_at"],
        "operator": run["operator"],
        # The latest attempt's site, else the run's first.
        "site": run.get("site") or previous.get("site"),
        "collection": run["collection"],
        "tools": run["tools"],
        "simulated": any(n.get("simulated") for n in ordered),
        "totals": {
            **{v: sum(1 for n in ordered if n["verdict"] == v) for v in acceptance.VERDICTS},
            "nodes": len(ordered),
        },
        "racks": _racks(ordered),
        "nodes": ordered,
        "attempts": attempts,
    }
    write_file(path, _json_bytes(document))
    return document


def rack_of(group_names):
    """A node's rack: its first rack_* group (the inventory's convention), or None."""
    racks = sorted(str(g) for g in group_names or () if str(g).startswith("rack_"))
    return racks[0] if racks else None


def _racks(entries):
    racks = {}
    for entry in entries:
        rack = racks.setdefault(entry.get("rack") or "none", dict.fromkeys(acceptance.VERDICTS, 0))
        rack[entry["verdict"]] += 1
    return dict(sorted(racks.items()))
