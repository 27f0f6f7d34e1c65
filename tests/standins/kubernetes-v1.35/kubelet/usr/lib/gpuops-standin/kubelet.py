"""Bench stand-in of kubelet: `--version`, and as the unit's service, the Node registration a real kubelet does.

Without its configuration (before kubeadm join) it exits 1 as the real one does, so the unit restarts every 10 s.
With /etc/kubernetes/kubelet.conf it registers its Node with the API server named there (labels kubelet sets
itself, a Ready condition, its version), then reports status every 10 s. Like a real kubelet, it does not register
again when its Node is deleted while it runs: the node is then half-joined (files, no Node).
"""

import json
import os
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request

VERSION = "v@UPSTREAM@"


def option(args, name, default=None):
    for i, arg in enumerate(args):
        if arg == name and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith(name + "="):
            return arg.split("=", 1)[1]
    return default


def request(method, url, body=None, content_type="application/json"):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": content_type})
    with urllib.request.urlopen(req, timeout=10) as resp:
        return json.load(resp)


def read(path):
    try:
        with open(path, encoding="utf-8") as f:
            return f.read().strip()
    except OSError:
        return ""


def main(args):
    if "--version" in args:
        print(f"Kubernetes {VERSION}")
        return 0
    kubeconfig = option(args, "--kubeconfig")
    config = option(args, "--config")
    if not config or not os.path.exists(config):
        sys.stderr.write(
            f'E0000 run.go:72] "command failed" err="failed to load kubelet config file, path: '
            f"{config}, error: failed to load Kubelet config file {config}, error failed to read kubelet "
            f'config file \\"{config}\\", error: open {config}: no such file or directory"\n'
        )
        return 1
    with open(kubeconfig, encoding="utf-8") as f:
        server = re.search(r"server:\s*(\S+)", f.read()).group(1)
    name = option(args, "--hostname-override") or os.uname().nodename
    runtime = subprocess.run(["containerd", "--version"], capture_output=True, text=True, check=False).stdout.split()
    address = subprocess.run(["hostname", "--all-ip-addresses"], capture_output=True, text=True, check=False).stdout
    # Every field a real kubelet reports in nodeInfo: API clients that deserialize a Node (the Python client of
    # kubernetes.core) require them all.
    status = {
        "conditions": [
            {"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "kubelet is posting ready status"}
        ],
        "addresses": [
            {"type": "InternalIP", "address": (address.split() or ["127.0.0.1"])[0]},
            {"type": "Hostname", "address": name},
        ],
        "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
        "nodeInfo": {
            "architecture": "amd64",
            "bootID": read("/proc/sys/kernel/random/boot_id"),
            "containerRuntimeVersion": f"containerd://{runtime[2].lstrip('v')}" if len(runtime) > 2 else "unknown",
            "kernelVersion": os.uname().release,
            "kubeProxyVersion": "",
            "kubeletVersion": VERSION,
            "machineID": read("/etc/machine-id"),
            "operatingSystem": "linux",
            "osImage": re.search(r'^PRETTY_NAME="?([^"\n]*)', read("/etc/os-release"), re.MULTILINE).group(1),
            "systemUUID": read("/etc/machine-id"),
        },
    }
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64"},
        },
        "spec": {},
        "status": status,
    }
    while True:
        try:
            request("POST", f"{server}/api/v1/nodes", node)
            print(f'I0000 kubelet_node_status.go:75] "Successfully registered node" node="{name}"', flush=True)
            break
        except urllib.error.HTTPError as exc:
            if exc.code == 409:
                break
            print(f'E0000 kubelet_node_status.go:95] "Unable to register node with API server" err="{exc}"', flush=True)
        except OSError as exc:
            print(f'E0000 kubelet_node_status.go:95] "Unable to register node with API server" err="{exc}"', flush=True)
        time.sleep(2)
    while True:
        try:
            request("PATCH", f"{server}/api/v1/nodes/{name}/status", {"status": status}, "application/merge-patch+json")
        except urllib.error.HTTPError as exc:
            print(f'E0000 kubelet_node_status.go:549] "Error updating node status, will retry" err="{exc}"', flush=True)
        except OSError as exc:
            print(f'E0000 kubelet_node_status.go:549] "Error updating node status, will retry" err="{exc}"', flush=True)
        time.sleep(10)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
