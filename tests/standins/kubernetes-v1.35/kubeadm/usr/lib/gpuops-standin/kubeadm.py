"""Bench stand-in of kubeadm: the command surface gpuops.bringup's k8s_node role calls, nothing more.

- `kubeadm version -o short`
- `kubeadm token create --print-join-command [--ttl D] [--description S]` (on the control plane: the bootstrap
  token is kept where the bench's stand-in API server reads it, the CA hash is computed from
  /etc/kubernetes/pki/ca.crt with openssl, as kubeadm does: sha256 of the DER SubjectPublicKeyInfo)
- `kubeadm token delete ID...`: the token leaves the API server's store (cluster-info no longer signs for it); its
  secret is kept apart, 0600, for the tests that search every node for a token that leaked
- `kubeadm join --config FILE`: a JoinConfiguration (v1beta3 or v1beta4); discovery as kubeadm does it: the
  cluster-info ConfigMap from the API server, its JWS for the token's ID checked with the token's secret, the CA's
  public key checked against caCertHashes; then kubelet.conf, the CA, the kubelet's config and flags, kubelet
  restarted, and the Node waited for.
- `kubeadm upgrade node` (recorded; the kubelet configuration is the stand-in join's)
- `kubeadm reset --force`

Every call is recorded in /var/lib/gpuops-standin/kubeadm/calls.jsonl for the tests, with the bootstrap token
replaced by its SHA-256 (the record must not hold the secret it is checked for). Anything else fails with status 2.
"""

import base64
import fcntl
import hashlib
import hmac
import json
import os
import re
import secrets
import string
import subprocess
import sys
import time
import urllib.error
import urllib.request

import yaml

VERSION = "v@UPSTREAM@"
RECORD = "/var/lib/gpuops-standin/kubeadm/calls.jsonl"
TOKENS = "/var/lib/gpuops-standin/apiserver/tokens.json"
DELETED = "/var/lib/gpuops-standin/apiserver/tokens-deleted.json"
CA = "/etc/kubernetes/pki/ca.crt"
KUBELET_CONF = "/etc/kubernetes/kubelet.conf"
KUBELET_CONFIG = "/var/lib/kubelet/config.yaml"
KUBELET_FLAGS = "/var/lib/kubelet/kubeadm-flags.env"
TOKEN = re.compile(r"^([a-z0-9]{6})\.([a-z0-9]{16})$")
HASH = re.compile(r"^sha256:[0-9a-f]{64}$")


def fail(msg, status=1):
    sys.stderr.write(
        f"error execution phase preflight: {msg}\nTo see the stack trace of this error execute with --v=5 or higher\n"
    )
    sys.exit(status)


def record(call):
    os.makedirs(os.path.dirname(RECORD), exist_ok=True)
    with open(RECORD, "a", encoding="utf-8") as out:
        out.write(json.dumps(dict(call, time=time.time())) + "\n")


def redact(token):
    return "sha256:" + hashlib.sha256(token.encode()).hexdigest() if isinstance(token, str) else token


def ca_hash(pem):
    der = subprocess.run(
        "openssl x509 -pubkey -noout | openssl pkey -pubin -outform der",
        shell=True,
        input=pem,
        capture_output=True,
        check=True,
    ).stdout
    return "sha256:" + hashlib.sha256(der).hexdigest()


def option(args, name, default=None):
    for i, arg in enumerate(args):
        if arg == name and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith(name + "="):
            return arg.split("=", 1)[1]
    return default


