#!/usr/bin/python
# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: repository_index
short_description: Read which versions of some packages a repository carries, without configuring it
version_added: 0.1.0
description:
  - Returns the versions a repository carries for the named packages, and the SHA-256 and fingerprints of its
    signing key, without adding the repository, so a role's preflight can check a version pin against a repository
    it has not added yet.
  - apt - downloads a flat repository's C(Packages.gz) (C(deb <url> /), the layout of NVIDIA's CUDA repository for
    Debian and Ubuntu). Nothing on the node changes.
  - dnf - asks the node's dnf (C(dnf repoquery --repofrompath), an rpm-md repository such as NVIDIA's rhel8/rhel9
    one), with its cache in a temporary directory that is removed afterwards, and no plugin (a versionlock would
    hide versions). So any metadata compression dnf reads is read. The packages of every module stream are listed
    (C(module_hotfixes)), so a modular repository such as NVIDIA's, whose driver branches are streams, is read whole,
    not only the streams the node has enabled.
  - With O(key_url) and apt, the index is trusted only as apt trusts it. The repository's C(InRelease) (or
    C(Release) with C(Release.gpg)) must carry a signature by a key of the key file (an RSA or Ed25519 primary key,
    or a signing subkey bound to it, neither revoked; SHA-1 signatures refused), and C(Packages.gz) must have the
    SHA-256 and size that Release lists; otherwise the task fails. The caller pins the key file (C(key_fingerprints)),
    so the index is the pinned key's. Key expiry and C(Valid-Until) are left to apt, which checks them once the
    repository is added (M(gpuops.bringup.package_repository)).
  - With dnf, or without O(key_url), a read for planning only, its signature not checked here; the package manager
    checks it, with the key, once the repository is added.
  - With O(mirror_url), both are fetched from C(<mirror_url>/<upstream host>/<upstream path>), like
    M(gpuops.bringup.package_repository).
author: gpuops.bringup developers (@gpuops)
options:
  url:
    description: Upstream URL of the repository (the directory holding C(Packages.gz), or C(repodata/)).
    type: str
    required: true
  names:
    description: Packages whose versions to return.
    type: list
    elements: str
    required: true
  key_url:
    description: Upstream URL of the repository's signing key, whose SHA-256 and fingerprints are returned.
    type: str
  mirror_url:
    description: Base URL of the offline mirror; empty to use upstream.
    type: str
    default: ""
  validate_certs:
    description: Verify TLS certificates.
    type: bool
    default: true
  manager:
    description: The package manager whose repository it is (C(apt) a flat apt repository, C(dnf) an rpm-md one).
    type: str
    choices: [apt, dnf]
    default: apt
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - gpuops.bringup.attributes
"""

EXAMPLES = r"""
- name: Which fabric manager versions NVIDIA's CUDA repository carries
  gpuops.bringup.repository_index:
    url: https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/
    names: [nvidia-fabricmanager-535]
    key_url: https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/3bf863cc.pub
    mirror_url: "{{ gpuops_mirror_url }}"
  register: cuda_index
"""

RETURN = r"""
packages:
  description: >-
    Each name of O(names) to the versions the index lists for it (empty when none): Debian versions, or dnf's EVRs
    oldest first.
  returned: always
  type: dict
  sample: {"nvidia-fabricmanager-535": ["535.261.03-1", "535.274.02-1"]}
index_url:
  description: The index read (mirrored when O(mirror_url) is set).
  returned: always
  type: str
  sample: http://mirror.example.com/developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/Packages.gz
key_sha256:
  description: SHA-256 of the key file at O(key_url) (mirrored), or null without O(key_url).
  returned: always
  type: str
  sample: 9e19399232dd1740f8c841dd83caff5d3299d4a87becd5dbf5df02cba323322c
