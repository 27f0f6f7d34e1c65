"""Every parser of tool output the collection ships, with the captures it is tested on and the errors it may raise.

One table for the property tests (test_parser_properties.py), the linear-time tests (test_parser_linear.py) and
tests/bench/benchmark_parsers.py. A parser here is a function of one text (or bytes) that calls the collection's
parser with the arguments its module passes; `errors` is what it may raise: its own documented ParseError subclass,
nothing else. A parser added to plugins/module_utils gets a row here (test_every_parser_is_listed checks the names).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / ".collections"))

from ansible_collections.gpuops.bringup.plugins.module_utils import (  # noqa: E402
    acceptance,
    acceptance_evidence,
    apt,
    container_toolkit,
    cuda_toolkit,
    dcgm,
    dkms,
    dnf,
    ethtool,
    hardware_profiles,
    infiniband,
    kubernetes_node,
    nccl_tests,
    nvidia_smi,
    openpgp,
    osinfo,
    parsing,
    pci,
    perftest,
    rpm,
    signed_release,
    simulation,
    xid,
)
from ansible_collections.gpuops.bringup.plugins.modules import (  # noqa: E402
    container_toolkit_facts,
    dnf_module_stream,
)
from ansible_collections.gpuops.bringup.plugins.plugin_utils import rack_manifest  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures"
RUNTIME = "/usr/bin/nvidia-container-runtime"


@dataclass(frozen=True)
class Parser:
    name: str
    parse: Callable
    fixtures: tuple[str, ...]
    errors: tuple[type[BaseException], ...] = ()
    binary: bool = False
    # Plain literals to seed the search where no capture exists.
    seeds: tuple[str, ...] = field(default=())
    # (prefix, unit, suffix): unit repeated to the input size between the two, for inputs known to have made
    # this parser super-linear (the review's and the fuzzers' findings).
    hostile: tuple[tuple[str, str, str], ...] = field(default=())

    def inputs(self) -> list:
        """The captures (bytes for a binary parser, text decoded as run_command does otherwise), then the seeds."""
        found = []
        for pattern in self.fixtures:
            for path in sorted(FIXTURES.glob(pattern)):
                if path.is_file():
                    data = path.read_bytes()
                    found.append(data if self.binary else data.decode("utf-8", "replace"))
        found += [s.encode() if self.binary else s for s in self.seeds]
        assert found, f"{self.name}: no capture matches {self.fixtures} and no seed given"
        return found


RELEASE = (FIXTURES / "apt" / "bookworm.Release").read_bytes()
RELEASE_KEY = (FIXTURES / "openpgp" / "debian-archive-bookworm-automatic.asc").read_bytes()


def _release_signature(signature):
    """A Release signature (Release.gpg) checked as repository_index checks it: over the Release, with a real key."""
    return signed_release.verify(RELEASE, signature, RELEASE_KEY)


def _manifest(data, name):
    """A rack manifest as the inventory plugin reads it: nodes or problems, never both."""
    nodes, problems = rack_manifest.load(data, name, set(hardware_profiles.BUILTIN))
    assert not (nodes and problems)
    return nodes, problems


def _xid(text):
    return xid.scan(text), len(xid.parse_events(text))


H100 = {
    "profile": "hgx_h100_8gpu",
    "gpu": {"model": "NVIDIA H100 80GB HBM3", "count": 8, "nvswitch": True, "nvlinks": 18},
    "infiniband": {"ports": 8, "rate_gbps": 400, "link_layer": "InfiniBand"},
}


def _acceptance(text):
    """A node whose every evidence item printed text: each of the acceptance stage's readers (nvidia-smi, lspci,
    ibstat, the kernel log, dkms, systemctl, the packages, dmidecode, the JSON snapshots) over it, then every check."""
    item = {"cmd": ["tool"], "rc": 0, "stdout": text, "stderr": "", "truncated": False}
    result = acceptance.node_results("n1", H100, dict.fromkeys(acceptance_evidence.FILES, item))
    return result["verdict"], result["counts"]


def _gpu(text):
    return nvidia_smi.findings(
        nvidia_smi.parse_query_xml(text), expected_count=8, expected_model="NVIDIA H100 80GB HBM3"
    )


def _ib(text):
    parsed = infiniband.parse_ibstat(text)
    devices = infiniband.merge([], parsed["devices"])
    return infiniband.findings(devices, 8, 400.0, "InfiniBand"), infiniband.active_ports(devices, "InfiniBand")


def _pci(text):
    read = pci.read_lspci_nn(text)
    return pci.inventory(read["devices"]), pci.unread_finding(read["unread"])


def _nccl(text):
    return nccl_tests.verdict(nccl_tests.parse(text), 0, 100.0, "largest")


def _os_release(text):
    return osinfo.os_identity(osinfo.parse_os_release(text), "x86_64")


def _kernels(text):
    # The sort keys of the kernels os_facts lists in /boot, in both families' orders (a key, not a parser: what it
    # returns is the input reordered, so only its count is the result).
    names = text.split()[:2000]
    return len(sorted(names, key=osinfo.kernel_order("Debian"))), len(sorted(names, key=osinfo.kernel_order("RedHat")))


def _rpm_query(text):
    packages = osinfo.parse_rpm_query(text)
    return packages, osinfo.classify_kernel_packages(packages, "5.14.0-503.el9.x86_64", "RedHat")


def _dpkg_query(text):
    packages = osinfo.parse_dpkg_query(text)
    installed = {name: p["version"] for name, p in packages.items() if p["installed"]}
    return packages, osinfo.classify_kernel_packages(installed, "6.1.0-50-amd64", "Debian")


def _halves(compare):
    def run(text):
        half = len(text) // 2
        return compare(text[:half], text[half:])

    return run


def _versions(text):
    # Pickers, not parsers: where the newest of the words is by each order, and each upstream part's length.
    words = text.split()[:2000]
    where = [words.index(newest) if words else None for newest in (apt.newest(words), rpm.newest(words))]
    return where, [len(apt.upstream_version(w)) for w in words]


def _control(text):
    stanzas = cuda_toolkit.parse_control(text)
    return (
        cuda_toolkit.driver_library_minimum(stanzas),
        [cuda_toolkit.provided_driver_version(s) for s in stanzas],
        [cuda_toolkit.is_driver_package(s) for s in stanzas],
    )


def _make_log(text):
    return dkms.parse_make_log(text, "/var/lib/dkms/nvidia/550.163.01/build")


PARSERS = [
    Parser(
        "nvidia_smi.parse_query_xml",
        _gpu,
        ("nvidia_smi/*.xml",),
        (nvidia_smi.NvidiaSmiParseError,),
        hostile=(("", "<!DOCTYPE x [", ""), ("<!DOCTYPE x [", "]", ""), ("<nvidia_smi_log><attached_gpus>", "9", "")),
    ),
    Parser(
        "nvidia_smi.parse_topology",
        nvidia_smi.parse_topology,
        ("nvidia_smi/*.topo.txt",),
        (nvidia_smi.NvidiaSmiParseError,),
    ),
    Parser(
        "nvidia_smi.parse_nvlink_status",
        nvidia_smi.parse_nvlink_status,
        ("nvidia_smi/*.nvlink.txt",),
        (nvidia_smi.NvidiaSmiParseError,),
    ),
    Parser("nvidia_smi.classify_failure", lambda t: nvidia_smi.classify_failure(6, t, t), ("nvidia_smi/*.txt",)),
    Parser(
        "xid.scan",
        _xid,
        ("xid/*.log", "xid/*.out"),
        hostile=(("", "NVRM: Xid (", ""), ("NVRM: Xid (PCI:0000:3b:00): ", "1", "x"), ("", "6,", "NVRM")),
    ),
    Parser(
        "xid.driver_messages",
        xid.driver_messages,
        ("xid/*.log",),
        hostile=(
            ("", "NVRM: API mismatch: the client has the version 1.2, but ", ""),
            ("[ 1.0] NVRM: ", "API mismatch: the client 'x' (pid 1) ", ""),
            ("", "NVRM: loading NVIDIA UNIX Open Kernel Module for ", "x"),
            ("", "[ 1.0] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  1.2\n", ""),
        ),
    ),
    Parser(
        "acceptance.read_state",
        _acceptance,
        (
            "nvidia_smi/*.xml",
            "xid/*.log",
            "dmidecode/*.txt",
            "dkms/*.txt",
            "infiniband/ibstat/*",
            "infiniband/perfquery/*",
            "ethtool/*",
            "dcgm/*",
        ),
        seeds=(
            '{"interval_s": 1, "samples": [{"mlx5_0/1": {"rc": 0, "stdout": "LinkDownedCounter:..1"}}, {}]}',
            '{"interval_s": 1, "samples": [{"mlx5_0/1": {"rc": 0, "stdout": " rx_crc_errors_phy: 1"}}, {}]}',
            "Id=nvidia-fabricmanager.service\nLoadState=loaded\nActiveState=active\n\n",
            "nvidia-fabricmanager-535\t535.309.01-1\tii \tinstall\n",
            '{"node/all_reduce_perf": {"measurement": {}}}',
            '{"files": {"class/infiniband": "x"}, "dirs": {"class/infiniband": ["mlx5_0"]}}',
        ),
        hostile=(
            ("", "Id=a\n", ""),
            ("System Information\n", "\tSerial Number: x\n", ""),
            ("", "[", ""),
            ("", "x\ty\tii \tinstall\n", ""),
        ),
    ),
    Parser(
        "nccl_tests.parse",
        _nccl,
        ("nccl/*.txt",),
        hostile=(
            ("Channel 00/0 : 0 via NET/IB/0", " ", "x"),
            ("NCCL WARN x", " ", "y"),
            ("", "Connected all rings ", ""),
            ("", "mpirun noticed that process rank 1 ", ""),
            ("#  Rank  0 Pid 1 on h device 0 [0x18] x", " ", "y"),
            ("", "1 ", ""),
        ),
    ),
    Parser(
        "perftest.parse_write_bw",
        lambda t: perftest.parse_write_bw(t, t),
        ("perftest/*",),
        hostile=(("", "\n", "x"), ("", " ", "#bytes")),
    ),
    Parser(
        "infiniband.parse_ibstat",
        _ib,
        ("infiniband/ibstat/*.txt", "infiniband/ibstat/*.stdout"),
        hostile=(("CA 'mlx5_0'\n\tRate:", " ", "x"), ("CA 'mlx5_0'\nA", " ", "\n")),
    ),
    Parser(
        "infiniband.parse_perfquery",
        infiniband.parse_perfquery,
        ("infiniband/perfquery/*",),
        hostile=(
            ("# Port counters: Lid 1 port 1 (CapMask: 0x5A00)\n", "SymbolErrorCounter:......", "9"),
            ("", "SymbolErrorCounter:", "\n"),
            ("# Port extended counters: Lid", " ", "1 port 1"),
            ("", "ibwarn: ", "x"),
        ),
    ),
    Parser(
        "ethtool.parse_stats",
        ethtool.parse_stats,
        ("ethtool/*",),
        hostile=(("NIC statistics:\n", "     rx_crc_errors_phy: 1\n", ""), ("", " ", ":"), ("", "a", ": 1")),
    ),
    Parser(
        "infiniband.parse_rdma_link",
        infiniband.parse_rdma_link,
        ("infiniband/rdma-link/*",),
        hostile=(("link mlx5_0/1", " ", "x"), ("", "link mlx5_0/1 state ACTIVE netdev p1p1\n", ""), ("link ", "a", "")),
    ),
    Parser(
        "nvidia_smi.parse_gpu_list",
        nvidia_smi.parse_gpu_list,
        ("container/nvidia-smi-L-*",),
        hostile=(("GPU 0: ", "x", " (UUID: GPU-1)"), ("GPU 0: a\n", "  MIG 1g.5gb  Device  0: (UUID: M)\n", "")),
    ),
    Parser(
        "container_toolkit.runtime_error",
        container_toolkit.runtime_error,
        ("container/*.stderr.txt",),
        hostile=(("", "nvidia-container-cli: ", "x"), ("", "x ", "\n")),
    ),
    Parser(
        "cuda_toolkit.parse_check_output",
        cuda_toolkit.parse_check_output,
        ("cuda/*.txt",),
        hostile=(
            ("", "device 0 0000:18:00 failed: x", ", last value 0"),
            ("Check failed: (", "(", ") : x"),
            ("", "code=1(cudaError", "x)"),
        ),
    ),
    Parser(
        "dcgm.parse_diag",
        dcgm.parse_diag,
        ("dcgm/*",),
        (dcgm.DcgmParseError,),
        hostile=(
            ("", "{", ""),
            ('{"DCGM GPU Diagnostic": {"test_categories": [', "{}, ", "]}}"),
            ("| Diagnostic | Result |\n", "|  | Pass - GPUs: 0, |\n", ""),
            ("| Warning | x |\n", "|   | yyyyyyyy |\n", ""),
            ("", "Error: x\n", ""),
            ("|-----  ", " ", "Deployment  ---+---|"),
        ),
    ),
    Parser(
        "pci.read_lspci_nn",
        _pci,
        ("pci/*.txt",),
        (pci.PciParseError,),
        hostile=(
            ("0000:00:00.0 VGA [0300]: x [10de:1234]", " (a)", "x"),
            ("0000:00:00.0 a", " ", "x"),
            ("0000:00:00.0 VGA [0300]: ", "[10de:1234] ", "x"),
        ),
    ),
    Parser("osinfo.parse_os_release", _os_release, ("os-release/*", "os/*/root/etc/os-release")),
    Parser(
        "osinfo.parse_cmdline",
        osinfo.parse_cmdline,
        ("os/*/root/proc/cmdline",),
        hostile=(("", '"', ""), ("a=", "0", "")),
    ),
    Parser(
        "osinfo.parse_dpkg_query",
        _dpkg_query,
        ("os/*/commands/dpkg-query.txt", "apt/*.dpkg-query.stdout"),
        hostile=(("linux-image-", "0", "\t1\tii \tinstall\n"),),
    ),
    Parser(
        "osinfo.parse_rpm_query",
        _rpm_query,
        ("dnf/rpm-q-evr.stdout",),
        seeds=("kernel-core\t5.14.0-503.el9.x86_64\nkernel-core\t5.14.0-503.11.1.el9_5.x86_64\n",),
        hostile=(("", "kernel\t1.0-1.x\nkernel\t1.1-1.x\nkernel\t1.2-1.x\n", ""),),
    ),
    Parser("osinfo.kernel_order", _kernels, ("os/*/tree.txt",)),
    Parser("osinfo.parse_swaps", osinfo.parse_swaps, ("proc/swaps-*", "os/*/root/proc/swaps")),
    Parser("osinfo.fstab_swap_entries", osinfo.fstab_swap_entries, ("fstab/*", "os/*/root/etc/fstab")),
    Parser(
        "osinfo.parse_limit",
        lambda t: osinfo.parse_limit(t, "Max locked memory"),
        ("proc/limits-*", "os/*/root/proc/1/limits"),
    ),
    Parser("osinfo.effective_caps", osinfo.effective_caps, ("proc/status-*", "os/*/root/proc/self/status")),
    Parser("osinfo.parse_systemctl_show", osinfo.parse_systemctl_show, ("os/*/commands/systemctl-show-*.txt",)),
    Parser("osinfo.in_initial_pid_namespace", osinfo.in_initial_pid_namespace, ("os/*/commands/pid-namespace.txt",)),
    Parser("apt.parse_apt_policy", apt.parse_apt_policy, ("apt/*.policy.txt",)),
    Parser(
        "apt.parse_packages_index",
        lambda t: apt.parse_packages_index(t, ["cuda-toolkit-12-4", "libcuda1"]),
        ("apt/*.policy.txt",),
        seeds=("Package: libcuda1\nVersion: 550.163.01-2\n\nPackage: cuda-toolkit-12-4\nVersion: 12.4.1-1\n",),
    ),
    Parser("apt.compare_versions", _halves(apt.compare_versions), ("dnf/rpm-vercmp.txt",)),
    Parser("versions.newest", _versions, ("dnf/rpm-vercmp.txt", "apt/*.dpkg-query.stdout")),
    Parser("rpm.compare_versions", _halves(rpm.compare_versions), ("dnf/rpm-vercmp.txt",)),
    Parser(
        "rpm.parse_repoquery",
        lambda t: rpm.parse_repoquery(t, ["cuda-toolkit-12-4", "kernel"]),
        ("dnf/repoquery-*.stdout",),
    ),
    Parser("rpm.parse_installed", rpm.parse_installed, ("dnf/rpm-*.stdout",)),
    Parser("rpm.parse_versionlock", rpm.parse_versionlock, ("dnf/versionlock-*", "versionlock/**/*")),
    Parser(
        "openpgp.primary_fingerprints",
        openpgp.primary_fingerprints,
        ("openpgp/*", "keys/*"),
        (openpgp.KeyFileError,),
        binary=True,
        hostile=(("", "-----BEGIN PGP PUBLIC KEY BLOCK-----\n", ""),),
    ),
    Parser(
        "signed_release.cleartext",
        lambda t: [part.decode("utf-8") for part in signed_release.cleartext(t)],
        ("apt/*.InRelease",),
        (signed_release.SignatureError,),
        hostile=(("-----BEGIN PGP SIGNED MESSAGE-----\n", "- -\t \n", "-----BEGIN PGP SIGNATURE-----\n"),),
    ),
    Parser("signed_release.sha256_table", signed_release.sha256_table, ("apt/*.Release", "apt/*.InRelease")),
    Parser(
        "signed_release.verify",
        _release_signature,
        ("apt/*.Release.gpg",),
        (signed_release.SignatureError,),
        binary=True,
        hostile=(("", "-----BEGIN PGP SIGNATURE-----\n", ""),),
    ),
    Parser(
        "signed_release.signing_keys",
        lambda b: sorted(signed_release.signing_keys(b)),
        ("openpgp/*",),
        (signed_release.SignatureError,),
        binary=True,
    ),
    Parser("dkms.parse_dkms_status", dkms.parse_dkms_status, ("dkms/*.status.txt",)),
    Parser("dkms.parse_make_log", _make_log, ("dkms/*.make.log",)),
    Parser(
        "dkms.parse_nvrm_version",
        dkms.parse_nvrm_version,
        (),
        seeds=("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  550.163.01  Release Build  (dvs)  Sat\n",),
    ),
    Parser("dkms.loaded_nvidia_modules", dkms.loaded_nvidia_modules, ("proc/modules-*",)),
    Parser(
        "cuda_toolkit.parse_requested",
        cuda_toolkit.parse_requested,
        (),
        seeds=("12.4", "12.4.1", "11.8"),
    ),
    Parser(
        "cuda_toolkit.parse_nvcc_version",
        cuda_toolkit.parse_nvcc_version,
        (),
        seeds=("nvcc: NVIDIA (R) Cuda compiler driver\nCuda compilation tools, release 12.4, V12.4.131\n",),
    ),
    Parser(
        "cuda_toolkit.debian_toolkit_version",
        cuda_toolkit.debian_toolkit_version,
        (),
        seeds=("12.4.131~12.4.1-2", "11.8.89~11.8.0-5~deb12u1"),
    ),
    Parser(
        "cuda_toolkit.parse_simulation",
        cuda_toolkit.parse_simulation,
        (),
        seeds=("Inst libcuda1 (550.163.01-2 Debian:13.8/stable [amd64])\nRemv libfoo [1.0-1]\n",),
    ),
    Parser(
        "cuda_toolkit.parse_control",
        _control,
        ("apt/*.policy.txt",),
        seeds=(
            "Package: nvidia-cuda-dev\nSource: nvidia-cuda-toolkit (12.4.1-2)\n"
            "Depends: libcuda1 (>= 550.54.15-1) | libcuda.so.1 (>= 550)\n\n"
            "Package: libcuda1\nSource: nvidia-graphics-drivers\nProvides: libcuda.so.1 (= 550.163.01)\n",
        ),
    ),
    Parser(
        "cuda_toolkit.parse_alternatives",
        cuda_toolkit.parse_alternatives,
        ("alternatives/*",),
        seeds=(
            "Name: cuda\nLink: /usr/local/cuda\nStatus: manual\nValue: /usr/local/cuda-12.4\n\n"
            "Alternative: /usr/local/cuda-12.4\nPriority: 124\n",
        ),
    ),
    Parser("cuda_toolkit.parse_alternatives_display", cuda_toolkit.parse_alternatives_display, ("alternatives/*",)),
    Parser(
        "cuda_toolkit.parse_ldd",
        cuda_toolkit.parse_ldd,
        (),
        seeds=("\tlibcudart.so.12 => /lib/x86_64-linux-gnu/libcudart.so.12 (0x00007f)\n\tlibfoo.so => not found\n",),
    ),
    Parser(
        "cuda_toolkit.parse_needed",
        cuda_toolkit.parse_needed,
        (),
        seeds=(" 0x0000000000000001 (NEEDED)             Shared library: [libcudart.so.12]\n",),
    ),
    Parser(
        "container_toolkit.parse_ctk_version",
        container_toolkit.parse_ctk_version,
        (),
        seeds=("NVIDIA Container Toolkit CLI version 1.17.8\ncommit: f202b80a9b9d0db00d9b1d73c0128c8962c55f4d\n",),
    ),
    Parser(
        "container_toolkit.parse_cdi_list",
        container_toolkit.parse_cdi_list,
        (),
        seeds=("nvidia.com/gpu=0\nnvidia.com/gpu=GPU-4b2d\nnvidia.com/gpu=all\n",),
    ),
    Parser(
        "container_toolkit.add_import",
        lambda t: container_toolkit.add_import(t, "/etc/containerd/conf.d/*.toml", "config.toml"),
        (),
        (container_toolkit.ConfigProblem,),
        seeds=('version = 2\nimports = ["/etc/containerd/a.toml"]\n[plugins."io.containerd.grpc.v1.cri"]\n',),
        hostile=(("a", ".a", " = 1\n"), ("a = ", "[", ""), ("a = ", "{b = ", "1")),
    ),
    Parser(
        "container_toolkit.docker_daemon",
        lambda t: container_toolkit.docker_daemon(t, RUNTIME, True, "daemon.json"),
        (),
        (container_toolkit.ConfigProblem,),
        seeds=('{"runtimes": {"x": {"path": "/x"}}, "log-level": "warn"}',),
    ),
    Parser(
        "container_toolkit_facts.crio_runtimes",
        lambda t: container_toolkit_facts.crio_runtimes([("crio.conf", t)]),
        (),
        (container_toolkit.ConfigProblem,),
        seeds=('[crio.runtime]\ndefault_runtime = "crun"\n[crio.runtime.runtimes.crun]\nruntime_path = "/x"\n',),
    ),
    Parser("rack_manifest.load (CSV)", lambda b: _manifest(b, "r.csv"), ("rack_manifest/*.csv",), binary=True),
    Parser("rack_manifest.load (YAML)", lambda b: _manifest(b, "r.yml"), ("rack_manifest/*.yml",), binary=True),
    Parser(
        "dnf.parse_resolution",
        dnf.parse_resolution,
        (),
        (parsing.ParseError,),
        seeds=tuple(dnf.RESULT_PREFIX + p.read_text() for p in sorted((FIXTURES / "dnf").glob("resolve-*.json"))),
    ),
    Parser(
        "dnf_module_stream.parse_module_state",
        lambda t: dnf_module_stream.parse_module_state(t, "nvidia-driver"),
        ("dnf/modules.d-*.module",),
        (parsing.ParseError,),
        hostile=(("[nvidia-driver]\na", " ", "x"),),
    ),
    Parser(
        "kubernetes_node.join_command",
        kubernetes_node.join_command,
        (),
        (),
        seeds=(
            "kubeadm join 10.0.0.1:6443 --token abcdef.0123456789abcdef "
            "--discovery-token-ca-cert-hash sha256:" + "a" * 64 + " \n",
        ),
    ),
    Parser(
        "simulation.simulated",
        lambda t: simulation.simulated(lambda _path: t),
        (),
        seeds=('{"profile": "hgx_h100_8gpu", "captures": ["nvidia_smi/h100-sxm-x8-565.derived.xml"]}',),
    ),
]

BY_NAME = {p.name: p for p in PARSERS}


def adversarial(parser: Parser, size: int, lines: int = 8):
    """(label, input of about size characters) that make a super-linear parser show itself: the largest capture
    repeated, and long runs of blanks, digits and a line's own character put into lines of the captures (a lazy group
    before \\s*$, an unbounded \\d+ searched through digits, nested quantifiers all go quadratic or worse on these).
    Deterministic: the same inputs on every run."""
    inputs = parser.inputs()
    largest = max(inputs, key=len)
    yield "largest capture repeated", largest * max(1, size // max(len(largest), 1))
    for prefix, unit, suffix in parser.hostile:
        text = prefix + unit * max(1, size // len(unit)) + suffix
        yield f"{prefix[:20]!r} + {unit[:20]!r} x {size // len(unit)}", text.encode() if parser.binary else text
    if parser.binary:
        yield "bytes 0xff", b"\x99\xff\xff" + b"\xff" * size
        return
    chosen = []
    for text in inputs:
        for line in text.splitlines():
            if line.strip() and line not in chosen:
                chosen.append(line)
    step = max(1, len(chosen) // lines)
    head = "\n".join(largest.splitlines()[:40]) + "\n"
    for line in chosen[::step][:lines]:
        at = len(line) // 2
        for char in dict.fromkeys((" ", "0", line[at] if at < len(line) else "x")):
            yield f"{char!r} x {size} inside {line[:30]!r}", head + line[:at] + char * size + line[at:] + "\n"
        prefix = line[: max(at, 1)]
        yield f"{prefix[:30]!r} repeated on one line", head + prefix * max(1, size // len(prefix))
