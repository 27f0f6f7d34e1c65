# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Package sources: the offline-mirror URL rule and the source file formats, as pure functions."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from ansible_collections.gpuops.bringup.plugins.module_utils import openpgp

HEADER = "# Managed by gpuops.bringup: edit the inventory, not this file.\n"
# What a URL written into a deb822 URIs field, a .repo baseurl or a key download may hold: RFC 3986's unreserved,
# reserved and percent characters, without the quote characters, blanks and controls that would end the field or
# start another (a newline in URIs: adds "Trusted: yes" to the stanza).
_URL = re.compile(r"(https?|file)://[A-Za-z0-9._~:/?#\[\]@!$&()*+,;=%-]+")
# A repository's name becomes a file name and a .repo section header.
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}")
_SHA256 = re.compile(r"[0-9a-fA-F]{64}")
# deb822 fields (Debian's sources.list(5)): suites may be paths (a flat repository's "./" or "/", "noble-updates"),
# components are names or paths ("non-free-firmware", "updates/main"), architectures dpkg's names.
_SUITE = re.compile(r"[A-Za-z0-9._+/~-]{1,100}")
_COMPONENT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+/-]{0,99}")
_ARCHITECTURE = re.compile(r"[a-z0-9][a-z0-9-]{0,31}")
# A description becomes a deb822 comment or a .repo name= value: one printable line.
_DESCRIPTION = re.compile(r"[^\x00-\x1f\x7f]{0,200}")
KEYS = (
    "name", "state", "uris", "suites", "components", "architectures", "description",
    "key_url", "key_sha256", "key_fingerprint", "key_content", "mirror_url", "validate_certs", "manager",
)  # fmt: skip


def url_problem(url, what="URL"):
    """Why url cannot be written into a source file or fetched, or None: an absolute http(s) or file URL of
    RFC 3986's characters, with a host for http(s) and an absolute path and no host for file."""
    if not isinstance(url, str):
        return f"it must be a string URL, not {type(url).__name__}"
    if not _URL.fullmatch(url):
        return "it must be an http://, https:// or file:// URL with no spaces, quotes, newlines or control characters"
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - urlsplit checks the port only when it is read
    except ValueError as exc:
        return f"it is not a valid URL ({exc})"
    if parts.scheme in ("http", "https") and not parts.hostname:
        return "it names no host"
    if parts.scheme == "file" and (parts.netloc or not parts.path.startswith("/")):
        # file://srv/mirror names host "srv" and path /mirror: the usual typo for file:///srv/mirror.
        return f"a file:// {what} needs an absolute path and no host, e.g. file:///srv/mirror"
    return None


def mirror_url_problem(mirror):
    """Why a mirror base URL is unusable, or None when it is fine."""
    if not isinstance(mirror, str):
        return f"it must be a string URL, not {type(mirror).__name__}"
    if "?" in mirror or "#" in mirror or not _URL.fullmatch(mirror):
        return "it must be an http://, https:// or file:// URL with no spaces, query or fragment"
    return url_problem(mirror, "mirror")


def mirrored(url, mirror):
    """Where an upstream URL lives on the offline mirror: <mirror>/<upstream host>/<upstream path>.

    This is the layout apt-mirror and wget --mirror produce, so operators can fill the mirror with standard tools.
    An empty mirror leaves the URL as is, and so does a mirror for a file:// URL (a file on the node has no upstream
    host to mirror). ValueError for what is no absolute URL (preflight's url_problem says so first).
    """
    if not mirror:
        return url
    problem = url_problem(url)
    if problem:
        raise ValueError(f"{url!r} is not an absolute URL: {problem}")
    parts = urlsplit(url)
    if parts.scheme == "file":
        return url
    return f"{mirror.rstrip('/')}/{parts.netloc}{parts.path}"


def _list_problem(field, value, pattern, example):
    """Why a list field of strings is wrong, or None."""
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) and pattern.fullmatch(v) for v in value):
        return f"{field} {value!r} must be a list of {example}"
    return None