key_fingerprints:
  description: >-
    Fingerprints (upper-case hex) of the primary keys in the key file at O(key_url), or null without O(key_url) or
    when the file is no OpenPGP key (C(key_problem) says why).
  returned: always
  type: list
  elements: str
  sample: [EB693B3035CD5710E231E123A4B469963BF863CC]
key_problem:
  description: Why the key file gave no fingerprint (not an OpenPGP public key), else null.
  returned: always
  type: str
key_url:
  description: The key URL read (mirrored), or null without O(key_url).
  returned: always
  type: str
release_url:
  description: The signed Release read (C(InRelease), else C(Release)), or null when none was verified.
  returned: always
  type: str
  sample: http://mirror.example.com/developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/InRelease
signed_by:
  description: >-
    The primary fingerprint of the key file's key whose signature of the Release verified, or null when none was
    verified (dnf, no O(key_url), or a key file with no key - C(key_problem)).
  returned: always
  type: str
  sample: EB693B3035CD5710E231E123A4B469963BF863CC
"""

import hashlib
import shutil
import tempfile

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.urls import fetch_url

from ansible_collections.gpuops.bringup.plugins.module_utils import (
    apt,
    openpgp,
    parsing,
    repositories,
    rpm,
    signed_release,
)
from ansible_collections.gpuops.bringup.plugins.module_utils.command import ToolRunner

# The id dnf knows the repository by while it reads it.
DNF_REPO_ID = "gpuops-index"
# The most a download may be: NVIDIA's CUDA repository's Packages.gz for Debian 12 is about 2 MB (its Packages about
# 30 MB, within parsing.MAX_DECOMPRESSED), a key file a few KB.
MAX_INDEX_BYTES = 64 * 1024 * 1024


def download(module, url, what, limit=None, missing_ok=False):
    """The body at url, at most limit bytes; None for a 404 when missing_ok, else the task fails."""
    limit = MAX_INDEX_BYTES if limit is None else limit
    response, info = fetch_url(module, url, timeout=60)
    if missing_ok and info.get("status") == 404:
        return None
    if response is None or info.get("status") not in (200, None):
        module.fail_json(
            msg=f"could not download {what} from {url}: {info.get('msg', 'no answer')} (status "
            f"{info.get('status')}); check the URL and, with an offline mirror, that it holds this repository",
            url=url,
            status=info.get("status"),
        )
    data = response.read(limit + 1)
    if len(data) > limit:
        module.fail_json(msg=f"{what} at {url} is larger than {limit} bytes, more than any repository's", url=url)
    return data


def apt_index(module, url):
    """(index URL, {name: versions}, the compressed index as downloaded)."""
    index_url = url + "/Packages.gz"
    data = download(module, index_url, "the repository's package index")
    try:
        text = parsing.decompress(data).decode("utf-8", errors="replace")
    except parsing.ParseError as exc:
        module.fail_json(msg=f"{index_url} is not a gzip-compressed package index: {exc}", url=index_url)
    return index_url, apt.parse_packages_index(text, module.params["names"]), data


def verified_release(module, url, key, key_url):
    """(Release URL, the signer's primary fingerprint, the Release text) of a flat apt repository, read as apt reads
    it: InRelease, else Release and Release.gpg; the task fails unless the key file's key signed it."""
    release_url = url + "/InRelease"
    inline = download(module, release_url, "the repository's signed Release", signed_release.MAX_RELEASE, True)
    try:
        if inline is not None:
            data, signature = signed_release.cleartext(inline.decode("utf-8", errors="replace"))
        else:
            release_url = url + "/Release"
            data = download(module, release_url, "the repository's Release", signed_release.MAX_RELEASE)
            signature = download(module, release_url + ".gpg", "the Release's signature", openpgp.MAX_KEY_FILE)
        signer = signed_release.verify(data, signature, key)
    except signed_release.SignatureError as exc:
        module.fail_json(
            msg=f"the repository's Release {release_url} is not signed by the key {key_url}: {exc}; nothing from it "
            "is trusted. Check that the mirror holds this repository as its vendor signed it, and the key's pins",
            url=release_url,
        )
    return release_url, signer, data.decode("utf-8", errors="replace")


def dnf_index(module, url):
    index_url = url + "/repodata/repomd.xml"
    dnf = ToolRunner(module, "dnf")
    cache = tempfile.mkdtemp(prefix="gpuops-index-")
    try:
        rc, out, err = dnf(
            ["repoquery", "--quiet", "--noplugins", f"--repofrompath={DNF_REPO_ID},{url}", f"--repo={DNF_REPO_ID}",
             f"--setopt=cachedir={cache}", f"--setopt={DNF_REPO_ID}.skip_if_unavailable=False",
             # NVIDIA's rhel8/rhel9 repositories carry the driver as module streams (nvidia-driver:<branch>-dkms,
             # <branch>-open): dnf hides the packages of streams not enabled, which on a node reading the
             # repository before adding it is every one. module_hotfixes lists them all (RHEL 8's dnf has it too).
             f"--setopt={DNF_REPO_ID}.module_hotfixes=true", "--showduplicates",
             f"--qf={rpm.REPOQUERY_FORMAT}", "--", *module.params["names"]],
            ok_rc=tuple(range(256)),
        )  # fmt: skip
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    if rc != 0:
        module.fail_json(
            msg=f"could not read the repository at {url} with dnf: {(err or out).strip()[-500:]}; check the URL "
            "and, with an offline mirror, that it holds this repository",
            url=index_url,
        )
    return index_url, rpm.parse_repoquery(out, module.params["names"])


def main():
    module = AnsibleModule(
        argument_spec={
            "url": {"type": "str", "required": True},
            "names": {"type": "list", "elements": "str", "required": True},
            "key_url": {"type": "str", "no_log": False},
            "mirror_url": {"type": "str", "default": ""},
            "validate_certs": {"type": "bool", "default": True},
            "manager": {"type": "str", "choices": ["apt", "dnf"], "default": "apt"},
        },
        supports_check_mode=True,
    )
    p = module.params
    problem = p["mirror_url"] and repositories.mirror_url_problem(p["mirror_url"])
    if problem:
        module.fail_json(msg=f"mirror_url {p['mirror_url']!r} is not usable: {problem}")
    for option in ("url", "key_url"):
        problem = p[option] and repositories.url_problem(p[option])
        if problem:
            module.fail_json(msg=f"{option} {p[option]!r} is not usable: {problem}")
    url = repositories.mirrored(p["url"].rstrip("/"), p["mirror_url"])
    if p["manager"] == "apt":
        index_url, packages, index = apt_index(module, url)
    else:
        index_url, packages = dnf_index(module, url)
    key_url = key_sha256 = key_fingerprints = key_problem = release_url = signed_by = None
    if p["key_url"]:
        key_url = repositories.mirrored(p["key_url"], p["mirror_url"])
        key = download(module, key_url, "the repository's signing key", openpgp.MAX_KEY_FILE)
        key_sha256 = hashlib.sha256(key).hexdigest()
        try:
            key_fingerprints = openpgp.primary_fingerprints(key)
        except openpgp.KeyFileError as exc:
            key_problem = str(exc)
    # No key to verify with is the caller's to refuse (key_problem against its pins); dnf checks its own.
    if key_fingerprints and p["manager"] == "apt":
        release_url, signed_by, release = verified_release(module, url, key, key_url)
        try:
            signed_release.check_index(release, "Packages.gz", index)
        except signed_release.SignatureError as exc:
            module.fail_json(msg=f"{index_url} is not the index {release_url} signed: {exc}", url=index_url)
    module.exit_json(
        changed=False,
        packages=packages,
        index_url=index_url,
        key_url=key_url,
        key_sha256=key_sha256,
        key_fingerprints=key_fingerprints,
        key_problem=key_problem,
        release_url=release_url,
        signed_by=signed_by,
    )


if __name__ == "__main__":
    main()
