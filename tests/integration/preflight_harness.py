"""What the bad-input tests of the stage roles share: running a role's preflight in check mode, on the machine running
the tests or on bench nodes, and reading its failure.

Each test file names its playbook and tag; a case passes when the play fails on the host with the expected sentences
and nothing changed (changed=0).
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / ".collections"))

from ansible_collections.gpuops.bringup.plugins.module_utils import hardware_profiles  # noqa: E402

BENCH = ROOT / "tests" / "bench" / "bench.py"
MIRROR = "http://gpuops-mirror:8080"
# Real os-release files of other OSes (sources in tests/fixtures/SOURCES.md).
RELEASES = ROOT / "tests" / "fixtures" / "os-release"
# The bench's key signs its stand-in repositories; the bench records its fingerprint (templated by Ansible).
BENCH_KEY_FINGERPRINT = (
    "{{ (lookup('ansible.builtin.file', playbook_dir ~ '/../../.bench/mirror/mirror.json') | from_json)"
    ".local_repo_key_fingerprint }}"
)


def hardware_profile(name: str) -> dict:
    """The gpuops_hardware of a profile the collection ships."""
    return copy.deepcopy(hardware_profiles.BUILTIN[name])


def unfold(text: str) -> str:
    """Messages are folded in the output, with YAML's doubled quotes: compare them unfolded."""
    return re.sub(r"\s+", " ", text).replace("''", "'")


def run_preflight(playbook: Path, tag: str, tmp_path: Path, inventory: list[str], variables: dict,
                  limit: str | None = None) -> subprocess.CompletedProcess:  # fmt: skip
    """ansible-playbook --check --tags <tag> with the variables as extra vars."""
    extra = tmp_path / "vars.json"
    extra.write_text(json.dumps(variables))
    argv = ["ansible-playbook", *inventory, "--check", "--tags", tag, "--extra-vars", f"@{extra}", str(playbook)]
    if limit:
        argv[1:1] = ["--limit", limit]
    return subprocess.run(
        argv,
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )


def run_local(playbook: Path, tag: str, tmp_path: Path, variables: dict) -> subprocess.CompletedProcess:
    """The preflight on the machine running the tests (it has no NVIDIA GPU and no NVSwitch)."""
    # Modules run with the tests' own Python: interpreter discovery on a developer machine may find shims.
    return run_preflight(
        playbook,
        tag,
        tmp_path,
        ["--inventory", "localhost,", "--connection", "local"],
        {**variables, "ansible_python_interpreter": sys.executable},
    )


def assert_fails_with(proc: subprocess.CompletedProcess, host: str, expected: list[str]) -> None:
    output = unfold(proc.stdout + proc.stderr)
    assert proc.returncode != 0, output[-3000:]
    for text in expected:
        assert unfold(text) in output, f"{text!r} not in:\n{output[-3000:]}"
    assert re.search(rf"{host}\s*: ok=\d+\s+changed=0\s+unreachable=0\s+failed=1", proc.stdout), proc.stdout[-2000:]


