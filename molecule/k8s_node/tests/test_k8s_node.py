"""k8s_node on Debian 13 (control plane cp: the bench's stand-in; workers gpu: simulated 4x L40S, cpu: no GPU, found
half-joined): the real state after converge.

kubeadm, kubelet and kubectl are the bench's stand-ins (tests/standins/kubernetes-v1.35) from the mirror's copy of
the Kubernetes repository, which also carries an older patch version than the pinned one; containerd is Debian's.
The Node objects live in the stand-in API server on cp, read with Debian's real kubectl.
"""

from __future__ import annotations

import hashlib
import json
import tomllib

import pytest

VERSION = "1.35.9-1.1"
OLDER = "1.35.8-1.1"
PACKAGES = ["kubeadm", "kubelet", "kubectl"]
CRI = "io.containerd.grpc.v1.cri"
KUBECTL = "kubectl --kubeconfig /etc/kubernetes/admin.conf"
WORKERS = ("gpu", "cpu")


def name(host):
    return host.backend.get_hostname()


def cp(host):
    """The control plane's testinfra host, from any host's test."""
    return host.get_host("ansible://cp", ansible_inventory=host.backend.ansible_inventory)


def calls(host):
    return [json.loads(line) for line in host.file("/var/lib/gpuops-standin/kubeadm/calls.jsonl").content_string
            .splitlines()]  # fmt: skip


@pytest.mark.on(*WORKERS)
def test_kubeadm_kubelet_kubectl_are_at_the_pinned_version_and_held_though_another_is_offered(host):
    held = host.check_output("apt-mark showhold").split()
    for package in PACKAGES:
        assert host.check_output(f"dpkg-query -W -f '${{Version}}' {package}") == VERSION, package
        assert package in held, package
        assert OLDER in host.check_output(f"apt-cache madison {package}"), package


@pytest.mark.on(*WORKERS)
def test_the_repository_is_the_kubernetes_projects_path_on_the_mirror(host):
    sources = host.file("/etc/apt/sources.list.d/kubernetes.sources").content_string
    assert "URIs: http://gpuops-mirror:8080/pkgs.k8s.io/core:/stable:/v1.35/deb/" in sources


@pytest.mark.on(*WORKERS)
def test_containerd_is_debians_running_and_answers(host):
    assert host.check_output("dpkg-query -W -f '${Version}' containerd").startswith("1.7.")
    assert host.service("containerd").is_enabled
    assert host.service("containerd").is_running
    assert "Server:" in host.check_output("ctr version")


@pytest.mark.on(*WORKERS)
def test_containerd_runs_systemd_cgroups_and_the_mirrors_sandbox_image_with_drop_ins_imported(host):
    dump = tomllib.loads(host.check_output("containerd config dump"))
    cri = dump["plugins"][CRI]
    assert cri["sandbox_image"] == "registry.gpuops.test/pause:3.10.1"
    assert cri["containerd"]["runtimes"]["runc"]["options"]["SystemdCgroup"] is True
    config = host.file("/etc/containerd/config.toml").content_string
    assert 'imports = ["/etc/containerd/conf.d/*.toml"]' in config
    assert "nvidia" not in config


@pytest.mark.on(*WORKERS)
def test_the_nvidia_runtime_comes_from_the_toolkits_drop_in_on_the_gpu_node_only(host):
    runtimes = tomllib.loads(host.check_output("containerd config dump"))["plugins"][CRI]["containerd"]["runtimes"]
    dropin = host.file("/etc/containerd/conf.d/99-nvidia.toml")
    if name(host) == "gpu":
        assert runtimes["nvidia"]["options"]["BinaryName"] == "/usr/bin/nvidia-container-runtime"
        assert runtimes["nvidia"]["options"]["SystemdCgroup"] is True
        assert dropin.exists
    else:
        assert "nvidia" not in runtimes
        assert not dropin.exists


@pytest.mark.on(*WORKERS)
def test_kubelet_is_enabled_running_and_has_its_kubeconfig(host):
    assert host.service("kubelet").is_enabled
    assert host.service("kubelet").is_running
    assert host.file("/etc/kubernetes/kubelet.conf").exists