def repository_problems(repo, kind):
    """Problems with one repository definition (package_repository's options), as sentences with the fix.

    kind is the package manager, apt or dnf: apt also needs suites and, unless the repository is flat, components.
    Every value written into the source file is checked for its grammar first.
    """
    if not isinstance(repo, dict):
        return [f"{repo!r} is not a mapping; give name, uris and a signing key"]
    problems = []
    unknown = sorted(str(k) for k in repo if k not in KEYS)
    if unknown:
        problems.append(f"has unknown key(s) {', '.join(unknown)}; the keys are {', '.join(KEYS[:11])}")
    name = repo.get("name")
    if not isinstance(name, str) or not NAME.fullmatch(name):
        problems.append(f"name {name!r} must be letters, digits, '.', '_' or '-' (it names the source and key files)")
    uris = repo.get("uris")
    if not uris or not isinstance(uris, list) or any(url_problem(u) for u in uris):
        problems.append(f"uris {uris!r} must be a list of absolute http(s) or file URLs")
    description = repo.get("description")
    if description is not None and not (isinstance(description, str) and _DESCRIPTION.fullmatch(description)):
        problems.append(f"description {description!r} must be one line of text (up to 200 characters, no newline)")
    for field, pattern, example in (
        ("suites", _SUITE, "suite names such as stable or ./"),
        ("components", _COMPONENT, "component names such as main or non-free-firmware"),
        ("architectures", _ARCHITECTURE, "architectures such as amd64"),
    ):
        problem = _list_problem(field, repo.get(field), pattern, example)
        if problem:
            problems.append(problem)
    key_url, key_sha256, key_content = repo.get("key_url"), repo.get("key_sha256"), repo.get("key_content")
    key_fingerprint = repo.get("key_fingerprint")
    if key_url and key_content:
        problems.append("give key_url (with key_fingerprint or key_sha256) or key_content, not both")
    elif not key_url and not key_content:
        problems.append(
            "has no signing key: give key_url with key_fingerprint or key_sha256, or key_content; "
            "a repository is never trusted without its key"
        )
    elif key_content is not None and not isinstance(key_content, str):
        problems.append(f"key_content must be the armored key as a string, not {type(key_content).__name__}")
    elif key_url and url_problem(key_url):
        problems.append(f"key_url {key_url!r} must be an absolute http(s) or file URL")
    elif key_url and not key_sha256 and not key_fingerprint:
        problems.append(
            f"key_url {key_url} needs its pin: key_fingerprint (as the vendor publishes it) or key_sha256 "
            f"(sha256sum of the file)"
        )
    elif key_sha256 and not (isinstance(key_sha256, str) and _SHA256.fullmatch(key_sha256)):
        problems.append(
            f"key_sha256 {key_sha256!r} is not a SHA-256 hex digest; "
            f"compute it with sha256sum on the key from {key_url}"
        )
    elif key_fingerprint and not (
        isinstance(key_fingerprint, str) and openpgp.FINGERPRINT.fullmatch(openpgp.normalize(key_fingerprint))
    ):
        problems.append(
            f"key_fingerprint {key_fingerprint!r} is not an OpenPGP fingerprint (40 hex digits, or 64 for a v6 key); "
            f"gpg --show-keys on the key from {key_url} prints it"
        )
    if kind == "apt" and not any(p.startswith(("suites ", "components ")) for p in problems):
        suites = repo.get("suites") or []
        components = repo.get("components") or []
        flat = len(suites) == 1 and suites[0].endswith("/")
        if not suites:
            problems.append("suites is required for apt, e.g. [stable], or [/] for a flat repository")
        elif flat and components:
            problems.append(f"a flat repository (suite {suites[0]!r}) takes no components, got {components!r}")
        elif not flat and not components:
            problems.append(f"components is required with suites {suites!r}, e.g. [main]")
    return problems


def list_problems(repos, kind):
    """The problems of a list of repository definitions, each prefixed with its entry's index ("[1] ...")."""
    if not isinstance(repos, list):
        return [f"must be a list of repositories, got {type(repos).__name__}"]
    return [f"[{index}] {problem}" for index, repo in enumerate(repos) for problem in repository_problems(repo, kind)]


def key_problem(*, host, index, pins, fingerprint, sha256, fix):
    """Why a repository's signing key, as repository_index read it before the repository is added, is not the one
    its pins name, or None: the key file must hold exactly the pinned primary key (spaces and case in the pin do not
    matter) and, when a SHA-256 is pinned too, have that digest.

    index: repository_index's result (key_url, key_fingerprints, key_sha256, key_problem); pins: the pins' prefix
    (<pins>_fingerprint, <pins>_sha256) for the message; fix: the sentence after "Fix:".
    """
    pinned = str(fingerprint).replace(" ", "").upper()
    found = index.get("key_fingerprints")
    if found == [pinned] and (not sha256 or index.get("key_sha256") == str(sha256).lower()):
        return None
    holds = ", ".join(found) if found else f"no key ({index.get('key_problem')})"
    also = f" and {pins}_sha256 {sha256}" if sha256 else ""
    return (
        f"{host}: the signing key {index.get('key_url')} holds {holds} with SHA-256 {index.get('key_sha256')}, but "
        f"{pins}_fingerprint is {pinned}{also}: refusing to trust it. Nothing was changed. Fix: {fix}"
    )


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
