#!/usr/bin/python
# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: package_repository
short_description: Add a signed third-party apt or dnf repository, optionally through the offline mirror
version_added: 0.1.0
description:
  - Installs the repository's signing key after checking its SHA-256, then writes a deb822 C(.sources) file with
    C(Signed-By) (apt) or a C(.repo) file with C(gpgcheck=1) (dnf). A repository is never trusted without its key.
  - With O(mirror_url), the repository and its key are fetched from C(<mirror_url>/<upstream host>/<upstream path>)
    instead of upstream, the layout of an apt-mirror or C(wget --mirror) copy, for air-gapped sites.
  - One round trip for key and source file. Does not refresh the package cache; the caller does when the task
    reports C(changed).
author: gpuops.bringup developers (@gpuops)
options:
  name:
    description: Repository identifier; names the source file and the key file.
    type: str
    required: true
  state:
    description: Whether the repository is configured.
    type: str
    choices: [present, absent]
    default: present
  uris:
    description: Upstream repository URLs (apt C(URIs), dnf C(baseurl)). Required when O(state=present).
    type: list
    elements: str
  suites:
    description: Apt suites; a single C(/)-terminated suite describes a flat repository. Required for apt.
    type: list
    elements: str
    default: []
  components:
    description: Apt components; empty for a flat repository.
    type: list
    elements: str
    default: []
  architectures:
    description: Apt architectures to fetch; empty means the host's.
    type: list
    elements: str
    default: []
  description:
    description: Human-readable name written into the file.
    type: str
    default: ""
  manager:
    description:
      - The node's package manager, as the role read it (C(gpuops_os.os.package_manager) of
        M(gpuops.bringup.os_facts)). Without it, apt where C(/etc/apt) exists, else dnf.
    type: str
    choices: [apt, dnf]
  key_url:
    description: Upstream URL of the signing key (armored or binary OpenPGP). Requires O(key_fingerprint) or
      O(key_sha256), or both.
    type: str
  key_fingerprint:
    description:
      - Fingerprint of the key at O(key_url), as the vendor publishes it (spaces and case do not matter). A download
        whose primary key has another fingerprint, or more than one key, fails the task.
      - The fingerprint survives a vendor re-exporting its key with new signatures, which changes the file's SHA-256.
    type: str
  key_sha256:
    description: SHA-256 of the key file at O(key_url); a different download fails the task.
    type: str
  key_content:
    description: The signing key itself, armored, instead of O(key_url).
    type: str
  mirror_url:
    description: Base URL of the offline mirror; empty to use upstream.
    type: str
    default: ""
  validate_certs:
    description: Verify TLS certificates when downloading the key.
    type: bool
    default: true
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - gpuops.bringup.attributes.changes
"""

EXAMPLES = r"""
- name: NVIDIA's CUDA repository, through the site mirror when one is set
  gpuops.bringup.package_repository:
    name: nvidia-cuda
    uris: [https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/]
    suites: [/]
    key_url: https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/3bf863cc.pub
    key_sha256: "{{ cuda_key_sha256 }}"
    mirror_url: "{{ gpuops_mirror_url }}"
  register: cuda_repo
"""

RETURN = r"""
source_file:
  description: Path of the source or repo file.
  returned: always
  type: str
  sample: /etc/apt/sources.list.d/nvidia-cuda.sources
key_file:
  description: Path of the installed signing key.
  returned: always
  type: str
  sample: /etc/apt/keyrings/nvidia-cuda.asc
uris:
  description: The URLs written into the source file (mirrored when O(mirror_url) is set).
  returned: when O(state=present)
  type: list
  elements: str
