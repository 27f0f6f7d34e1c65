"""The nccl_tests role's decisions: its preflight, NCCL environment from the fabric, run planning, judging real
captured runs (tests/fixtures/nccl, sources in tests/fixtures/SOURCES.md) and the reports."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ansible_collections.gpuops.bringup.plugins.module_utils import nccl_tests, nccl_tests_plan

NCCL = Path(__file__).resolve().parents[3] / "fixtures" / "nccl"
H100 = {"profile": "hgx_h100_8gpu", "gpu": {"count": 8}, "infiniband": {"ports": 8, "link_layer": "InfiniBand"}}
PUBLISHED = {"hgx_h100_8gpu": 460, "hgx_h200_8gpu": 431, "hgx_a100_8gpu": 228}
VALID = {"source_url": "https://example/x.tar.gz", "source_checksum": "sha256:" + "a" * 64, "gates": {},
         "benchmarks": ["all_reduce_perf"], "gpudirect_rdma": "auto", "args": [], "multinode_group": ""}  # fmt: skip


def measured(name, rc=0):
    """A nccl_test result (its measured part) from a real capture."""
    return nccl_tests_plan.measurement({**nccl_tests.parse((NCCL / name).read_text()), "rc": rc}, "2026-11-30T00:00Z")


def problems(**changes):
    groups = {"pair": ["a", "b"], "lonely": ["a"]}
    return nccl_tests_plan.input_problems({**VALID, **changes}, H100, PUBLISHED, ["pcie_l40s_4gpu"], groups,
                                          ["a", "b"], "a")  # fmt: skip


def test_valid_variables_have_no_problem():
    assert problems() == []
    assert problems(gates={"pcie_l40s_4gpu": 50, "hgx_h100_8gpu": 470}, multinode_group="pair") == []
    # NVIDIA's build names its CUDA release; Debian's versions name none; empty is the source's default.
    assert problems(nccl_source="cuda_repo", nccl_version="2.21.5-1+cuda12.4") == []
    assert problems(nccl_source="cuda_repo", nccl_version="") == []
    assert problems(nccl_source="distribution", nccl_version="2.22.3-1-1") == []
    # A full commit pins a git source: no checksum is asked for.
    commit = "c8f02eeedd904748f0d8921225904dffc7f54a75"
    assert (
        problems(source_url="https://github.com/NVIDIA/nccl-tests.git", source_commit=commit, source_checksum="") == []
    )


@pytest.mark.parametrize(
    ("changes", "start"),
    [
        ({"gates": {"hgx_b300_8gpu": 900}}, "nccl_tests_gates names profile 'hgx_b300_8gpu', which is no hardware"),
        ({"gates": {"hgx_h100_8gpu": "fast"}}, "nccl_tests_gates.hgx_h100_8gpu is 'fast', not a bus bandwidth"),
        ({"multinode_group": "lonely"}, "nccl_tests_multinode_group 'lonely' has 1 host (a): a multi-node run needs"),
        ({"source_checksum": "md5:abc"}, "nccl_tests_source_checksum is 'md5:abc': the nccl-tests source"),
        (
            {"source_url": "https://github.com/NVIDIA/nccl-tests.git", "source_commit": "v2.16.3"},
            "nccl_tests_source_commit is 'v2.16.3', which is no full commit: a tag or branch can move",
        ),
        (
            {"source_commit": "C8F02EEEDD904748F0D8921225904DFFC7F54A75"},
            "nccl_tests_source_commit is 'C8F02EEEDD904748F0D8921225904DFFC7F54A75', which is no full commit",
        ),
        (
            {"nccl_source": "cuda_repo", "nccl_version": "2.23.4-1"},
            "nccl_tests_nccl_version is '2.23.4-1', which names no CUDA build",
        ),
        (
            {"nccl_source": "cuda_repo", "nccl_version": "2.23.4-1+cuda12"},
            "nccl_tests_nccl_version is '2.23.4-1+cuda12', which names no CUDA build",
        ),
    ],
)
def test_each_problem_names_the_variable_and_the_fix(changes, start):
    (problem,) = problems(**changes)
    assert problem.startswith(start) and "Fix: " in problem


def test_a_group_named_as_the_pairs_is_refused_only_beside_them():
    groups = {"pairs": ["a", "b"]}
    args = (H100, PUBLISHED, [], groups, ["a", "b"], "a")
    assert nccl_tests_plan.input_problems({**VALID, "multinode_group": "pairs"}, *args) == []
    assert nccl_tests_plan.input_problems({**VALID, "multinode_group": "pair", "pairs": True}, H100, PUBLISHED, [],
                                          {"pair": ["a", "b"]}, ["a", "b"], "a") == []  # fmt: skip
    (problem,) = nccl_tests_plan.input_problems({**VALID, "multinode_group": "pairs", "pairs": True}, *args)
    assert problem.startswith("nccl_tests_multinode_group is 'pairs', the name nccl_tests_pairs keeps its SSH key")


def test_a_group_cut_by_the_play_is_refused():
    (problem,) = nccl_tests_plan.input_problems({**VALID, "multinode_group": "pair"}, H100, PUBLISHED, [],
                                                {"pair": ["a", "b"]}, ["a"], "a")  # fmt: skip
    assert "has hosts outside this play (b)" in problem


def test_the_fabric_state_gives_the_nccl_environment():
    # Synthetic state in the rdma_fabric role's contract (/var/lib/gpuops/rdma_fabric/state.json): a RoCE fabric.
    peermem = {"enabled": True, "module": "nvidia-peermem", "status": "ready"}
    state = {"stack": "inbox", "peermem": peermem, "hcas": ["mlx5_0", "mlx5_1"], "link_layer": "Ethernet",
             "gid_index": 3, "socket_ifname": "bond0"}  # fmt: skip
    fabric = nccl_tests_plan.fabric_env(state, None, H100, {"NCCL_SOCKET_IFNAME": "eth1"})
    assert fabric == {
        "env": {"NCCL_DEBUG": "INFO", "NCCL_IB_GID_INDEX": "3", "NCCL_IB_HCA": "=mlx5_0,mlx5_1",
                "NCCL_SOCKET_IFNAME": "eth1"},
        "source": "/var/lib/gpuops/rdma_fabric/state.json",
        "overridden": ["NCCL_SOCKET_IFNAME"],
        "gpudirect_rdma_expected": True,
    }  # fmt: skip


def test_without_a_fabric_state_the_active_ports_of_the_profiles_link_layer_give_the_hcas():
    # Synthetic ib_facts: one InfiniBand port active, one down, one Ethernet port active.
    infiniband = {"devices": [
        {"name": "mlx5_0", "ports": [{"state": "active", "link_layer": "InfiniBand"}]},
        {"name": "mlx5_1", "ports": [{"state": "down", "link_layer": "InfiniBand"}]},
        {"name": "mlx5_2", "ports": [{"state": "active", "link_layer": "Ethernet"}]},
    ]}  # fmt: skip
    fabric = nccl_tests_plan.fabric_env(None, infiniband, H100, {})
    assert (fabric["env"], fabric["source"]) == ({"NCCL_DEBUG": "INFO", "NCCL_IB_HCA": "=mlx5_0"}, "ib_facts")
    assert fabric["gpudirect_rdma_expected"] is None
    assert nccl_tests_plan.fabric_env(None, None, H100, {})["source"] == "none"


def test_a_kept_measurement_with_the_same_inputs_is_not_run_again():
    inputs = {"args": ["-g", "8"], "env": {}, "mpirun": None, "versions": {}}
    kept = {"node/all_reduce_perf": {"inputs": {**inputs, "benchmark": "all_reduce_perf"}, "measurement": {"rc": 0}}}
    (run,) = nccl_tests_plan.plan_runs(kept, ["all_reduce_perf"], False, inputs)
    assert (run["run"], run["kept"]) == (False, {"rc": 0})
    assert nccl_tests_plan.plan_runs(kept, ["all_reduce_perf"], True, inputs)[0]["run"] is True
    changed = {**inputs, "args": ["-g", "4"]}
    assert nccl_tests_plan.plan_runs(kept, ["all_reduce_perf"], False, changed)[0]["run"] is True
    group = nccl_tests_plan.plan_runs(kept, ["all_reduce_perf"], False, inputs, inputs, "pair")
    assert [(r["key"], r["run"]) for r in group] == [
        ("node/all_reduce_perf", False),
        ("group/pair/all_reduce_perf", True),
    ]


def test_the_h100_capture_passes_its_published_gate_at_the_largest_size_and_fails_it_on_average():
    run = measured("nccl-tests-290-all_reduce-h100-8gpu-single-node.txt")
    assert nccl_tests_plan.judge(run, 460, "largest") == (True, [])
    assert nccl_tests_plan.judge(run, 460, "avg") == (
        False, ["avg bus bandwidth 439.369 GB/s is below min_busbw_gbps 460"])  # fmt: skip


def test_an_unhandled_cuda_error_fails_with_it():
    passed, reasons = nccl_tests_plan.judge(
        measured("nccl-tests-124-all_reduce-rtx3090-unhandled-cuda-error.txt", 1), 460
    )
    assert passed is False
    assert reasons[:2] == ["the benchmark exited with return code 1",
                           "Test NCCL failure at all_reduce.cu:44: unhandled cuda error"]  # fmt: skip


def test_gpudirect_rdma_expected_but_disabled_fails_the_group_run():
    # NCCL's own lines where nvidia-peermem was missing (NVIDIA/nccl#1676), after a real two-node table.
    run = measured("nccl-tests-290-all_reduce-h100-2node-srun-label.txt")
    run["transport"] = nccl_tests.parse((NCCL / "nccl-1676-gdr-disabled-info-lines.txt").read_text())["transport"]
    passed, reasons = nccl_tests_plan.judge(run, None, "largest", "auto", gdr_expected=True)
    assert (passed, reasons) == (False, [
        "GPUDirect RDMA was expected (nvidia-peermem is ready) but NCCL did not use it on every network channel "
        "(NCCL_DEBUG=INFO lines)"])  # fmt: skip
    assert nccl_tests_plan.judge(run, None, "largest", "auto", gdr_expected=None) == (True, [])
    _passed, reasons = nccl_tests_plan.judge(measured("nccl-tests-290-all_reduce-h100-2node-srun-label.txt"), None,
                                             "largest", "required")  # fmt: skip
    assert reasons == ["GPUDirect RDMA was expected (nccl_tests_gpudirect_rdma is required) but the output does not "
                       "show it (NCCL_DEBUG=INFO lines)"]  # fmt: skip


def test_records_keep_fresh_measurements_and_say_what_check_mode_did_not_run():
    inputs = {"args": [], "env": {}, "mpirun": None, "versions": {}}
    runs = nccl_tests_plan.plan_runs({}, ["all_reduce_perf", "alltoall_perf"], False, inputs)
    fresh = {**nccl_tests.parse((NCCL / "nccl-tests-290-all_reduce-h100-8gpu-single-node.txt").read_text()), "rc": 0}
    result = nccl_tests_plan.records(runs, [{**fresh, "item": runs[0]}, {"skipped": True, "item": runs[1]}],
                                     "2026-11-30T00:00:00Z", 460, "largest", "auto", None)  # fmt: skip
    assert list(result["kept"]) == ["node/all_reduce_perf"]
    assert result["kept"]["node/all_reduce_perf"]["measurement"]["measured_at"] == "2026-11-30T00:00:00Z"
    first, second = result["records"]
    assert (first["passed"], first["busbw_gbps"], first["gate_gbps"]) == (True, 476.53, 460)
    assert (second["passed"], second["reasons"]) == (None, ["not run (check mode)"])
    marker = {"profile": "hgx_h100_8gpu"}
    report = nccl_tests_plan.report("n1", "node", "hgx_h100_8gpu", marker, {}, result["records"])
    assert report["passed"] is None
    assert report["summary"] == (
        "[SIMULATED hgx_h100_8gpu] n1 (hgx_h100_8gpu): all_reduce_perf passed, largest busbw 476.53 GB/s (gate 460); "
        "alltoall_perf not run (check mode) (gate 460)"
    )
    assert "not a measurement" in report["note"]


@pytest.mark.parametrize(("failed", "passed"), [(None, True), ("all_reduce_perf pairs FAIL: x", False)])
def test_a_node_report_carries_its_part_of_the_pairs(failed, passed):
    fresh = {**nccl_tests.parse((NCCL / "nccl-tests-290-all_reduce-h100-8gpu-single-node.txt").read_text()), "rc": 0}
    runs = nccl_tests_plan.plan_runs({}, ["all_reduce_perf"], False, {"args": [], "env": {}, "mpirun": None})
    records = nccl_tests_plan.records(runs, [{**fresh, "item": runs[0]}], "t", 460, "largest", "auto", None)["records"]
    pairs = {"outcome": "PASS" if passed else "FAIL", "summary": "all_reduce_perf pairs ...", "failed": failed}
    report = nccl_tests_plan.report("n1", "node", "hgx_h100_8gpu", None, {}, records, None, pairs)
    assert report["passed"] is passed and report["pairs"] == pairs
    assert report["summary"].endswith("(gate 460); all_reduce_perf pairs ...")
    assert "pairs" not in nccl_tests_plan.report("n1", "node", "hgx_h100_8gpu", None, {}, records)


@pytest.mark.parametrize(
    ("user", "entry", "problem"),
    [
        ("gpuops-nccl", None, None),
        ("gpuops-nccl", ["x", "998", "998", "gpuops.bringup nccl_tests benchmark user", "/home/gpuops-nccl", "/bin/sh"],
         None),
        # The role's account from before it marked them: its name, a system uid, its shell.
        ("gpuops-nccl", ["x", "998", "998", "", "/home/gpuops-nccl", "/bin/sh"], None),
        ("toor", ["x", "0", "0", "", "/root", "/bin/bash"], "nccl_tests_user toor is uid 0"),
        ("alice", ["x", "1000", "1000", "Alice,,,", "/home/alice", "/bin/bash"],
         "nccl_tests_user is alice, an existing account this role did not create (uid 1000, shell /bin/bash)"),
        ("gpuops-nccl", ["x", "1001", "1001", "", "/home/gpuops-nccl", "/bin/bash"], "an existing account"),
        ("daemon", ["x", "1", "1", "daemon", "/usr/sbin", "/usr/sbin/nologin"], "(uid 1, shell /usr/sbin/nologin)"),
    ],
)  # fmt: skip
def test_user_problem(user, entry, problem):
    found = nccl_tests_plan.user_problem(user, entry)
    assert (found is None) == (problem is None), found
    assert problem is None or problem in found


# The preflight: every problem of a node at once, with the role's own tables.
ROLE_VARS = yaml.safe_load(
    (Path(__file__).resolve().parents[4] / "roles" / "nccl_tests" / "vars" / "main.yml").read_text()
)
DEBIAN_12 = {"id": "debian", "major": "12", "version_id": "12", "name": "Debian GNU/Linux 12 (bookworm)"}
DEBIAN_13 = {"id": "debian", "major": "13", "version_id": "13", "name": "Debian GNU/Linux 13 (trixie)"}
UBUNTU_24 = {"id": "ubuntu", "major": "24", "version_id": "24.04", "name": "Ubuntu 24.04.3 LTS"}
# What package_info and repository_index read on each release (the versions vars/<OS>-<major>.yml pins).
DEBIAN_13_SOURCES = {
    "nccl": "2.22.3-1-1",
    "openmpi": "5.0.7-1",
    "packages": {"libnccl2": {"available": ["2.22.3-1-1"]}, "libnccl-dev": {"available": ["2.22.3-1-1"]},
                 "openmpi-bin": {"available": ["5.0.7-1"]}, "libopenmpi-dev": {"available": ["5.0.7-1"]},
                 "make": {"available": ["4.4.1-2"]}},
    "index": None,
}  # fmt: skip
UBUNTU_24_SOURCES = {
    "nccl": "2.23.4-1+cuda12.6",
    "openmpi": "4.1.6-7ubuntu2",
    # NVIDIA's NCCL is in its repository, not in Ubuntu's archive.
    "packages": {"libnccl2": {"available": []}, "libnccl-dev": {"available": []},
                 "openmpi-bin": {"available": ["4.1.6-7ubuntu2"]}, "libopenmpi-dev": {"available": ["4.1.6-7ubuntu2"]}},
    "index": {"index_url": "https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2404/x86_64/Packages.gz",
              "packages": {"libnccl2": ["2.23.4-1+cuda12.6", "2.22.3-1+cuda12.6"],
                           "libnccl-dev": ["2.23.4-1+cuda12.6", "2.22.3-1+cuda12.6"]}},
}  # fmt: skip
GPUS = {"ansible_facts": {"gpu": {"count": 8}}}
NO_SMI = {"failed": False, "msg": "nvidia-smi was not found on this host (searched PATH and the sbin directories)"}
DAEMON = ["x", "1", "1", "daemon", "/usr/sbin", "/usr/sbin/nologin"]


# The default of an argument a case may set to None (sources=None: the release has no package sources table).
DEFAULT = object()


def preflight(release=DEFAULT, sources=DEFAULT, account=None, gpu_read=DEFAULT, **params):
    release = DEBIAN_13 if release is DEFAULT else release
    sources = DEBIAN_13_SOURCES if sources is DEFAULT else sources
    gpu_read = GPUS if gpu_read is DEFAULT else gpu_read
    return nccl_tests_plan.preflight(
        host="n1",
        params={**VALID, "nccl_source": "distribution", "nccl_version": "", "pairs": False, "user": "gpuops-nccl",
                **params},
        hardware=H100,
        published=PUBLISHED,
        profiles=["hgx_h100_8gpu"],
        groups={"pair": ["a", "b"]},
        play_hosts=["a", "b"],
        supported=ROLE_VARS["__nccl_tests_supported"],
        nccl_packages=ROLE_VARS["__nccl_tests_nccl_packages"],
        mpi_packages=ROLE_VARS["__nccl_tests_mpi_packages"],
        account=account,
        release=release,
        sources=sources,
        gpu_read=gpu_read,
    )  # fmt: skip


def test_a_node_as_wanted_has_no_problem_from_either_source():
    assert preflight() == {"problems": []}
    assert preflight(UBUNTU_24, UBUNTU_24_SOURCES, nccl_source="cuda_repo") == {"problems": []}


def test_every_problem_of_an_unsupported_release_at_once():
    """Its sources are not judged: they were not read (here: what another release's read left)."""
    found = preflight(DEBIAN_12, DEBIAN_13_SOURCES, DAEMON, NO_SMI, source_checksum="", args=["-g", "8"])["problems"]
    assert found == [
        "nccl_tests_source_checksum is '': the nccl-tests source https://example/x.tar.gz must be verified. Fix: "
        "nccl_tests_source_checksum: sha256:<64 hex digits>, the sha256sum of the tarball you reviewed, or a git "
        "repository in nccl_tests_source_url with nccl_tests_source_commit.",
        "nccl_tests_args sets -g: the role sets it (all GPUs of the node in a single-node run, one per rank across "
        "nodes). Fix: remove -g and its value from nccl_tests_args.",
        "n1: nccl_tests_user is gpuops-nccl, an existing account this role did not create (uid 1, shell "
        "/usr/sbin/nologin): the role would change its shell and let the group's SSH key log into it on every node. "
        "Nothing was changed. Fix: a name of its own (the default gpuops-nccl, which the role creates), or remove "
        "that account.",
        "nccl_tests_nccl_source is distribution (the OS's own libnccl2 and libnccl-dev), which this collection "
        "supports on Debian 13 (contrib, NCCL 2.22.3); n1 runs Debian GNU/Linux 12 (bookworm) (ID=debian, "
        "VERSION_ID=12). Fix: a Debian 13 node, or nccl_tests_nccl_source: cuda_repo on Ubuntu 22.04 or 24.04. "
        "Debian 12 carries no NCCL, and NVIDIA publishes its NCCL packages for Ubuntu and RHEL. For a node to be "
        "accepted without NCCL: gpuops_nccl_tests: false (site.yml skips this stage on it) and nccl.single_node and "
        "nccl.pairs in acceptance_optional.",
        "n1: nvidia-smi sees 0 of the 8 GPUs of profile hgx_h100_8gpu (nvidia-smi was not found on this host "
        "(searched PATH and the sbin directories)): nccl-tests would fail with CUDA errors. Fix: the driver stage "
        "(playbooks/nvidia_driver.yml) first; the acceptance stage (playbooks/acceptance.yml) says which GPU checks "
        "fail.",
    ]


def test_every_problem_of_a_supported_release_at_once():
    sources = {**UBUNTU_24_SOURCES, "nccl": "2.21.5-1+cuda12.4", "openmpi": "4.1.6-7ubuntu3"}
    gpus = {"ansible_facts": {"gpu": {"count": 7}}}
    found = preflight(UBUNTU_24, sources, None, gpus, nccl_source="cuda_repo", benchmarks=[])["problems"]
    assert found == [
        "nccl_tests_benchmarks is []. Fix: one or more of all_reduce_perf, all_gather_perf, reduce_scatter_perf, "
        "alltoall_perf.",
        "n1: NVIDIA's CUDA repository (https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2404/x86_64/"
        "Packages.gz) does not carry libnccl2=2.21.5-1+cuda12.4, libnccl-dev=2.21.5-1+cuda12.4 (it carries libnccl2 "
        "2.23.4-1+cuda12.6 2.22.3-1+cuda12.6; libnccl-dev 2.23.4-1+cuda12.6 2.22.3-1+cuda12.6). Nothing was changed. "
        "Fix: nccl_tests_nccl_version set to one of those versions (NVIDIA names its builds <NCCL "
        "version>+cuda<CUDA version>), or a mirror that carries 2.21.5-1+cuda12.4.",
        "n1: the package sources do not carry openmpi-bin=4.1.6-7ubuntu3, libopenmpi-dev=4.1.6-7ubuntu3 (available: "
        "openmpi-bin 4.1.6-7ubuntu2; libopenmpi-dev 4.1.6-7ubuntu2). Fix: nccl_tests_nccl_version and "
        "nccl_tests_openmpi_version set to available versions, or the package source that carries them (libnccl2 is "
        "in Debian 13's contrib component: os_baseline's components; Open MPI in Ubuntu's universe).",
        "n1: nvidia-smi sees 7 of the 8 GPUs of profile hgx_h100_8gpu: nccl-tests would fail with CUDA errors. Fix: "
        "the driver stage (playbooks/nvidia_driver.yml) first; the acceptance stage (playbooks/acceptance.yml) says "
        "which GPU checks fail.",
    ]


@pytest.mark.parametrize(
    ("source", "release", "supported"),
    [("distribution", DEBIAN_13, True), ("distribution", DEBIAN_12, False), ("distribution", UBUNTU_24, False),
     ("cuda_repo", UBUNTU_24, True), ("cuda_repo", {**UBUNTU_24, "major": "22"}, True),
     ("cuda_repo", {**UBUNTU_24, "major": "20"}, False), ("cuda_repo", DEBIAN_13, False),
     # An os-release ID that names a dict method, and none at all.
     ("distribution", {**DEBIAN_13, "id": "get"}, False), ("cuda_repo", {}, False)],
)  # fmt: skip
def test_the_releases_each_nccl_source_serves(source, release, supported):
    sources = DEBIAN_13_SOURCES if source == "distribution" else UBUNTU_24_SOURCES
    found = preflight(release, sources, nccl_source=source)["problems"]
    assert (found == []) is supported
    if not supported:
        (problem,) = found
        assert problem.startswith(f"nccl_tests_nccl_source is {source} (")


def test_an_unknown_os_is_named_as_such():
    (problem,) = preflight({}, None)["problems"]
    assert "; n1 runs an unknown OS (ID=None, VERSION_ID=None). Fix: a Debian 13 node" in problem


def test_the_distributions_nccl_and_open_mpi_against_its_archive():
    packages = {**DEBIAN_13_SOURCES["packages"], "libnccl-dev": {"available": []}, "openmpi-bin": {"available": []}}
    (problem,) = preflight(sources={**DEBIAN_13_SOURCES, "packages": packages})["problems"]
    assert problem.startswith(
        "n1: the package sources do not carry libnccl-dev=2.22.3-1-1, openmpi-bin=5.0.7-1 (available: libnccl2 "
        "2.22.3-1-1; libnccl-dev none; openmpi-bin none; libopenmpi-dev 5.0.7-1). Fix: "
    )


def test_nvidias_nccl_is_judged_in_its_repository_not_in_the_archive():
    # The archive carries no libnccl2 (UBUNTU_24_SOURCES); a repository that lacks one package names it alone.
    index = {**UBUNTU_24_SOURCES["index"], "packages": {"libnccl2": ["2.23.4-1+cuda12.6"]}}
    (problem,) = preflight(UBUNTU_24, {**UBUNTU_24_SOURCES, "index": index}, nccl_source="cuda_repo")["problems"]
    assert "does not carry libnccl-dev=2.23.4-1+cuda12.6 (it carries libnccl2 2.23.4-1+cuda12.6; libnccl-dev none)" in (
        problem
    )


def test_sources_not_read_are_not_judged():
    assert preflight(sources=None) == {"problems": []}


@pytest.mark.parametrize(
    ("gpu_read", "said"),
    [(GPUS, None), ({"ansible_facts": {"gpu": {"count": 9}}}, "n1: nvidia-smi sees 9 of the 8 GPUs"),
     ({"ansible_facts": {"gpu": {"count": 0}}}, "n1: nvidia-smi sees 0 of the 8 GPUs of profile hgx_h100_8gpu: "),
     (NO_SMI, "n1: nvidia-smi sees 0 of the 8 GPUs of profile hgx_h100_8gpu (nvidia-smi was not found on this host")],
)  # fmt: skip
def test_the_gpus_nvidia_smi_sees_are_the_profiles(gpu_read, said):
    found = preflight(gpu_read=gpu_read)["problems"]
    assert found == [] if said is None else found[0].startswith(said)


def test_the_benchmark_account():
    assert preflight(account=["x", "998", "998", nccl_tests_plan.USER_COMMENT, "/home/gpuops-nccl", "/bin/sh"]) == {
        "problems": []
    }
    (problem,) = preflight(account=["x", "0", "0", "", "/root", "/bin/bash"], user="toor")["problems"]
    assert problem.startswith("n1: nccl_tests_user toor is uid 0: ") and problem.endswith("(the role creates it).")
