# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Package sources: the offline-mirror URL rule and the source file formats, as pure functions."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from ansible_collections.gpuops.bringup.plugins.module_utils import openpgp

HEADER = "# Managed by gpuops.bringup: edit the inventory, not this file.\n"
_MIRROR_URL = re.compile(r"^(https?|file)://[^\s?#]+$")


def mirror_url_problem(mirror):
    """Why a mirror base URL is unusable, or None when it is fine."""
    if not isinstance(mirror, str):
        return f"it must be a string URL, not {type(mirror).__name__}"
    if not _MIRROR_URL.match(mirror):
        return "it must be an http://, https:// or file:// URL with no spaces, query or fragment"
    parts = urlsplit(mirror)
    if parts.scheme in ("http", "https") and not parts.hostname:
        return "it names no host"
    if parts.scheme == "file" and (parts.netloc or not parts.path.startswith("/")):
        # file://srv/mirror names host "srv" and path /mirror: the usual typo for file:///srv/mirror.
        return "a file:// mirror needs an absolute path and no host, e.g. file:///srv/mirror"
    return None


def mirrored(url, mirror):
    """Where an upstream URL lives on the offline mirror: <mirror>/<upstream host>/<upstream path>.

    This is the layout apt-mirror and wget --mirror produce, so operators can
    fill the mirror with standard tools. An empty mirror leaves the URL as is.
    """
    if not mirror:
        return url
    parts = urlsplit(url)
    if not parts.scheme or not parts.netloc:
        raise ValueError(f"{url!r} is not an absolute URL")
    return f"{mirror.rstrip('/')}/{parts.netloc}{parts.path}"


NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
_SHA256 = re.compile(r"^[0-9a-fA-F]{64}$")
_ABSOLUTE = re.compile(r"^(https?|file)://\S+$")


def repository_problems(repo, kind):
    """Problems with one repository definition (package_repository's options), as sentences with the fix.

    kind is the package manager, apt or dnf: apt also needs suites and,
    unless the repository is flat, components.
    """
    if not isinstance(repo, dict):
        return [f"{repo!r} is not a mapping; give name, uris and a signing key"]
    name = repo.get("name")
    problems = []
    if not isinstance(name, str) or not NAME.match(name):
        problems.append(f"name {name!r} must be letters, digits, '.', '_' or '-' (it names the source and key files)")
    uris = repo.get("uris")
    if not uris or isinstance(uris, str) or not all(isinstance(u, str) and _ABSOLUTE.match(u) for u in uris):
        problems.append(f"uris {uris!r} must be a list of absolute http(s) or file URLs")
    key_url, key_sha256, key_content = repo.get("key_url"), repo.get("key_sha256"), repo.get("key_content")
    key_fingerprint = repo.get("key_fingerprint")
    if key_url and key_content:
        problems.append("give key_url (with key_fingerprint or key_sha256) or key_content, not both")
    elif not key_url and not key_content:
        problems.append(
            "has no signing key: give key_url with key_fingerprint or key_sha256, or key_content; "
            "a repository is never trusted without its key"
        )
    elif not (isinstance(key_content, str) or (isinstance(key_url, str) and _ABSOLUTE.match(key_url))):
        problems.append(f"key_url {key_url!r} must be an absolute http(s) or file URL")
    elif key_url and not key_sha256 and not key_fingerprint:
        problems.append(
            f"key_url {key_url} needs its pin: key_fingerprint (as the vendor publishes it) or key_sha256 "
            f"(sha256sum of the file)"
        )
    elif key_sha256 and not (isinstance(key_sha256, str) and _SHA256.match(key_sha256)):
        problems.append(
            f"key_sha256 {key_sha256!r} is not a SHA-256 hex digest; "
            f"compute it with sha256sum on the key from {key_url}"
        )
    elif key_fingerprint and not openpgp.FINGERPRINT.match(openpgp.normalize(key_fingerprint)):
        problems.append(
            f"key_fingerprint {key_fingerprint!r} is not an OpenPGP fingerprint (40 hex digits, or 64 for a v6 key); "
            f"gpg --show-keys on the key from {key_url} prints it"
        )
    if kind == "apt":
        suites = repo.get("suites") or []
        components = repo.get("components") or []
        flat = len(suites) == 1 and isinstance(suites[0], str) and suites[0].endswith("/")
        if not suites:
            problems.append("suites is required for apt, e.g. [stable], or [/] for a flat repository")
        elif flat and components:
            problems.append(f"a flat repository (suite {suites[0]!r}) takes no components, got {components!r}")
        elif not flat and not components:
            problems.append(f"components is required with suites {suites!r}, e.g. [main]")
    return problems


def deb822(uris, suites, components, signed_by, architectures=(), description=""):
    """A deb822 .sources stanza. A flat repository (suite ending in /) has no components."""
    lines = [HEADER.rstrip("\n")]
    if description:
        lines.append(f"# {description}")
    lines += [
        "Types: deb",
        f"URIs: {' '.join(uris)}",
        f"Suites: {' '.join(suites)}",
    ]
    if components:
        lines.append(f"Components: {' '.join(components)}")
    if architectures:
        lines.append(f"Architectures: {' '.join(architectures)}")
    lines.append(f"Signed-By: {signed_by}")
    return "\n".join(lines) + "\n"


def yum_repo(repo_id, baseurls, gpgkey_path, description=""):
    """A .repo file with signature checking on: packages are never installed unverified."""
    return (
        HEADER
        + f"[{repo_id}]\n"
        + f"name={description or repo_id}\n"
        + "baseurl="
        + "\n        ".join(baseurls)
        + "\n"
        + "enabled=1\n"
        + "gpgcheck=1\n"
        + f"gpgkey=file://{gpgkey_path}\n"
    )


def is_armored(data):
    return b"-----BEGIN PGP PUBLIC KEY BLOCK-----" in data