"""

import hashlib
import os

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.urls import fetch_url

from ansible_collections.gpuops.bringup.plugins.module_utils import openpgp, repositories


def read_bytes(path):
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError:
        return None


def fetch_key(module, url):
    response, info = fetch_url(module, url, timeout=30)
    if response is None or info.get("status") not in (200, None):
        module.fail_json(
            msg=f"could not download the signing key from {url}: {info.get('msg', 'no answer')}",
            url=url,
            status=info.get("status"),
        )
    # A key file is kilobytes; more is an error page or worse, and is not read whole into memory.
    key = response.read(openpgp.MAX_KEY_FILE + 1)
    if len(key) > openpgp.MAX_KEY_FILE:
        module.fail_json(msg=f"the signing key at {url} is larger than {openpgp.MAX_KEY_FILE} bytes: no key file is")
    return key


def key_problem(key, p):
    """Why key fails the pins (key_sha256, key_fingerprint), or None."""
    if p["key_sha256"]:
        got = hashlib.sha256(key).hexdigest()
        if got != p["key_sha256"].lower():
            return f"has SHA-256 {got}, expected {p['key_sha256'].lower()} (key_sha256)"
    if p["key_fingerprint"]:
        wanted = openpgp.normalize(p["key_fingerprint"])
        try:
            found = openpgp.primary_fingerprints(key)
        except openpgp.KeyFileError as exc:
            return f"is no OpenPGP public key ({exc})"
        if found != [wanted]:
            return f"holds the key(s) {', '.join(found)}, expected only {wanted} (key_fingerprint)"
    return None


def paths(kind, name, armored):
    if kind == "apt":
        return f"/etc/apt/sources.list.d/{name}.sources", f"/etc/apt/keyrings/{name}.{'asc' if armored else 'gpg'}"
    return f"/etc/yum.repos.d/{name}.repo", f"/etc/pki/rpm-gpg/RPM-GPG-KEY-{name}"


def validate(module, kind):
    p = module.params
    problem = p["mirror_url"] and repositories.mirror_url_problem(p["mirror_url"])
    if problem:
        module.fail_json(msg=f"mirror_url {p['mirror_url']!r} is not usable: {problem}")
    if p["state"] == "absent":
        if not repositories.NAME.fullmatch(p["name"]):
            module.fail_json(msg=f"repository {p['name']!r}: name must be letters, digits, '.', '_' or '-'")
        return
    problems = repositories.repository_problems(p, kind)
    if problems:
        module.fail_json(msg=f"repository {p['name']!r}: " + "; ".join(problems))


def main():
    module = AnsibleModule(
        argument_spec={
            "name": {"type": "str", "required": True},
            "state": {"type": "str", "choices": ["present", "absent"], "default": "present"},
            "uris": {"type": "list", "elements": "str"},
            "suites": {"type": "list", "elements": "str", "default": []},
            "components": {"type": "list", "elements": "str", "default": []},
            "architectures": {"type": "list", "elements": "str", "default": []},
            "description": {"type": "str", "default": ""},
            "key_url": {"type": "str", "no_log": False},
            "key_sha256": {"type": "str", "no_log": False},
            "key_fingerprint": {"type": "str", "no_log": False},
            "key_content": {"type": "str", "no_log": False},
            "mirror_url": {"type": "str", "default": ""},
            "validate_certs": {"type": "bool", "default": True},
            "manager": {"type": "str", "choices": ["apt", "dnf"]},
        },
        mutually_exclusive=[("key_url", "key_content")],
        supports_check_mode=True,
    )
    p = module.params
    kind = p["manager"] or ("apt" if os.path.isdir("/etc/apt") else "dnf")
    validate(module, kind)
    mirror = p["mirror_url"]

    if p["state"] == "absent":
        # The source file is the same whatever the key format: each path once.
        candidates = dict.fromkeys(path for armored in (True, False) for path in paths(kind, p["name"], armored))
        existing = [path for path in candidates if os.path.exists(path)]
        if existing and not module.check_mode:
            for path in existing:
                os.unlink(path)
        source_file, key_file = paths(kind, p["name"], True)
        module.exit_json(
            changed=bool(existing),
            source_file=source_file,
            key_file=key_file,
            diff={"before": "".join(f"{x}\n" for x in existing), "after": ""},
        )

    if p["key_content"]:
        key = p["key_content"].encode()
        if not key.endswith(b"\n"):
            key += b"\n"
    else:
        key_url = repositories.mirrored(p["key_url"], mirror)
        _source, current_key_file = paths(kind, p["name"], True)
        current = read_bytes(current_key_file) or read_bytes(paths(kind, p["name"], False)[1])
        # An installed key that passes the pins needs no download.
        if current is not None and key_problem(current, p) is None:
            key = current
        else:
            key = fetch_key(module, key_url)
            problem = key_problem(key, p)
            if problem:
                module.fail_json(msg=f"the signing key from {key_url} {problem}: refusing to trust it", url=key_url)

    source_file, key_file = paths(kind, p["name"], repositories.is_armored(key))
    uris = [repositories.mirrored(u, mirror) for u in p["uris"]]
    if kind == "apt":
        content = repositories.deb822(
            uris, p["suites"], p["components"], key_file, p["architectures"], p["description"]
        )
    else:
        content = repositories.yum_repo(p["name"], uris, key_file, p["description"])

    old_source = read_bytes(source_file)
    old_key = read_bytes(key_file)
    changed = old_source != content.encode() or old_key != key
    diff = {
        "before_header": source_file,
        "after_header": source_file,
        "before": (old_source or b"").decode(errors="replace")
        + ("" if old_key == key else "# (signing key differs)\n"),
        "after": content,
    }
    if changed and not module.check_mode:
        for path, data, mode in ((key_file, key, 0o644), (source_file, content.encode(), 0o644)):
            os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
            tmp = f"{path}.gpuops-tmp"
            with open(tmp, "wb") as handle:
                handle.write(data)
            os.chmod(tmp, mode)
            module.atomic_move(tmp, path)
    module.exit_json(changed=changed, source_file=source_file, key_file=key_file, uris=uris, diff=diff)


if __name__ == "__main__":
    main()
