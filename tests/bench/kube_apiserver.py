"""The bench's stand-in of a control plane's API server, on the k8s_node scenario's control-plane node.

No registry reachable from the bench carries kube-apiserver (or etcd, or an image to run them in), so this answers,
in the real API's JSON, only what the k8s_node role (kubernetes.core's Python client from the controller: cluster
info, Node get and merge patch, cordon, drain, uncordon), kubeadm's join discovery, the stand-in kubelet and Debian's
real kubectl (get, delete of Nodes, in the tests) ask:

- discovery: /version, /api, /api/v1, /apis (legacy discovery; kubectl and the Python client's dynamic client read
  it);
- Nodes: list, get, create, merge and strategic-merge patch (of the object and of /status), delete;
- Pods: those of pods.json (none unless a test puts them there: no workload runs on the bench), listed (all, per
  namespace, or spec.nodeName's), read, and evicted through policy/v1 Eviction - the pod is removed, unless its
  annotation gpuops.test/eviction says "ignored" (accepted, the pod keeps running: a drain then times out) or
  "blocked" (429, as a PodDisruptionBudget refuses);
- the cluster-info ConfigMap kubeadm's token discovery reads, with a JWS-like signature per bootstrap token
  (HMAC-SHA256 of the kubeconfig with the token's secret; the real one is a detached JWS, same key) for the tokens
  `kubeadm token create` (stand-in) keeps in tokens.json, expired ones left out.

Plain HTTP. No authentication unless rbac.json is in the state directory ({"tokens": {bearer token: {"user": name,
"rules": [ClusterRole rules]}}}): then a request needs one of its tokens (401 otherwise) and a rule that allows its
verb on its resource (403 with the real API's message otherwise, and a line in forbidden.jsonl), as RBAC authorizes
a ClusterRole bound to that user; discovery and the cluster-info ConfigMap stay open, as system:discovery and
kube-public's own Role leave them. The bench's network reaches nothing else. State lives in nodes.json; every change
to a Node but kubelet's status reports is appended, with its time and body, to changes.jsonl. Tests on the controller
run it there too: GPUOPS_APISERVER_STATE and GPUOPS_APISERVER_LISTEN (host:port) move it.
"""

import base64
import hmac
import json
import os
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

STATE = os.environ.get("GPUOPS_APISERVER_STATE", "/var/lib/gpuops-standin/apiserver")
NODES = os.path.join(STATE, "nodes.json")
PODS = os.path.join(STATE, "pods.json")
TOKENS = os.path.join(STATE, "tokens.json")
RBAC = os.path.join(STATE, "rbac.json")
# Each request RBAC refused, for tests: clients often report only "Forbidden", not what was refused.
FORBIDDEN = os.path.join(STATE, "forbidden.jsonl")
VERBS = {"GET": "get", "POST": "create", "PATCH": "patch", "DELETE": "delete", "PUT": "update"}
# Every change to a Node (create, patch, delete), with its time and body, for tests that check what was done when.
CHANGES = os.path.join(STATE, "changes.jsonl")
CA = "/etc/kubernetes/pki/ca.crt"
VERSION = os.environ.get("KUBE_VERSION", "v1.35.9")
ENDPOINT = os.environ.get("KUBE_ENDPOINT", "localhost:6443")
LOCK = threading.Lock()

RESOURCES = [
    {
        "name": "nodes",
        "singularName": "node",
        "namespaced": False,
        "kind": "Node",
        "shortNames": ["no"],
        "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"],
    },
    {"name": "nodes/status", "singularName": "", "namespaced": False, "kind": "Node", "verbs": ["get", "patch"]},
    {
        "name": "pods",
        "singularName": "pod",
        "namespaced": True,
        "kind": "Pod",
        "shortNames": ["po"],
        "verbs": ["get", "list", "delete"],
    },
    {
        "name": "pods/eviction",
        "singularName": "",
        "namespaced": True,
        "group": "policy",
        "version": "v1",
        "kind": "Eviction",
        "verbs": ["create"],
    },
    {"name": "configmaps", "singularName": "configmap", "namespaced": True, "kind": "ConfigMap", "verbs": ["get"]},
]


def load(path, default):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:
        return default


def save_nodes(nodes):
    with open(NODES + ".new", "w", encoding="utf-8") as f:
        json.dump(nodes, f)
    os.replace(NODES + ".new", NODES)


def merge(target, patch):
    """JSON merge patch (RFC 7386); for the Node fields patched here strategic merge behaves the same."""
    if not isinstance(patch, dict):
        return patch
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge(out.get(key), value)
    return out


def record(method, path, body):
    with open(CHANGES, "a", encoding="utf-8") as f:
        f.write(json.dumps({"time": time.time(), "method": method, "path": path, "body": body}) + "\n")


def status(code, reason, message):
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }


def attributes(method, path):
    """(verb, resource, namespace, name) RBAC authorizes a request by, or None for what every user may read (discovery,
    /version, kube-public's cluster-info)."""
    parts = [p for p in urlsplit(path).path.split("/") if p]
    if parts[:2] != ["api", "v1"] or len(parts) < 3:
        return None
    rest, namespace = parts[2:], None
    if rest[0] == "namespaces" and len(rest) >= 3:
        namespace, rest = rest[1], rest[2:]
    if namespace == "kube-public" and rest == ["configmaps", "cluster-info"]:
        return None
    resource = "/".join(rest[0:3:2])
    name = rest[1] if len(rest) > 1 else None
    verb = VERBS.get(method, method.lower())
    return ("list" if verb == "get" and name is None else verb), resource, namespace, name


def allows(rule, verb, resource):
    def has(field, value):
        return "*" in rule.get(field, []) or value in rule.get(field, [])

    return has("apiGroups", "") and has("resources", resource) and has("verbs", verb)


class Handler(BaseHTTPRequestHandler):
    def authorized(self):
        """Whether the request may go on (with rbac.json: its bearer token's rules allow it); answers it otherwise."""
        rbac = load(RBAC, None)
        request = attributes(self.command, self.path)
        if rbac is None or request is None:
            return True
        token = self.headers.get("Authorization", "").partition("Bearer ")[2]
        subject = rbac["tokens"].get(token)
        if subject is None:
            self.send(401, status(401, "Unauthorized", "Unauthorized"))
            return False
        verb, resource, namespace, name = request
        if any(allows(rule, verb, resource) for rule in subject["rules"]):
            return True
        where = f'in the namespace "{namespace}"' if namespace else "at the cluster scope"
        what = f'{resource.split("/")[0]} "{name}"' if name else resource
        message = (
            f'{what} is forbidden: User "{subject["user"]}" cannot {verb} resource "{resource}" in API group "" {where}'
        )
        with LOCK, open(FORBIDDEN, "a", encoding="utf-8") as f:
            f.write(json.dumps({"verb": verb, "resource": resource, "namespace": namespace, "name": name}) + "\n")
        self.send(403, status(403, "Forbidden", message))
        return False

    def send(self, code, body):
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def body(self):
        return json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")

    def do_GET(self):
        if not self.authorized():
            return None
        url = urlsplit(self.path)
        parts = [p for p in url.path.split("/") if p]
        if url.path == "/version":
            minor = VERSION.split(".")[1]
            return self.send(200, {"major": "1", "minor": minor, "gitVersion": VERSION, "platform": "linux/amd64"})
        if url.path == "/api":
            return self.send(
                200,
                {
                    "kind": "APIVersions",
                    "versions": ["v1"],
                    "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": ENDPOINT}],
                },
            )
        if url.path == "/apis":
            return self.send(200, {"kind": "APIGroupList", "apiVersion": "v1", "groups": []})
        if url.path == "/api/v1":
            return self.send(200, {"kind": "APIResourceList", "groupVersion": "v1", "resources": RESOURCES})
        if url.path == "/api/v1/namespaces/kube-public/configmaps/cluster-info":
            return self.send(200, self.cluster_info())
        if url.path == "/api/v1/pods" or (len(parts) == 5 and parts[2] == "namespaces" and parts[4] == "pods"):
            return self.send(200, self.pod_list(parts[3] if len(parts) == 5 else None, url.query))
        if len(parts) == 6 and parts[2] == "namespaces" and parts[4] == "pods":
            with LOCK:
                pod = load(PODS, {}).get(f"{parts[3]}/{parts[5]}")
            if pod is None:
                return self.send(404, status(404, "NotFound", f'pods "{parts[5]}" not found'))
            return self.send(200, pod)
        with LOCK:
            nodes = load(NODES, {})
        if url.path == "/api/v1/nodes":
            selector = parse_qs(url.query).get("fieldSelector", [""])[0]
            items = [n for name, n in sorted(nodes.items()) if selector in ("", f"metadata.name={name}")]
            return self.send(
                200, {"kind": "NodeList", "apiVersion": "v1", "metadata": {"resourceVersion": "1"}, "items": items}
            )
        if len(parts) in (4, 5) and parts[:3] == ["api", "v1", "nodes"]:
            if parts[3] in nodes:
                return self.send(200, nodes[parts[3]])
            return self.send(404, status(404, "NotFound", f'nodes "{parts[3]}" not found'))
        return self.send(404, status(404, "NotFound", "the server could not find the requested resource"))

    def pod_list(self, namespace, query):
        node = parse_qs(query).get("fieldSelector", [""])[0].partition("spec.nodeName=")[2]
        with LOCK:
            pods = load(PODS, {})
        items = [
            pod
            for key, pod in sorted(pods.items())
            if (namespace is None or key.startswith(namespace + "/")) and (not node or pod["spec"]["nodeName"] == node)
        ]
        return {"kind": "PodList", "apiVersion": "v1", "metadata": {"resourceVersion": "1"}, "items": items}

    def evict(self, namespace, name):
        key = f"{namespace}/{name}"
        with LOCK:
            pods = load(PODS, {})
            if key not in pods:
                return self.send(404, status(404, "NotFound", f'pods "{name}" not found'))
            how = (pods[key]["metadata"].get("annotations") or {}).get("gpuops.test/eviction")
            if how == "blocked":
                message = "Cannot evict pod as it would violate the pod's disruption budget."
                return self.send(429, status(429, "TooManyRequests", message))
            if how != "ignored":
                pods.pop(key)
                with open(PODS + ".new", "w", encoding="utf-8") as f:
                    json.dump(pods, f)
                os.replace(PODS + ".new", PODS)
            record("POST", self.path, None)
        return self.send(201, {"kind": "Status", "apiVersion": "v1", "status": "Success", "code": 201})

    def do_POST(self):
        if not self.authorized():
            return None
        parts = [p for p in urlsplit(self.path).path.split("/") if p]
        if len(parts) == 7 and parts[2] == "namespaces" and parts[4] == "pods" and parts[6] == "eviction":
            return self.evict(parts[3], parts[5])
        if urlsplit(self.path).path != "/api/v1/nodes":
            return self.send(404, status(404, "NotFound", "the server could not find the requested resource"))
        node = self.body()
        name = node["metadata"]["name"]
        with LOCK:
            nodes = load(NODES, {})
            if name in nodes:
                return self.send(409, status(409, "AlreadyExists", f'nodes "{name}" already exists'))
            # As the real API server defaults them: clients read spec.unschedulable and status without checking.
            node.setdefault("spec", {})
            node.setdefault("status", {})
            node["metadata"].update(
                uid=str(uuid.uuid4()),
                resourceVersion=str(time.time_ns()),
                creationTimestamp=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            )
            nodes[name] = node
            save_nodes(nodes)
            record("POST", self.path, {"metadata": {"name": name}})
        return self.send(201, node)

    def do_PATCH(self):
        if not self.authorized():
            return None
        parts = [p for p in urlsplit(self.path).path.split("/") if p]
        if len(parts) not in (4, 5) or parts[:3] != ["api", "v1", "nodes"]:
            return self.send(404, status(404, "NotFound", "the server could not find the requested resource"))
        patch = self.body()
        with LOCK:
            nodes = load(NODES, {})
            if parts[3] not in nodes:
                return self.send(404, status(404, "NotFound", f'nodes "{parts[3]}" not found'))
            if len(parts) == 5:
                patch = {"status": patch.get("status", {})}
            else:
                patch.pop("status", None)
            node = merge(nodes[parts[3]], patch)
            node["metadata"]["resourceVersion"] = str(time.time_ns())
            nodes[parts[3]] = node
            save_nodes(nodes)
            if len(parts) == 4:
                # Not kubelet's status reports (every 10 s): only what clients change.
                record("PATCH", urlsplit(self.path).path, patch)
        return self.send(200, node)

    def do_DELETE(self):
        if not self.authorized():
            return None
        parts = [p for p in urlsplit(self.path).path.split("/") if p]
        with LOCK:
            nodes = load(NODES, {})
            if len(parts) != 4 or parts[:3] != ["api", "v1", "nodes"] or parts[3] not in nodes:
                return self.send(404, status(404, "NotFound", f'nodes "{parts[-1]}" not found'))
            node = nodes.pop(parts[3])
            save_nodes(nodes)
            record("DELETE", urlsplit(self.path).path, None)
        return self.send(200, node)

    def cluster_info(self):
        with open(CA, "rb") as f:
            ca = base64.b64encode(f.read()).decode()
        kubeconfig = (
            'apiVersion: v1\nkind: Config\nclusters:\n- name: ""\n  cluster:\n'
            f"    certificate-authority-data: {ca}\n    server: http://{ENDPOINT}\n"
        )
        data = {"kubeconfig": kubeconfig}
        now = time.time()
        for token_id, token in load(TOKENS, {}).items():
            if token["expires"] is None or token["expires"] > now:
                data[f"jws-kubeconfig-{token_id}"] = hmac.new(
                    token["secret"].encode(), kubeconfig.encode(), "sha256"
                ).hexdigest()
        return {
            "kind": "ConfigMap",
            "apiVersion": "v1",
            "metadata": {"name": "cluster-info", "namespace": "kube-public"},
            "data": data,
        }

    def log_message(self, fmt, *args):
        # The journal keeps method and path only: query strings carry nothing secret, bodies are not logged.
        print(f"{self.command} {urlsplit(self.path).path} -> {args[1] if len(args) > 1 else ''}", flush=True)


if __name__ == "__main__":
    os.makedirs(STATE, exist_ok=True)
    host, _colon, port = os.environ.get("GPUOPS_APISERVER_LISTEN", "0.0.0.0:6443").rpartition(":")
    ThreadingHTTPServer((host, int(port)), Handler).serve_forever()