@pytest.mark.on(*WORKERS)
def test_the_join_read_a_join_configuration_pinning_the_real_ca_hash_and_left_no_file(host):
    # The role's join (the token test later joins cpu again through the vault path).
    join = next(c for c in calls(host) if c["command"] == "join")
    # The token never on kubeadm's command line.
    assert join["args"] == ["--config", "/run/gpuops/k8s_node/join.yaml"]
    # 0600, in a directory only root enters (the file is 0644 for an instant when Ansible creates it).
    assert (join["mode"], join["dir_mode"]) == ("0o600", "0o700")
    config = join["config"]
    assert config["apiVersion"] == "kubeadm.k8s.io/v1beta4"
    assert config["kind"] == "JoinConfiguration"
    assert config["nodeRegistration"] == {"name": name(host), "criSocket": "unix:///var/run/containerd/containerd.sock"}
    ca_hash = (
        "sha256:"
        + cp(host)
        .check_output(
            "openssl x509 -pubkey -noout -in /etc/kubernetes/pki/ca.crt | openssl pkey -pubin -outform der | sha256sum"
        )
        .split()[0]
    )
    assert config["discovery"]["bootstrapToken"]["caCertHashes"] == [ca_hash]
    # The stand-in records the token's SHA-256: it is one the control plane created, with the role's 15 min TTL.
    tokens = {
        **json.loads(cp(host).file("/var/lib/gpuops-standin/apiserver/tokens.json").content_string),
        **json.loads(cp(host).file("/var/lib/gpuops-standin/apiserver/tokens-deleted.json").content_string),
    }
    digests = {"sha256:" + hashlib.sha256(f"{i}.{t['secret']}".encode()).hexdigest(): t for i, t in tokens.items()}
    created = digests[config["discovery"]["bootstrapToken"]["token"]]
    assert created["description"] == f"gpuops.bringup k8s_node join of {name(host)}"
    assert config["discovery"]["tlsBootstrapToken"] == config["discovery"]["bootstrapToken"]["token"]
    assert not host.file("/run/gpuops/k8s_node/join.yaml").exists


@pytest.mark.on("cp")
def test_every_token_the_role_created_was_deleted_once_its_join_was_over(host):
    records = calls(host)
    created = [c["token_id"] for c in records if c["command"] == "token create"
               and any(a.startswith("--description=gpuops.bringup k8s_node") for a in c["args"])]  # fmt: skip
    deleted = [i for c in records if c["command"] == "token delete" for i in c["token_ids"]]
    live = json.loads(host.file("/var/lib/gpuops-standin/apiserver/tokens.json").content_string)
    assert created and sorted(created) == sorted(deleted)
    assert not set(created) & set(live)


@pytest.mark.on("cp")
def test_the_token_was_created_with_a_short_ttl(host):
    # The role's (the token test creates one by hand, as an operator filling the vault would).
    created = [c for c in calls(host) if c["command"] == "token create"
               and any(a.startswith("--description=gpuops.bringup k8s_node") for a in c["args"])]  # fmt: skip
    assert created and all(c["ttl_seconds"] == 900 for c in created)


@pytest.mark.on("cpu")
def test_the_half_joined_node_was_reset_before_its_join(host):
    commands = [c["command"] for c in calls(host)]
    assert commands[:2] == ["reset", "join"], commands


@pytest.mark.on("gpu")
def test_the_joined_gpu_node_was_never_reset(host):
    assert "reset" not in [c["command"] for c in calls(host)]


def node(host, which):
    return json.loads(host.check_output(f"{KUBECTL} get node {which} -o json"))


@pytest.mark.on("cp")
def test_both_nodes_are_ready_at_the_pinned_kubelet(host):
    for worker in WORKERS:
        got = node(host, worker)
        assert {"type": "Ready", "status": "True"}.items() <= got["status"]["conditions"][0].items()
        assert got["status"]["nodeInfo"]["kubeletVersion"] == "v1.35.9"


@pytest.mark.on("cp")
def test_the_gpu_node_is_labelled_from_its_simulated_gpus_and_the_inventory_and_tainted(host):
    got = node(host, "gpu")
    labels = got["metadata"]["labels"]
    assert {k: v for k, v in labels.items() if k.startswith("gpuops.io/")} == {
        "gpuops.io/gpu.product": "NVIDIA-L40S",
        "gpuops.io/gpu.count": "4",
        # What the profile's replayed nvidia-smi capture reports (no driver is installed in the container).
        "gpuops.io/gpu.driver": "570.172.08",
        "gpuops.io/gpu.cuda": "12.8",
        "gpuops.io/gpu.simulated": "true",
        "gpuops.io/rack": "molecule",
        "gpuops.io/hardware-profile": "pcie_l40s_4gpu",
    }
    assert labels["example.com/pool"] == "training"
    assert got["spec"]["taints"] == [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]


@pytest.mark.on("cp")
def test_the_cpu_node_has_no_gpu_labels_and_no_taint(host):
    got = node(host, "cpu")
    assert {k: v for k, v in got["metadata"]["labels"].items() if k.startswith("gpuops.io/")} == {
        "gpuops.io/rack": "molecule",
        "gpuops.io/hardware-profile": "bench_container",
    }
    assert not got["spec"].get("taints")


@pytest.mark.on("cp")
def test_the_control_planes_kubectl_is_debians_real_client(host):
    assert host.check_output("dpkg-query -W -f '${Version}' kubectl").startswith("1.32.")
