"""nccl_tests on three simulated HGX H100 nodes: real NCCL and Open MPI packages, the stand-in nccl-tests built from
its checksum-pinned tarball (or its git repository, pinned by the commit), real MPI across two containers, replayed
captures judged, the reports and the gate.

The bandwidth figures are replayed captures (tests/sim profiles, tests/fixtures/nccl), not measurements.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

REPORTS = Path(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"]) / "reports"
ROOT = Path(os.environ["MOLECULE_PROJECT_DIRECTORY"])
CONVERGE = Path(os.environ["MOLECULE_SCENARIO_DIRECTORY"]) / "converge.yml"
USER = "gpuops-nccl"
GROUP = "nccl_pair"
LAUNCHER = "h100-a"
CUDA_ERROR = "Test NCCL failure at all_reduce.cu:44: unhandled cuda error"


def report(name: str) -> dict:
    return json.loads((REPORTS / f"{name}.json").read_text())


def playbook(*extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["ansible-playbook", "-i", os.environ["MOLECULE_INVENTORY_FILE"], str(CONVERGE), *extra],
        capture_output=True, text=True, check=False,
        env={**os.environ, "ANSIBLE_FORCE_COLOR": "0", "ANSIBLE_NOCOLOR": "1"},
    )  # fmt: skip


@pytest.mark.parametrize("node", ["h100-a", "h100-b"])
def test_a_healthy_node_passes_its_profiles_published_gate(node):
    data = report(node)
    (run,) = data["runs"]
    assert (run["benchmark"], run["scope"], run["passed"], run["reasons"]) == ("all_reduce_perf", "node", True, [])
    # The H100 capture's 4 GiB row (NVIDIA/nccl-tests#290) against Azure's published 460 GB/s.
    assert (run["busbw_metric"], run["busbw_gbps"], run["gate_gbps"]) == ("largest", 476.53, 460)
    assert run["cmd"][-2:] == ["-g", "8"] and run["rc"] == 0
    # Then its part of the pairs (test_the_pairs_put_the_failure_on_the_node_it_belongs_to).
    partners = {"h100-a": "h100-b, h100-cuda-error", "h100-b": "h100-a"}[node]
    assert data["summary"] == (
        f"[SIMULATED hgx_h100_8gpu] {node} (hgx_h100_8gpu): all_reduce_perf passed, largest busbw 476.53 GB/s "
        f"(gate 460); all_reduce_perf pairs PASS: passed with {partners}"
    )
    assert "not a measurement" in data["note"]
    # No rdma_fabric state on these nodes: NCCL_IB_HCA comes from ib_facts (the profile's 8 active NDR ports).
    assert data["fabric"]["source"] == "ib_facts"
    assert data["fabric"]["env"]["NCCL_IB_HCA"] == "=mlx5_0,mlx5_1,mlx5_4,mlx5_5,mlx5_6,mlx5_7,mlx5_8,mlx5_9"


def test_a_run_that_dies_with_an_unhandled_cuda_error_fails_with_it():
    (run,) = report("h100-cuda-error")["runs"]
    assert run["passed"] is False
    assert run["rc"] == 1
    assert run["reasons"][:2] == ["the benchmark exited with return code 1", CUDA_ERROR]


def test_the_group_ran_through_mpirun_across_both_containers():
    data = report(f"group-{GROUP}")
    (run,) = data["runs"]
    assert data["group"] == GROUP and data["hosts"] == ["h100-a", "h100-b"]
    assert run["passed"] is True and run["gate_gbps"] is None
    mpirun = run["cmd"][run["cmd"].index("/usr/bin/mpirun") :]
    assert mpirun[1:7] == ["--hostfile", f"/etc/gpuops/nccl_tests/{GROUP}/hostfile", "-np", "16", "--npernode", "8"]
    assert mpirun[mpirun.index("NCCL_IB_HCA") - 1] == "-x"
    # Printed (on stderr, so last) by the stand-in's rank 0 after a real MPI_Allreduce over both containers' ranks.
    assert run["output_tail"][-1] == (
        "# gpuops stand-in of all_reduce_perf: MPI_Allreduce over 16 ranks on 2 hosts (h100-a: 8, h100-b: 8): "
        "sum 136, correct; NCCL library 22203; the benchmark output is a REPLAYED capture"
    )
    # The two-node H100 capture (NVIDIA/nccl-tests#290), its lines prefixed by srun --label.
    assert run["largest_busbw_gbps"] == 155.57 and len(run["devices"]) == 16


def test_the_pairs_put_the_failure_on_the_node_it_belongs_to():
    """Pass 1: h100-a with h100-b (both pass, 155.57 GB/s against the scenario's 150), then h100-cuda-error with
    h100-a: it dies with the CUDA error, which lands on h100-cuda-error alone, as h100-a passed with h100-b; so no
    second pass runs. The launcher started both pairs through mpirun's --host list."""
    pairs = {name: report(name)["pairs"] for name in ("h100-a", "h100-b", "h100-cuda-error")}
    assert {name: p["outcome"] for name, p in pairs.items()} == {
        "h100-a": "PASS", "h100-b": "PASS", "h100-cuda-error": "FAIL"
    }  # fmt: skip
    assert pairs["h100-cuda-error"]["failed_with"] == ["h100-a"]
    assert pairs["h100-cuda-error"]["failed"].startswith(
        "all_reduce_perf pairs FAIL: failed with h100-a, which passed with others: the fault is this node's (the "
        f"benchmark exited with return code 1; {CUDA_ERROR}"
    )
    assert pairs["h100-a"]["failed"] is None and report("h100-a")["summary"].endswith(
        "all_reduce_perf pairs PASS: passed with h100-b, h100-cuda-error"
    )
    assert [(r["pass"], r["partner"], r["passed"], r["busbw_gbps"]) for r in pairs["h100-a"]["runs"]] == [
        (1, "h100-b", True, 155.57), (1, "h100-cuda-error", False, None)
    ]  # fmt: skip


@pytest.mark.on("h100-a", "h100-b", "h100-cuda-error")
def test_every_pair_node_keeps_the_whole_record(host):
    kept = json.loads(host.file("/var/lib/gpuops/nccl_tests/results.json").content_string)["pairs/all_reduce_perf"]
    assert [m["node"] for m in kept["inputs"]["members"]] == ["h100-a", "h100-b", "h100-cuda-error"]
    assert [m["gate_gbps"] for m in kept["inputs"]["members"]] == [150, 150, 150]
    first, second = kept["measurement"]["entries"]
    assert (first["pass"], first["nodes"], second["nodes"]) == (1, ["h100-a", "h100-b"], ["h100-cuda-error", "h100-a"])
    cmd = second["measurement"]["cmd"]
    mpirun = cmd[cmd.index("/usr/bin/mpirun") :]
    hosts = "molecule-nccl_tests-h100-cuda-error:8,molecule-nccl_tests-h100-a:8"
    assert mpirun[1:7] == ["-np", "16", "--npernode", "8", "--host", hosts]
    assert "/opt/nccl-tests/current/build/all_reduce_perf" in mpirun
    assert second["measurement"]["rc"] == 1 and CUDA_ERROR in second["measurement"]["errors"]
    assert first["measurement"]["output_tail"][-1].startswith(
        "# gpuops stand-in of all_reduce_perf: MPI_Allreduce over 16 ranks on 2 hosts (h100-a: 8, h100-b: 8)"
    )


def test_no_private_key_in_the_reports():
    for path in REPORTS.glob("*.json"):
        assert "PRIVATE KEY" not in path.read_text(), path


def test_nccl_and_open_mpi_sit_at_their_pinned_versions_and_are_held(host):
    held = set(host.check_output("apt-mark showhold").split())
    for package, version in [("libnccl2", "2.22.3-1-1"), ("libnccl-dev", "2.22.3-1-1"),
                             ("openmpi-bin", "5.0.7-1"), ("libopenmpi-dev", "5.0.7-1")]:  # fmt: skip
        assert host.package(package).version == version
        assert package in held
    # libnccl2 brings no driver userland (it depends on libc and libstdc++ only).
    assert not host.run("dpkg-query -W libcuda1").succeeded


def test_the_build_comes_from_the_verified_tarball_or_the_pinned_commit(host):
    # The command runs under coreutils timeout: [timeout, --kill-after=30, seconds, binary, args...].
    binary = Path(report(host.backend.get_hostname())["runs"][0]["cmd"][3])
    source = binary.parent.parent
    if host.backend.get_hostname() == "h100-cuda-error":
        # Cloned from the stand-in's git repository in the mirror, checked out at the commit the bench made.
        mirror = json.loads((Path(os.environ["MOLECULE_PROJECT_DIRECTORY"]) / ".bench/mirror/mirror.json").read_text())
        commit = mirror["standin_git"]["github.com/NVIDIA/nccl-tests.git"]
        # The clone is the benchmark user's: git refuses another owner's repository without safe.directory.
        git = f"git -c safe.directory={source} -C {source}"
        assert host.check_output(f"{git} rev-parse HEAD") == commit
        assert host.check_output(f"{git} status --porcelain --untracked-files=no") == ""
        assert source.name == f"src-{commit[:12]}" and not host.file(f"{source}.tar.gz").exists
    else:
        checksum = host.check_output(f"sha256sum {source}.tar.gz").split()[0]
        assert source.name == f"src-{checksum[:12]}"
    for benchmark in ["all_reduce_perf", "all_gather_perf", "reduce_scatter_perf", "alltoall_perf"]:
        assert host.file(f"{source}/build/{benchmark}").mode & 0o111
    libraries = host.check_output(f"ldd {binary}")
    assert "libnccl.so.2" in libraries and "libmpi.so.40" in libraries
    # mpirun starts /opt/nccl-tests/current/build/<benchmark> on every node of a run: each its own build.
    assert host.file("/opt/nccl-tests/current").linked_to == str(source)


@pytest.mark.on(LAUNCHER)
def test_the_launcher_holds_the_groups_key_hostfile_and_host_keys(host):
    home = host.user(USER).home
    key = host.file(f"{home}/.ssh/gpuops_nccl_tests_{GROUP}")
    assert (key.user, key.mode) == (USER, 0o600)
    config = f"/etc/gpuops/nccl_tests/{GROUP}"
    assert host.file(f"{config}/hostfile").content_string.splitlines()[-2:] == [
        "molecule-nccl_tests-h100-a slots=8",
        "molecule-nccl_tests-h100-b slots=8",
    ]
    known = host.file(f"{config}/known_hosts").content_string
    assert re.search(r"^molecule-nccl_tests-h100-b ssh-ed25519 \S+$", known, re.M)
    assert "StrictHostKeyChecking yes" in host.file(f"{config}/ssh_config").content_string


@pytest.mark.on("h100-a", "h100-b")
def test_every_node_of_the_group_authorizes_the_launchers_key_from_the_launcher_only(host):
    authorized = host.file(f"{host.user(USER).home}/.ssh/authorized_keys")
    assert (authorized.user, authorized.mode) == (USER, 0o600)
    # One line per group key, restricted (no forwarding, no terminal) to the launcher's addresses as this node
    # resolves its name; the multi-node runs show that mpirun still gets in.
    (line,) = [line for line in authorized.content_string.splitlines() if line.endswith(f"gpuops nccl_tests {GROUP}")]
    launcher = host.check_output("getent ahosts molecule-nccl_tests-h100-a | awk '{print $1}' | sort -u").split()
    assert line.startswith(f'restrict,from="{",".join(sorted(launcher))}" ssh-ed25519 '), line


@pytest.mark.on("h100-a", "h100-b", "h100-cuda-error")
def test_the_account_is_the_roles_and_builds_nccl_tests(host):
    assert host.user(USER).gecos == "gpuops.bringup nccl_tests benchmark user"
    # The build ran as the user (never root): what make wrote is the user's.
    (source,) = host.check_output("ls -d /opt/nccl-tests/src-*/ | head -1").split()
    assert host.file(f"{source}build/all_reduce_perf").user == USER
    assert host.file(f"{source}build/.gpuops-built").user == USER


@pytest.mark.on("h100-cuda-error")
def test_a_node_outside_the_group_gets_the_pairs_trust_only(host):
    lines = host.file(f"{host.user(USER).home}/.ssh/authorized_keys").content_string.splitlines()
    assert [line.rsplit(" ", 3)[1:] for line in lines] == [["gpuops", "nccl_tests", "pairs"]]
    assert lines[0].startswith("restrict,from=")


@pytest.mark.on(LAUNCHER)
def test_the_pairs_launcher_knows_every_pair_node(host):
    assert host.file(f"{host.user(USER).home}/.ssh/gpuops_nccl_tests_pairs").mode == 0o600
    known = host.file("/etc/gpuops/nccl_tests/pairs/known_hosts").content_string
    for name in ("h100-a", "h100-b", "h100-cuda-error"):
        assert re.search(rf"^molecule-nccl_tests-{name} ssh-ed25519 \S+$", known, re.M), known
    assert not host.file("/etc/gpuops/nccl_tests/pairs/hostfile").exists


def test_the_gate_judges_the_kept_measurements_without_running_them_again():
    """With the gate on and the average bus bandwidth as metric: the H100 capture's average (439.369) is below 460
    and the CUDA error node fails with its error; nothing is run again (a changed gate judges, it does not measure)."""
    gate = {
        "nccl_tests_fail_on_gate": True,
        "nccl_tests_busbw_metric": "avg",
        "nccl_tests_report_dir": f"{REPORTS}-gate",
    }
    proc = playbook("-e", json.dumps(gate))
    recap = dict(re.findall(r"^(\S+)\s+:\s+ok=\d+\s+changed=\d+\s+unreachable=0\s+failed=(\d)", proc.stdout, re.M))
    assert recap == {"h100-a": "1", "h100-b": "1", "h100-cuda-error": "1"}, proc.stdout[-4000:]
    output = " ".join((proc.stdout + proc.stderr).split())
    assert "avg bus bandwidth 439.369 GB/s is below min_busbw_gbps 460" in output
    assert f"all_reduce_perf: the benchmark exited with return code 1; {CUDA_ERROR}" in output
    assert "all_reduce_perf pairs FAIL: failed with h100-a, which passed with others" in output
    gated = json.loads((Path(f"{REPORTS}-gate") / "h100-a.json").read_text())
    assert gated["runs"][0]["measured_at"] == report("h100-a")["runs"][0]["measured_at"]


def test_acceptance_judges_the_kept_measurement_against_the_profiles_gate(tmp_path):
    """The acceptance stage reads what this stage kept: with a site's own gate above the capture's 476.53 GB/s (the
    profile's gates.nccl_all_reduce_busbw_gbps: 480), the healthy nodes' NCCL check fails as below the gate, and the
    CUDA error node's as a failed run."""
    variables = tmp_path / "gate.json"
    variables.write_text(json.dumps({
        "gpuops_hardware_overrides": {"gates": {"nccl_all_reduce_busbw_gbps": 480, "nccl_pair_busbw_gbps": 150}},
        "acceptance_fail_unaccepted": False,
        "acceptance_counter_interval": 1,
        "acceptance_results_dir": str(tmp_path / "reports"),
    }))  # fmt: skip
    proc = subprocess.run(
        ["ansible-playbook", "-i", os.environ["MOLECULE_INVENTORY_FILE"], str(ROOT / "playbooks" / "acceptance.yml"),
         "-e", f"@{variables}"],
        capture_output=True, text=True, check=False,
        env={**os.environ, "ANSIBLE_FORCE_COLOR": "0", "ANSIBLE_NOCOLOR": "1"},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-4000:]
    # The run's directory (beside it, the results directory's index.html).
    (run,) = [p for p in (tmp_path / "reports").iterdir() if p.is_dir()]
    checks = {
        name: next(c for c in json.loads((run / "nodes" / f"{name}.json").read_text())["checks"]
                   if c["id"] == "nccl.single_node")
        for name in ("h100-a", "h100-b", "h100-cuda-error")
    }  # fmt: skip
    for name in ("h100-a", "h100-b"):
        found = checks[name]
        expected = ("FAIL", "nccl_below_gate", 476.53, 480)
        assert (found["status"], found["fault"], found["value"], found["gate"]) == expected
        assert "largest bus bandwidth 476.53 GB/s is below min_busbw_gbps 480" in found["reason"], found
    failed = checks["h100-cuda-error"]
    assert (failed["status"], failed["fault"]) == ("FAIL", "nccl_failed")
    assert CUDA_ERROR in failed["reason"]
    # The pairs, at the site's pair gate of 150.
    pairs = {
        name: next(c for c in json.loads((run / "nodes" / f"{name}.json").read_text())["checks"]
                   if c["id"] == "nccl.pairs")
        for name in ("h100-a", "h100-b", "h100-cuda-error")
    }  # fmt: skip
    assert {name: (c["status"], c["fault"]) for name, c in pairs.items()} == {
        "h100-a": ("PASS", None), "h100-b": ("PASS", None), "h100-cuda-error": ("FAIL", "nccl_pair_failed")
    }  # fmt: skip
    assert pairs["h100-b"]["reason"] == "all_reduce_perf with h100-a 155.57 GB/s, gate 150"


@pytest.mark.on("h100-cuda-error")
def test_a_node_whose_driver_sees_fewer_gpus_stops_in_preflight(host, stage_run, replay_fault):
    """A GPU fallen off the bus (a real capture's GPU 3 removed, tests/fixtures/nvidia_smi): the stage stops before
    building or running anything, naming the count and the fix."""
    capture = (
        Path(os.environ["MOLECULE_PROJECT_DIRECTORY"])
        / "tests/fixtures/nvidia_smi/h100-sxm-x8-565-gpu3-missing.derived.xml"
    )
    # The whole play: a limit cutting the multi-node group is refused before the GPUs are read.
    with replay_fault(host, "nvidia-smi", "-q -x", capture):
        rc, output = stage_run(CONVERGE, "nccl_tests_preflight")
    assert rc != 0
    assert (
        "h100-cuda-error: nvidia-smi sees 7 of the 8 GPUs of profile hgx_h100_8gpu: nccl-tests would fail with CUDA "
        "errors. Fix: the driver stage (playbooks/nvidia_driver.yml) first; the acceptance stage "
        "(playbooks/acceptance.yml) says which GPU checks fail." in output
    ), output[-3000:]
    assert re.search(r"h100-cuda-error : ok=\d+ changed=0 unreachable=0 failed=1", output), output[-2000:]
    assert re.search(r"h100-a : ok=\d+ changed=0 unreachable=0 failed=0", output), output[-2000:]