class CaseRun:
    """One ansible-playbook --check run (or a real one, for what only a real run does) for many cases at once, each
    case an inventory host of its own.

    A run costs seconds of controller CPU before its first task (Python, the collection, the roles' argument specs);
    one run per case spent most of the integration suite's time there. A case's host carries the case's variables as
    host variables (they override group variables and role defaults, which is what the cases set) and the
    connection of the node it stands for: the machine running the tests, or a bench node, which several cases then
    share. Hosts do not see each other's facts or variables, so the cases stay independent; the JSON callback gives
    each host's results apart. Messages name the host: expected texts say {host} where they name it.
    """

    def __init__(self, playbook: Path, tag: str, tmp_path: Path, hosts: dict[str, dict], check: bool = True):
        inventory = tmp_path / "cases.json"
        inventory.write_text(json.dumps({"all": {"hosts": hosts}}))
        proc = subprocess.run(
            [
                "ansible-playbook",
                "--inventory",
                str(inventory),
                *(["--check"] if check else []),
                "--tags",
                tag,
                str(playbook),
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=False,
            env={**os.environ, "ANSIBLE_STDOUT_CALLBACK": "ansible.posix.json"},
        )
        # Everything the run printed: where a test looks for a secret that must not be there.
        self.output = proc.stdout + proc.stderr
        try:
            self.result = json.loads(proc.stdout)
        except json.JSONDecodeError as error:
            output = (proc.stdout + proc.stderr)[-3000:]
            raise AssertionError(f"no JSON from ansible-playbook ({error}):\n{output}") from error

    def text(self, host: str) -> str:
        """Every message the host's tasks returned, unfolded, in order."""
        found: list[str] = []

        def collect(value) -> None:
            if isinstance(value, dict):
                for key, item in value.items():
                    if key in ("msg", "warnings") and isinstance(item, str):
                        found.append(item)
                    elif key == "warnings" and isinstance(item, list):
                        found.extend(str(w) for w in item)
                    else:
                        collect(item)
            elif isinstance(value, list):
                for item in value:
                    collect(item)

        for play in self.result["plays"]:
            for task in play["tasks"]:
                collect(task["hosts"].get(host, {}))
        return unfold(" ".join(found))

    def failures(self, host: str) -> str:
        """The host's failed results, whole: what an assertion shows when the expected text is missing."""
        failed = [
            {"task": task["task"]["name"], **result}
            for play in self.result["plays"]
            for task in play["tasks"]
            if (result := task["hosts"].get(host, {})).get("failed")
        ]
        return json.dumps(failed, indent=1)[-4000:]

    def assert_fails_with(self, host: str, expected: list[str]) -> None:
        """The host failed (once, nothing changed) with every expected text."""
        output = self.text(host)
        stats = self.result["stats"][host]
        assert (stats["failures"], stats["changed"], stats["unreachable"]) == (1, 0, 0), (stats, output[-3000:])
        for text in expected:
            text = unfold(text.replace("{host}", host))
            assert text in output, f"{text!r} not in:\n{output[-3000:]}\n{self.failures(host)}"

    def assert_passes_unchanged(self, host: str) -> str:
        """The control case: the host passed with nothing changed; returns its messages."""
        output = self.text(host)
        stats = self.result["stats"][host]
        assert (stats["failures"], stats["changed"], stats["unreachable"]) == (0, 0, 0), (stats, output[-3000:])
        return output


def local_cases(cases: dict[str, dict]) -> dict[str, dict]:
    """Hosts for cases run on the machine running the tests, named after their cases."""
    # Modules run with the tests' own Python: interpreter discovery on a developer machine may find shims.
    local = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
    return {case: {**local, **variables} for case, variables in cases.items()}


def local_case_tests(playbook: Path, tag: str, cases: dict[str, tuple[dict, list[str]]], extra: dict | None = None):
    """The bad-input cases a stage runs on the machine running the tests ({case: (variables, expected sentences)}):
    a module-scoped fixture `case_run`, one check-mode run of every case and the extra hosts ({name: variables}, such
    as a control the module tests itself), and the test that each case fails in preflight with its sentences. A test
    module assigns both: `case_run, test_bad_input_fails_in_preflight = local_case_tests(...)`."""

    @pytest.fixture(scope="module", name="case_run")
    def run(tmp_path_factory) -> CaseRun:
        hosts = local_cases({**{case: variables for case, (variables, _expected) in cases.items()}, **(extra or {})})
        return CaseRun(playbook, tag, tmp_path_factory.mktemp("cases"), hosts)

    @pytest.mark.parametrize("case", sorted(cases))
    def test_bad_input_fails_in_preflight(case_run: CaseRun, case: str) -> None:
        case_run.assert_fails_with(case, cases[case][1])

    return run, test_bad_input_fails_in_preflight


def node_cases(inventory: Path, cases: dict[str, tuple[str, dict]]) -> dict[str, dict]:
    """Hosts for cases run on bench nodes ({case: (node, variables)}), named after their cases, each reaching its
    node as the node's own inventory entry does."""
    nodes = json.loads(inventory.read_text())["all"]["hosts"]
    return {case: {**nodes[node], **variables} for case, (node, variables) in cases.items()}


class Nodes:
    """Bench nodes started for a test module: their inventory file and a way to run commands in them."""

    def __init__(self, inventory: Path, containers: dict[str, str]):
        self.inventory = inventory
        self.containers = containers

    def sh(self, node: str, script: str) -> None:
        subprocess.run(["podman", "exec", self.containers[node], "sh", "-c", script], check=True, capture_output=True)

    def debian_sources(self, node: str, suite: str) -> None:
        """What stage 1 leaves behind: Debian's archive with the components NVIDIA's packages are in, through the
        bench's mirror (a cache), and a fresh package index with apt's periodic stamp. A preflight refreshes an index
        over an hour old, and of cases sharing the node in one run all but one would fail on apt's lock."""
        self.sh(node, f"echo 'deb {MIRROR}/deb.debian.org/debian {suite} main contrib non-free non-free-firmware' "
                      "> /etc/apt/sources.list && apt-get update -qq && mkdir -p /var/lib/apt/periodic "
                      "&& touch /var/lib/apt/periodic/update-success-stamp")  # fmt: skip

    def os_release(self, node: str, release: str) -> None:
        """A real os-release of another OS (tests/fixtures/os-release) in place of Debian's, which is a link to
        /usr/lib/os-release: the link is replaced by the file."""
        self.sh(node, "rm -f /etc/os-release")
        subprocess.run(["podman", "cp", str(RELEASES / release), f"{self.containers[node]}:/etc/os-release"],
                       check=True)  # fmt: skip

    def rhel_userland(self, node: str, major: str) -> None:
        """A node of the debian12-rpm image (tests/bench/images/rpm.Containerfile: rpm, dnf 4 and its core plugins
        set up as RHEL has them) given what its rpm database lacks: the release version dnf reads (RHEL's comes from
        its system-release package) and /bin/sh, which rpm scriptlets require (RHEL's bash provides it; here dpkg
        owns the shell)."""
        self.sh(node, f"echo {major} > /etc/dnf/vars/releasever")
        self.rpm_installed(node, "gpuops-bench-base", "1-1", "/bin/sh")

    def rpm_installed(self, node: str, name: str, evr: str, provides: str) -> None:
        """An installed rpm of that name and [epoch:]version-release providing `provides` (and no files): the
        package state a test needs, built on the node with Debian's rpmbuild and installed into its rpm database."""
        epoch, _sep, rest = evr.rpartition(":")
        version, release = rest.rsplit("-", 1)
        spec = (f"Name: {name}\nVersion: {version}\nRelease: {release}\nEpoch: {epoch or 0}\nSummary: bench\n"
                f"License: none\nBuildArch: x86_64\nAutoReqProv: no\nProvides: {provides}\n%description\nbench\n"
                "%files\n")  # fmt: skip
        self.sh(node, f"mkdir -p /tmp/rpmbuild && printf '%s' '{spec}' > /tmp/rpmbuild/{name}.spec "
                      f"&& rpmbuild -bb --quiet --define '_topdir /tmp/rpmbuild' /tmp/rpmbuild/{name}.spec "
                      f"&& rpm -i --nodeps /tmp/rpmbuild/RPMS/x86_64/{name}-*.rpm && rm -rf /tmp/rpmbuild")  # fmt: skip

    def ubuntu(self, node: str) -> None:
        """A real Ubuntu 24.04 os-release in place of Debian's."""
        self.os_release(node, "ubuntu-24.04")


@contextlib.contextmanager
def bench_nodes(tmp_path_factory, group: str, specs: list[dict], groups: list[str] = ()):
    """Start bench nodes ({name, image, hardware}) named <group>-<name>, each also in groups; remove them
    afterwards."""
    inventory = tmp_path_factory.mktemp(group) / "hosts.json"
    started = subprocess.run(
        [sys.executable, str(BENCH), "nodes", "up", "--prefix", group, json.dumps(specs), "--inventory",
         str(inventory), *(["--groups", ",".join(groups)] if groups else [])],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if started.returncode != 0:
        subprocess.run([sys.executable, str(BENCH), "nodes", "down", group], check=False)
        pytest.fail(f"bench nodes for {group} did not start:\n{started.stderr[-3000:]}", pytrace=False)
    try:
        yield Nodes(inventory, {node["instance"]: node["container"] for node in json.loads(started.stdout)})
    finally:
        subprocess.run([sys.executable, str(BENCH), "nodes", "down", group], check=True)
