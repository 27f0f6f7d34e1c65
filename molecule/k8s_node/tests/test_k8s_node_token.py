"""The bootstrap token never leaks: not into Ansible's output at -vvv, its log, Molecule's files, nor any node's
journal, logs or files outside the control plane's token store.

The cpu node joins once more here through the vault path (a token created by hand on the control plane, given to
the role as k8s_node_join_token): a known token, so the search cannot pass by looking for the wrong thing. Every
token the scenario's runs created on the control plane (tokens.json, the stand-in API server's store, as a real
cluster keeps them in Secrets, and tokens-deleted.json, where the stand-in keeps those the role deleted after its
join) is searched for too. The positive control: the same search finds the tokens in those stores.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

# Each test reads every node itself: it runs once, on the control plane's turn.
pytestmark = pytest.mark.on("cp")

KUBECTL = "kubectl --kubeconfig /etc/kubernetes/admin.conf"
STORE = "/var/lib/gpuops-standin/apiserver/tokens.json"
# Where the stand-in keeps deleted tokens' secrets, for this search (a real cluster forgets them).
DELETED = "/var/lib/gpuops-standin/apiserver/tokens-deleted.json"
STORES = (STORE, DELETED)
# Where a node could keep what a run gave it: the journal is searched separately.
NODE_PATHS = "/etc /var/log /var/lib/kubelet /var/lib/gpuops-standin /root /tmp /run"


def node(host, which):
    return host.get_host(f"ansible://{which}", ansible_inventory=host.backend.ansible_inventory)


def node_hits(host, secret, exclude=()):
    """Files on the node holding secret, and whether the journal does."""
    files = host.run(f"grep -rlF -- {secret} {NODE_PATHS} 2>/dev/null").stdout.split()
    journal = host.run(f"journalctl --no-pager -o cat | grep -cF -- {secret}").stdout.strip()
    return [f for f in files if f not in exclude] + (["the journal"] if journal not in ("", "0") else [])


@pytest.fixture(scope="module")
def vault_join(host, tmp_path_factory):
    """Reset the cpu node, join it again with a known token from the vault path; the run's output and the token."""
    cp, cpu = node(host, "cp"), node(host, "cpu")
    cpu.check_output("kubeadm reset --force")
    cp.check_output(f"{KUBECTL} delete node cpu --ignore-not-found")
    printed = cp.check_output("kubeadm token create --print-join-command --ttl 10m")
    endpoint, token, ca_hash = re.search(r"kubeadm join (\S+) --token (\S+) --discovery-token-ca-cert-hash (\S+)",
                                         printed).groups()  # fmt: skip
    extra = tmp_path_factory.mktemp("vault") / "vault.json"
    extra.write_text(json.dumps({"k8s_node_control_plane_host": "",
                                 "k8s_node_join_token": token, "k8s_node_ca_cert_hash": ca_hash,
                                 "k8s_node_api_endpoint": endpoint}))  # fmt: skip
    log = Path(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"]) / "ansible.log"
    try:
        proc = subprocess.run(
            # The phases the token passes through (preflight runs with any of them); containerd and the packages
            # are in place already.
            ["ansible-playbook", "-vvv", "-i", os.environ["MOLECULE_INVENTORY_FILE"], "--limit", "cpu",
             "--tags", "k8s_node_join,k8s_node_configure,k8s_node_verify", "--extra-vars", f"@{extra}",
             os.path.join(os.environ["MOLECULE_SCENARIO_DIRECTORY"], "converge.yml")],
            capture_output=True, text=True, check=False,
            env={**os.environ, "ANSIBLE_FORCE_COLOR": "0", "ANSIBLE_NOCOLOR": "1", "ANSIBLE_LOG_PATH": str(log)},
        )  # fmt: skip
    finally:
        extra.unlink()
    return proc, token


def test_the_vault_join_succeeded_and_the_node_is_back(host, vault_join):
    proc, _token = vault_join
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    assert "cpu passed k8s_node verification" in proc.stdout


def secrets(host, vault_token):
    """Every token the scenario made: the known one and those the control plane's store holds."""
    stores = [json.loads(node(host, "cp").file(path).content_string) for path in STORES]
    return {vault_token} | {f"{token_id}.{t['secret']}" for store in stores for token_id, t in store.items()}


def test_no_token_in_ansibles_output_its_log_or_molecules_files(host, vault_join):
    proc, token = vault_join
    found = []
    for secret in secrets(host, token):
        part = secret.split(".")[1]
        if part in proc.stdout + proc.stderr:
            found.append(f"ansible-playbook -vvv output has {secret[:6]}.…")
        for path in Path(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"]).rglob("*"):
            if path.is_file() and part.encode() in path.read_bytes():
                found.append(f"{path} has {secret[:6]}.…")
    log = Path(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"]) / "ansible.log"
    assert log.stat().st_size > 0 and "k8s_node" in log.read_text()
    assert found == []


def test_no_token_on_any_node_outside_the_control_planes_store(host, vault_join):
    _proc, token = vault_join
    found = []
    for which in ("cp", "gpu", "cpu"):
        for secret in secrets(host, token):
            hits = node_hits(node(host, which), secret.split(".")[1], exclude=STORES if which == "cp" else ())
            found += [f"{which}: {hit} has {secret[:6]}.…" for hit in hits]
    assert found == []


def test_the_search_finds_the_tokens_where_they_are_kept(host, vault_join):
    """The positive control: the control plane's stores hold every token, the known one included (the role's own
    deleted, kept apart for this search)."""
    _proc, token = vault_join
    for secret in secrets(host, token):
        assert len(node_hits(node(host, "cp"), secret.split(".")[1])) == 1
        assert node_hits(node(host, "cp"), secret.split(".")[1])[0] in STORES