def token_create(args):
    if "--print-join-command" not in args:
        fail("the stand-in creates tokens only with --print-join-command", 2)
    with open("/etc/kubernetes/admin.conf", encoding="utf-8") as conf:
        server = yaml.safe_load(conf)["clusters"][0]["cluster"]["server"]
    endpoint = re.sub(r"^https?://", "", server)
    alphabet = string.ascii_lowercase + string.digits
    token_id = "".join(secrets.choice(alphabet) for _position in range(6))
    secret = "".join(secrets.choice(alphabet) for _position in range(16))
    ttl = option(args, "--ttl", "24h0m0s")
    seconds = sum(int(n) * {"h": 3600, "m": 60, "s": 1}[u] for n, u in re.findall(r"(\d+)([hms])", ttl))
    os.makedirs(os.path.dirname(TOKENS), exist_ok=True)
    # Several nodes join at once, each creating its token here (the real kubeadm writes a Secret through the API
    # server, which serializes them): one writer at a time, each with its own temporary file.
    with open(TOKENS + ".lock", "w", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        tokens = {}
        if os.path.exists(TOKENS):
            with open(TOKENS, encoding="utf-8") as f:
                tokens = json.load(f)
        tokens[token_id] = {
            "secret": secret,
            "expires": time.time() + seconds if seconds else None,
            "description": option(args, "--description", ""),
        }
        new = f"{TOKENS}.{os.getpid()}"
        with open(new, "w", encoding="utf-8") as f:
            json.dump(tokens, f)
        os.chmod(new, 0o600)
        os.replace(new, TOKENS)
    with open(CA, "rb") as f:
        digest = ca_hash(f.read())
    record({"command": "token create", "args": args, "token_id": token_id, "ttl_seconds": seconds})
    print(f"kubeadm join {endpoint} --token {token_id}.{secret} --discovery-token-ca-cert-hash {digest} ")


def load_json(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:
        return {}


def token_delete(args):
    if not args:
        fail('missing subcommand; "token delete" is missing token for deletion', 2)
    with open(TOKENS + ".lock", "w", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        tokens, deleted = load_json(TOKENS), load_json(DELETED)
        for token_id in args:
            if token_id not in tokens:
                fail(f'bootstrap token "{token_id}" not found')
            deleted[token_id] = tokens.pop(token_id)
        for path, data in ((DELETED, deleted), (TOKENS, tokens)):
            new = f"{path}.{os.getpid()}"
            with open(new, "w", encoding="utf-8") as f:
                json.dump(data, f)
            os.chmod(new, 0o600)
            os.replace(new, path)
    record({"command": "token delete", "token_ids": args})
    for token_id in args:
        print(f'bootstrap token "{token_id}" deleted')


def get_json(url):
    with urllib.request.urlopen(url, timeout=10) as resp:
        return json.load(resp)


def join(args):
    path = option(args, "--config")
    if not path:
        fail("the stand-in joins only with --config (a JoinConfiguration)", 2)
    with open(path, encoding="utf-8") as f:
        docs = [d for d in yaml.safe_load_all(f) if d]
    config = next((d for d in docs if d.get("kind") == "JoinConfiguration"), None)
    if config is None or config.get("apiVersion") not in ("kubeadm.k8s.io/v1beta3", "kubeadm.k8s.io/v1beta4"):
        fail(f"{path}: no JoinConfiguration of apiVersion kubeadm.k8s.io/v1beta3 or v1beta4")
    boot = config.get("discovery", {}).get("bootstrapToken", {})
    token, endpoint, hashes = boot.get("token", ""), boot.get("apiServerEndpoint", ""), boot.get("caCertHashes", [])
    registration = config.get("nodeRegistration", {})
    recorded = json.loads(json.dumps(config))
    discovery = recorded.get("discovery", {})
    if "token" in discovery.get("bootstrapToken", {}):
        discovery["bootstrapToken"]["token"] = redact(token)
    if "tlsBootstrapToken" in discovery:
        discovery["tlsBootstrapToken"] = redact(discovery["tlsBootstrapToken"])
    record({"command": "join", "args": args, "config": recorded, "mode": oct(os.stat(path).st_mode & 0o777),
            "dir_mode": oct(os.stat(os.path.dirname(path)).st_mode & 0o777)})  # fmt: skip
    match = TOKEN.match(token)
    if not match:
        fail(f'the bootstrap token "{redact(token)}" was not of the form "^([a-z0-9]{{6}})\\.([a-z0-9]{{16}})$"')
    if not hashes and not boot.get("unsafeSkipCAVerification"):
        fail("using token-based discovery without caCertHashes can be unsafe. Set unsafeSkipCAVerification as true")
    for h in hashes:
        if not HASH.match(h):
            fail(f'invalid hash "{h}", expected "format:hex-value"')
    if os.path.exists(KUBELET_CONF):
        fail(
            "[preflight] Some fatal errors occurred:\n\t[ERROR FileAvailable--etc-kubernetes-kubelet.conf]: "
            "/etc/kubernetes/kubelet.conf already exists"
        )
    socket = registration.get("criSocket", "unix:///var/run/containerd/containerd.sock")
    if not os.path.exists(socket.replace("unix://", "")):
        fail(
            f"[preflight] Some fatal errors occurred:\n\t[ERROR CRI]: container runtime is not running: "
            f"validate service connection: dial {socket}: connect: no such file or directory"
        )
    try:
        info = get_json(f"http://{endpoint}/api/v1/namespaces/kube-public/configmaps/cluster-info")
    except (OSError, urllib.error.URLError) as exc:
        fail(
            f"couldn't validate the identity of the API Server: Get \"https://{endpoint}/api/v1/namespaces/"
            f'kube-public/configmaps/cluster-info?timeout=10s": {exc}'
        )
    kubeconfig = info["data"]["kubeconfig"]
    signature = info["data"].get(f"jws-kubeconfig-{match.group(1)}")
    if signature is None:
        fail(
            "couldn't validate the identity of the API Server: could not find a JWS signature in the cluster-info "
            f'ConfigMap for token ID "{match.group(1)}"'
        )
    if not hmac.compare_digest(signature, hmac.new(match.group(2).encode(), kubeconfig.encode(), "sha256").hexdigest()):
        fail(
            "couldn't validate the identity of the API Server: failed to verify JWS signature of received "
            "cluster info object, can't trust this API Server"
        )
    cluster = yaml.safe_load(kubeconfig)["clusters"][0]["cluster"]
    pem = base64.b64decode(cluster["certificate-authority-data"])
    actual = ca_hash(pem)
    if hashes and actual not in hashes:
        fail(
            f"couldn't validate the identity of the API Server: cluster CA found in cluster-info ConfigMap is "
            f'invalid: none of the public keys "{actual}" are pinned'
        )
    name = registration.get("name") or os.uname().nodename
    os.makedirs("/etc/kubernetes/pki", exist_ok=True)
    os.makedirs("/var/lib/kubelet", exist_ok=True)
    with open(CA, "wb") as f:
        f.write(pem)
    with open(KUBELET_CONF, "w", encoding="utf-8") as f:
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [
                    {"name": "default-cluster", "cluster": {"server": cluster["server"], "certificate-authority": CA}}
                ],
                "users": [{"name": "default-auth", "user": {"username": f"system:node:{name}"}}],
                "contexts": [
                    {"name": "default-context", "context": {"cluster": "default-cluster", "user": "default-auth"}}
                ],
                "current-context": "default-context",
            },
            f,
        )
    os.chmod(KUBELET_CONF, 0o600)
    with open(KUBELET_CONFIG, "w", encoding="utf-8") as f:
        yaml.safe_dump(
            {"apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration", "cgroupDriver": "systemd"},
            f,
        )
    extra = registration.get("kubeletExtraArgs", {})
    if isinstance(extra, list):
        extra = {a["name"]: a["value"] for a in extra}
    flags = [f"--container-runtime-endpoint={socket}", f"--hostname-override={name}"]
    flags += [f"--{k}={v}" for k, v in sorted(extra.items())]
    with open(KUBELET_FLAGS, "w", encoding="utf-8") as f:
        f.write(f'KUBELET_KUBEADM_ARGS="{" ".join(flags)}"\n')
    print("[kubelet-start] Starting the kubelet")
    subprocess.run(["systemctl", "restart", "kubelet.service"], check=True)
    print("[kubelet-check] Waiting for a healthy kubelet at http://127.0.0.1:10248/healthz. This can take up to 4m0s")
    deadline = time.monotonic() + 60
    while True:
        try:
            get_json(f"{cluster['server']}/api/v1/nodes/{name}")
            break
        except (OSError, urllib.error.URLError):
            if time.monotonic() > deadline:
                fail("error execution phase kubelet-start: timed out waiting for the condition")
            time.sleep(1)
    print(
        "\nThis node has joined the cluster:\n* Certificate signing request was sent to apiserver and a response "
        "was received.\n* The Kubelet was informed of the new secure connection details.\n\nRun 'kubectl get nodes' "
        "on the control-plane to see this node join the cluster.\n"
    )


def reset(args):
    if "--force" not in args and "-f" not in args:
        fail("the stand-in resets only with --force (it asks nothing)", 2)
    record({"command": "reset", "args": args})
    subprocess.run(["systemctl", "stop", "kubelet.service"], check=False)
    print("[reset] Stopping the kubelet service")
    for path in (KUBELET_CONF, "/etc/kubernetes/bootstrap-kubelet.conf", CA, KUBELET_CONFIG, KUBELET_FLAGS):
        if os.path.exists(path):
            os.unlink(path)
    print("[reset] Deleted contents of the etc directories: [/etc/kubernetes/manifests /etc/kubernetes/pki]")


def upgrade_node(args):
    if not os.path.exists(KUBELET_CONF):
        fail('couldn\'t create a Kubernetes client from file "/etc/kubernetes/kubelet.conf": no such file or directory')
    record({"command": "upgrade node", "args": args, "version": VERSION})
    print("[upgrade] The configuration for this node was successfully updated!")


def main(argv):
    if argv[:1] == ["version"]:
        print(
            VERSION
            if option(argv, "-o") == "short"
            else f'kubeadm version: &version.Info{{Major:"1", Minor:"{VERSION.split(".")[1]}", GitVersion:"{VERSION}"}}'
        )
    elif argv[:2] == ["token", "create"]:
        token_create(argv[2:])
    elif argv[:2] == ["token", "delete"]:
        token_delete(argv[2:])
    elif argv[:1] == ["join"]:
        join(argv[1:])
    elif argv[:2] == ["upgrade", "node"]:
        upgrade_node(argv[2:])
    elif argv[:1] == ["reset"]:
        reset(argv[1:])
    else:
        sys.stderr.write(f"kubeadm stand-in: {' '.join(argv)!r} is not implemented\n")
        sys.exit(2)


if __name__ == "__main__":
    main(sys.argv[1:])
