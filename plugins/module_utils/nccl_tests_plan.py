# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the nccl_tests role decides, as pure functions: its preflight (every problem of a node at once: its inputs,
account, release, package sources and GPUs), the NCCL environment a node's fabric calls for, the run's verdict (the
nccl_test module's, plus GPUDirect RDMA) and the JSON reports.

The benchmark output itself is parsed by module_utils/nccl_tests (through the nccl_test module), never here.
"""

from __future__ import annotations

import re

from ansible_collections.gpuops.bringup.plugins.module_utils import nccl_tests

CHECKSUM = re.compile(r"^sha256:[0-9a-f]{64}\Z")
COMMIT = re.compile(r"^[0-9a-f]{40}\Z")
CUDA_BUILD = re.compile(r"\+cuda\d+\.\d+$")
GDR_MODES = ("auto", "required", "ignore")
BENCHMARKS = ("all_reduce_perf", "all_gather_perf", "reduce_scatter_perf", "alltoall_perf")
FABRIC_STATE = "/var/lib/gpuops/rdma_fabric/state.json"


def _gate_problems(gates, published, profiles):
    problems = []
    known = sorted(set(published) | set(profiles))
    for profile, value in sorted((gates or {}).items()):
        if profile not in known:
            problems.append(
                f"nccl_tests_gates names profile {profile!r}, which is no hardware profile: it has no published gate "
                f"and no host of the inventory has it as gpuops_hardware.profile (known: {', '.join(known)}). "
                "Fix: a profile name from that list, or remove the entry."
            )
        elif isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
            problems.append(
                f"nccl_tests_gates.{profile} is {value!r}, not a bus bandwidth. Fix: GB/s as a positive number "
                f"(nccl_tests_gates: {{{profile}: {published.get(profile, 400)}}})."
            )
    return problems


def _group_problems(group, groups, play_hosts):
    if not group:
        return []
    if group not in groups:
        return [
            f"nccl_tests_multinode_group is {group!r}, which is no group of the inventory. Fix: the name of the "
            "inventory group whose nodes run together, or nccl_tests_multinode_group: '' for single-node runs only."
        ]
    members = list(groups[group])
    if len(members) < 2:
        return [
            f"nccl_tests_multinode_group {group!r} has {len(members)} host ({', '.join(members) or 'none'}): a "
            "multi-node run needs at least two. Fix: add the group's other nodes to the inventory group, or "
            "nccl_tests_multinode_group: '' for single-node runs only."
        ]
    missing = [h for h in members if h not in play_hosts]
    if missing:
        return [
            f"nccl_tests_multinode_group {group!r} has hosts outside this play ({', '.join(missing)}): the "
            "multi-node run needs every node of the group. Fix: run the play on the whole group (no --limit "
            "that cuts it)."
        ]
    return []


def _source_problems(params):
    url, commit = params.get("source_url"), params.get("source_commit") or ""
    if commit:
        # A tag or branch can be moved to other code; only the full commit pins what is built.
        if not COMMIT.match(commit):
            return [
                f"nccl_tests_source_commit is {commit!r}, which is no full commit: a tag or branch can move, so the "
                f"source {url} would not be pinned. Fix: the commit's full 40-digit SHA-1 (git rev-parse "
                f"{commit}^{{commit}} in a clone), or nccl_tests_source_commit: '' for the checksum-pinned tarball."
            ]
        return []
    checksum = params.get("source_checksum") or ""
    if not CHECKSUM.match(checksum):
        return [
            f"nccl_tests_source_checksum is {checksum!r}: the nccl-tests source {url} must be verified. Fix: "
            "nccl_tests_source_checksum: sha256:<64 hex digits>, the sha256sum of the tarball you reviewed, or a git "
            "repository in nccl_tests_source_url with nccl_tests_source_commit."
        ]
    return []


def _nccl_problems(source, version):
    # NVIDIA names each NCCL build for the CUDA release it was built with; a version without it matches none of
    # its packages, and which build is wanted is the operator's choice, not the role's.
    if source == "cuda_repo" and version and not CUDA_BUILD.search(version):
        return [
            f"nccl_tests_nccl_version is {version!r}, which names no CUDA build: NVIDIA's repository names its NCCL "
            "packages <NCCL version>+cuda<CUDA version>. Fix: the full version, e.g. "
            'nccl_tests_nccl_version: 2.23.4-1+cuda12.6, or "" for that default.'
        ]
    return []


def input_problems(params, hardware, published, profiles, groups, play_hosts, node):
    """Every problem of the role's variables and the node's profile, each a sentence with its fix."""
    problems = _source_problems(params) + _nccl_problems(params.get("nccl_source"), params.get("nccl_version") or "")
    benchmarks = params.get("benchmarks") or []
    unknown = [b for b in benchmarks if b not in BENCHMARKS]
    if unknown or not benchmarks:
        problems.append(
            f"nccl_tests_benchmarks is {benchmarks!r}{', which names unknown benchmarks' if unknown else ''}. "
            f"Fix: one or more of {', '.join(BENCHMARKS)}."
        )
    problems += _gate_problems(params.get("gates"), published, profiles)
    if params.get("gpudirect_rdma") not in GDR_MODES:
        problems.append(
            f"nccl_tests_gpudirect_rdma is {params.get('gpudirect_rdma')!r}. Fix: one of {', '.join(GDR_MODES)}."
        )
    if "-g" in (params.get("args") or []):
        problems.append(
            "nccl_tests_args sets -g: the role sets it (all GPUs of the node in a single-node run, one per rank "
            "across nodes). Fix: remove -g and its value from nccl_tests_args."
        )
    gpus = ((hardware or {}).get("gpu") or {}).get("count") or 0
    if gpus < 1:
        problems.append(
            f"{node}'s hardware profile {(hardware or {}).get('profile')!r} has no GPU (gpuops_hardware.gpu.count "
            f"is {gpus}): nccl-tests needs GPUs. Fix: run the nccl_tests stage on GPU nodes only."
        )
    problems += _group_problems(params.get("multinode_group"), groups, play_hosts)
    if params.get("pairs") and params.get("multinode_group") == "pairs":
        problems.append(
            "nccl_tests_multinode_group is 'pairs', the name nccl_tests_pairs keeps its SSH key and configuration "
            "under: the two would share them. Fix: another group name (rename the inventory group), or "
            "nccl_tests_pairs: false."
        )
    return problems


def _active_hcas(infiniband, link_layer):
    names = []
    for device in (infiniband or {}).get("devices", []):
        for port in device.get("ports", []):
            wanted = port.get("state") == "active" and link_layer in (None, port.get("link_layer"))
            if wanted and device["name"] not in names:
                names.append(device["name"])
    return names


def fabric_env(state, infiniband, hardware, overrides):
    """The NCCL environment of a node: from the rdma_fabric role's state when present, else from ib_facts.

    Returns {"env", "source", "overridden", "gpudirect_rdma_expected"}; variables (overrides) win key by key.
    """
    env = {"NCCL_DEBUG": "INFO"}
    link_layer = ((hardware or {}).get("infiniband") or {}).get("link_layer")
    expected = None
    if state:
        source = FABRIC_STATE
        hcas = state.get("hcas") or []
        if hcas:
            env["NCCL_IB_HCA"] = "=" + ",".join(hcas)
        if state.get("socket_ifname"):
            env["NCCL_SOCKET_IFNAME"] = state["socket_ifname"]
        if state.get("gid_index") is not None:
            env["NCCL_IB_GID_INDEX"] = str(state["gid_index"])
        # The rdma_fabric role records peermem's decision (enabled, module, status ready/no_driver/rebuild/problem):
        # ready and enabled means nvidia-peermem is loaded at boot, so NCCL should use GPUDirect RDMA.
        peermem = state.get("peermem") or {}
        if "enabled" in peermem:
            expected = bool(peermem["enabled"]) and peermem.get("status") == "ready"
    else:
        hcas = _active_hcas(infiniband, link_layer)
        source = "ib_facts" if hcas else "none"
        if hcas:
            env["NCCL_IB_HCA"] = "=" + ",".join(hcas)
    overrides = {str(k): str(v) for k, v in (overrides or {}).items()}
    env.update(overrides)
    return {
        "env": dict(sorted(env.items())),
        "source": source,
        "overridden": sorted(overrides),
        "gpudirect_rdma_expected": expected,
    }


# What a run measured, as kept on the node: the nccl_test module's result without its verdict, which is judged
# again on every run against the gate of the day (a changed gate judges the kept measurement, it does not repeat it).
MEASUREMENT_KEYS = (
    "test", "cmd", "rc", "timed_out", "nccl_version", "cuda_version", "tests_version", "params", "devices",
    "results", "avg_busbw_gbps", "max_busbw_gbps", "largest_busbw_gbps", "out_of_bounds", "nccl_warnings",
    "errors", "transport", "output_tail",
)  # fmt: skip


def measurement(result, measured_at):
    """The kept part of a nccl_test result."""
    return {**{key: result.get(key) for key in MEASUREMENT_KEYS}, "measured_at": measured_at}


def judge(kept, gate=None, metric="largest", gdr_mode="ignore", gdr_expected=None):
    """(passed, reasons) of a measurement: nccl_tests.verdict (errors, exit status, the gate), a timeout, and
    GPUDirect RDMA where it is expected. None when nothing was measured (check mode)."""
    if kept is None:
        return None, ["not run (check mode)"]
    _passed, reasons = nccl_tests.verdict(kept, kept.get("rc"), gate, metric)
    if kept.get("timed_out"):
        reasons.insert(0, "the benchmark was stopped by nccl_tests_timeout")
    must = gdr_mode == "required" or (gdr_mode == "auto" and gdr_expected is True)
    seen = (kept.get("transport") or {}).get("gpudirect_rdma")
    if must and seen is not True:
        why = "NCCL did not use it on every network channel" if seen is False else "the output does not show it"
        cause = "nccl_tests_gpudirect_rdma is required" if gdr_mode == "required" else "nvidia-peermem is ready"
        reasons.append(f"GPUDirect RDMA was expected ({cause}) but {why} (NCCL_DEBUG=INFO lines)")
    return not reasons, reasons


def summary(name, profile, simulated, runs, pairs=None):
    mark = f"[SIMULATED {simulated['profile']}] " if simulated else ""
    parts = []
    for run in runs:
        verdict = "not run (check mode)" if run["passed"] is None else "passed" if run["passed"] else "FAILED"
        value = f", {run['busbw_metric']} busbw {run['busbw_gbps']:g} GB/s" if run["busbw_gbps"] is not None else ""
        gate = f" (gate {run['gate_gbps']:g})" if run["gate_gbps"] is not None else " (no gate)"
        parts.append(f"{run['benchmark']} {verdict}{value}{gate if run['scope'] == 'node' else ''}")
    if pairs:
        parts.append(pairs["summary"])
    return f"{mark}{name} ({profile}): " + ("; ".join(parts) or "no benchmark")


def report(name, kind, profile, simulated, fabric, runs, hosts=None, pairs=None):
    """The JSON report of a node (kind node, with its part of the pairs where it was in them) or of a group's
    multi-node runs (kind group)."""
    passed = [r["passed"] for r in runs] + ([pairs["failed"] is None] if pairs else [])
    data = {
        kind: name,
        "profile": profile,
        "simulated": simulated or False,
        "passed": None if None in passed else all(passed),
        "fabric": fabric,
        "runs": runs,
        "summary": summary(name, profile, simulated, runs, pairs),
    }
    if hosts is not None:
        data["hosts"] = hosts
    if pairs:
        data["pairs"] = pairs
    if simulated:
        data["note"] = (
            "SIMULATED: the bench's stand-in nccl-tests ran real MPI and replayed a real captured benchmark output; "
            "the bandwidth figures are the capture's, not a measurement of this node."
        )
    return data


def plan_runs(stored, benchmarks, rerun, node_inputs, group_inputs=None, group=""):
    """Each run this node owes: its key in the results file, its inputs, and whether it runs or its kept record stands.

    A kept record stands when its inputs equal this run's (and rerun is false): a measurement is not repeated
    for nothing. The group's runs are the launcher's only (group_inputs is None elsewhere).
    """
    runs = []
    for scope, common in (("node", node_inputs), ("group", group_inputs)):
        if common is None:
            continue
        for benchmark in benchmarks:
            key = f"node/{benchmark}" if scope == "node" else f"group/{group}/{benchmark}"
            inputs = {**common, "benchmark": benchmark}
            kept = (stored or {}).get(key)
            run = bool(rerun) or not kept or kept.get("inputs") != inputs or not kept.get("measurement")
            runs.append(
                {"key": key, "scope": scope, "benchmark": benchmark, "inputs": inputs, "run": run,
                 "kept": None if run else kept["measurement"]}
            )  # fmt: skip
    return runs


def records(runs, results, measured_at, gate, metric, gdr_mode, gdr_expected):
    """(measurements by key for results.json, judged records for the reports) of every run: the kept measurement,
    the fresh one (the nccl_test results, by key), or none in check mode."""
    fresh = {r["item"]["key"]: r for r in results or [] if r.get("item") and not r.get("skipped")}
    kept, judged = {}, []
    for run in runs:
        if run["kept"] is not None:
            measured = run["kept"]
        elif run["key"] in fresh:
            measured = measurement(fresh[run["key"]], measured_at)
        else:
            measured = None
        if measured is not None:
            kept[run["key"]] = {"inputs": run["inputs"], "measurement": measured}
        group = run["scope"] == "group"
        passed, reasons = judge(measured, None if group else gate, metric, gdr_mode if group else "ignore",
                                gdr_expected)  # fmt: skip
        judged.append(
            {"benchmark": run["benchmark"], "scope": run["scope"], "passed": passed, "reasons": reasons,
             "gate_gbps": None if group else gate, "busbw_metric": metric,
             "busbw_gbps": (measured or {}).get(f"{metric}_busbw_gbps"), "inputs": run["inputs"],
             **(measured or {})}
        )  # fmt: skip
    return {"kept": kept, "records": judged}


# Written into the GECOS field of the account the role creates: how a later run tells its own account from a person's.
USER_COMMENT = "gpuops.bringup nccl_tests benchmark user"
DEFAULT_USER = "gpuops-nccl"


def user_problem(user, entry):
    """Why nccl_tests_user must not be used, or None. entry: the account's passwd fields (getent's [password, uid,
    gid, gecos, home, shell]), None when it does not exist (the role creates it).

    The role gives the account a shell and lets the group's SSH key log into it on every node: never root, never an
    account someone else made (a person's login)."""
    if entry is None:
        return None
    fields = [str(f) for f in entry] + [""] * 6
    _password, uid, _gid, gecos, _home, shell = fields[:6]
    if uid == "0":
        return (
            f"nccl_tests_user {user} is uid 0: the group's SSH key would open root's account on every node of the "
            "group. Nothing was changed. Fix: a user of its own, e.g. the default gpuops-nccl (the role creates it)"
        )
    if gecos == USER_COMMENT:
        return None
    # Made by the role before it marked its accounts: its name, a system uid, the role's shell.
    if user == DEFAULT_USER and shell == "/bin/sh" and uid.isdigit() and int(uid) < 1000:
        return None
    return (
        f"nccl_tests_user is {user}, an existing account this role did not create (uid {uid}, shell {shell or 'none'}):"
        " the role would change its shell and let the group's SSH key log into it on every node. Nothing was changed."
        " Fix: a name of its own (the default gpuops-nccl, which the role creates), or remove that account"
    )


# Where each NCCL source is served (the role's table of os-release IDs and majors, vars/main.yml), and the fix, as the
# refusal of another release says them.
_SOURCE_RELEASES = {
    "distribution": (
        "nccl_tests_nccl_source is distribution (the OS's own libnccl2 and libnccl-dev), which this collection "
        "supports on Debian 13 (contrib, NCCL 2.22.3)",
        "a Debian 13 node, or nccl_tests_nccl_source: cuda_repo on Ubuntu 22.04 or 24.04. Debian 12 carries no NCCL, "
        "and NVIDIA publishes its NCCL packages for Ubuntu and RHEL. For a node to be accepted without NCCL: "
        "gpuops_nccl_tests: false (site.yml skips this stage on it) and nccl.single_node and nccl.pairs in "
        "acceptance_optional.",
    ),
    "cuda_repo": (
        "nccl_tests_nccl_source is cuda_repo (NVIDIA's CUDA repository), whose NCCL packages this collection installs "
        "on Ubuntu 22.04 and 24.04 (NVIDIA's ubuntu2204 and ubuntu2404 repositories)",
        "one of those releases, or nccl_tests_nccl_source: distribution on Debian 13.",
    ),
}


def _release_supported(supported, source, release):
    """Whether the node's release (os_facts' gpuops_os.os) is one the NCCL source serves ({source: {ID: [majors]}})."""
    # .get: an os-release ID such as "pop" must not name a method.
    return (release or {}).get("major") in (supported.get(source) or {}).get((release or {}).get("id"), ())


def _carried(listing, names, version):
    """(the names=version a listing lacks, what it carries of each name); listing maps a name to its versions."""
    missing = [f"{name}={version}" for name in names if version not in (listing.get(name) or [])]
    carried = "; ".join(f"{name} {' '.join(listing.get(name) or []) or 'none'}" for name in names)
    return missing, carried


def _sources_problems(host, source, sources, nccl_packages, mpi_packages):
    """The pinned NCCL and Open MPI against what the release's sources carry."""
    problems = []
    nccl, openmpi = sources.get("nccl"), sources.get("openmpi")
    if source == "cuda_repo":
        index = sources.get("index") or {}
        missing, carried = _carried(index.get("packages") or {}, nccl_packages, nccl)
        if missing:
            problems.append(
                f"{host}: NVIDIA's CUDA repository ({index.get('index_url')}) does not carry {', '.join(missing)} (it "
                f"carries {carried}). Nothing was changed. Fix: nccl_tests_nccl_version set to one of those versions "
                f"(NVIDIA names its builds <NCCL version>+cuda<CUDA version>), or a mirror that carries {nccl}."
            )
    # NVIDIA's NCCL is checked in its repository's index above; the package sources hold the rest.
    available = {name: (info or {}).get("available") for name, info in (sources.get("packages") or {}).items()}
    wanted = [(nccl_packages, nccl)] if source == "distribution" else []
    wanted.append((mpi_packages, openmpi))
    missing, carried = [], []
    for names, version in wanted:
        lacking, listed = _carried(available, names, version)
        missing += lacking
        carried.append(listed)
    if missing:
        problems.append(
            f"{host}: the package sources do not carry {', '.join(missing)} (available: {'; '.join(carried)}). Fix: "
            "nccl_tests_nccl_version and nccl_tests_openmpi_version set to available versions, or the package source "
            "that carries them (libnccl2 is in Debian 13's contrib component: os_baseline's components; Open MPI in "
            "Ubuntu's universe)."
        )
    return problems


def _gpu_problem(host, hardware, gpu_read):
    gpu = (gpu_read.get("ansible_facts") or {}).get("gpu")
    count = gpu.get("count") if gpu else 0
    expected = ((hardware or {}).get("gpu") or {}).get("count")
    if count == expected:
        return []
    # Without nvidia-smi (no driver) there was nothing to read: the reader says so.
    why = "" if gpu else f" ({gpu_read.get('msg')})"
    return [
        f"{host}: nvidia-smi sees {count} of the {expected} GPUs of profile {(hardware or {}).get('profile')}{why}: "
        "nccl-tests would fail with CUDA errors. Fix: the driver stage (playbooks/nvidia_driver.yml) first; the "
        "acceptance stage (playbooks/acceptance.yml) says which GPU checks fail."
    ]


def preflight(
    *,
    host,
    params,
    hardware,
    published,
    profiles,
    groups,
    play_hosts,
    supported,
    nccl_packages,
    mpi_packages,
    account,
    release,
    sources,
    gpu_read,
):
    """{problems} of one node: its variables, profile and group (input_problems), its benchmark account
    (user_problem), its release against the NCCL source, the pinned versions against its sources, its GPUs.

    params: input_problems' with user (nccl_tests_user); hardware, published, profiles, groups, play_hosts:
    input_problems'; supported, nccl_packages, mpi_packages: the role's tables (vars/main.yml); account: getent's
    passwd entry of the user (None: there is none); release: os_facts' gpuops_os.os; sources: what the release's
    sources carry, read only where it is supported ({nccl, openmpi: the versions to install, packages:
    package_info's, index: repository_index's of NVIDIA's repository where NCCL comes from it}); gpu_read: gpu_facts'
    result, failed where nvidia-smi was not found.
    """
    problems = input_problems(params, hardware, published, profiles, groups, play_hosts, host)
    account_problem = user_problem(params.get("user"), account)
    if account_problem:
        problems.append(f"{host}: {account_problem}.")
    source = params.get("nccl_source")
    if not _release_supported(supported, source, release):
        # The argument specification admits these two sources only.
        why, fix = _SOURCE_RELEASES[source]
        release = release or {}
        problems.append(
            f"{why}; {host} runs {release.get('name') or 'an unknown OS'} (ID={release.get('id')}, "
            f"VERSION_ID={release.get('version_id')}). Fix: {fix}"
        )
    elif sources:
        problems += _sources_problems(host, source, sources, nccl_packages, mpi_packages)
    return {"problems": problems + _gpu_problem(host, hardware, gpu_read)}
