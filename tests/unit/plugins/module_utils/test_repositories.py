"""repositories: the offline-mirror URL rule, the repository checks and the source file formats."""

from __future__ import annotations

from pathlib import Path

import pytest

from ansible_collections.gpuops.bringup.plugins.module_utils import repositories

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures"
SHA256 = "20e5a02826924b807b6c67676c9eb9835bca427e2a1b606c830d105367ad407d"
KEY_URL = "http://bench.gpuops.test/apt/gpuops-bench.asc"
NOT_A_URL = "it must be an http://, https:// or file:// URL with no spaces, query or fragment"


@pytest.mark.parametrize(
    ("mirror", "problem"),
    [
        ("http://gpuops-mirror:8080", None),
        ("https://mirror.example.com/base/", None),
        ("file:///srv/mirror", None),
        ("ftp://mirror.example.com", NOT_A_URL),
        ("mirror.example.com", NOT_A_URL),
        ("http://mirror example.com", NOT_A_URL),
        ("http://mirror.example.com/?site=a", NOT_A_URL),
        ("http://mirror.example.com/#top", NOT_A_URL),
        ("http://", NOT_A_URL),
        ("http://:8080", "it names no host"),
        ("file://localhost", "a file:// mirror needs an absolute path and no host, e.g. file:///srv/mirror"),
        (8080, "it must be a string URL, not int"),
        (None, "it must be a string URL, not NoneType"),
    ],
)
def test_mirror_url_problem(mirror, problem):
    assert repositories.mirror_url_problem(mirror) == problem


def test_file_mirror_with_a_host_is_refused():
    assert repositories.mirror_url_problem("file://srv/mirror") is not None


@pytest.mark.parametrize(
    ("url", "mirror", "mirrored"),
    [
        (
            "http://deb.debian.org/debian",
            "http://mirror.example:8080",
            "http://mirror.example:8080/deb.debian.org/debian",
        ),
        (
            "http://deb.debian.org/debian",
            "http://mirror.example:8080/",
            "http://mirror.example:8080/deb.debian.org/debian",
        ),
        (KEY_URL, "http://gpuops-mirror:8080", "http://gpuops-mirror:8080/bench.gpuops.test/apt/gpuops-bench.asc"),
        (
            "https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/",
            "file:///srv/mirror",
            "file:///srv/mirror/developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/",
        ),
        # An upstream port stays part of the host directory, as wget --mirror names it.
        ("http://repo.example:8081/el9", "http://m", "http://m/repo.example:8081/el9"),
        ("http://deb.debian.org/debian", "", "http://deb.debian.org/debian"),
    ],
)
def test_mirrored(url, mirror, mirrored):
    assert repositories.mirrored(url, mirror) == mirrored


def test_mirrored_refuses_a_relative_url():
    with pytest.raises(ValueError, match="'debian/dists' is not an absolute URL"):
        repositories.mirrored("debian/dists", "http://m")


def test_a_file_url_is_not_mirrored():
    # A key shipped on the node has no upstream host to mirror (this raised ValueError before).
    assert repositories.mirrored("file:///usr/share/keyrings/x.gpg", "http://m") == "file:///usr/share/keyrings/x.gpg"


@pytest.mark.parametrize("url", ["http://[", "http://[::1", "http://host:99999/x", "http://host:port/x"])
def test_a_malformed_url_is_a_problem_not_a_crash(url):
    # urlsplit raises ValueError for these (an unclosed IPv6 bracket, a port out of range).
    assert repositories.mirror_url_problem(url).startswith("it is not a valid URL")
    with pytest.raises(ValueError, match="is not an absolute URL: it is not a valid URL"):
        repositories.mirrored(url, "http://m")


APT_REPO = {
    "name": "gpuops-bench",
    "uris": ["http://bench.gpuops.test/apt"],
    "suites": ["stable"],
    "components": ["main"],
    "key_url": KEY_URL,
    "key_sha256": SHA256,
}


@pytest.mark.parametrize(
    ("repo", "kind", "problems"),
    [
        (APT_REPO, "apt", []),
        ({**APT_REPO, "suites": ["/"], "components": []}, "apt", []),
        ({**APT_REPO, "suites": [], "components": []}, "dnf", []),
        (
            {**APT_REPO, "key_url": None, "key_sha256": None, "key_content": "-----BEGIN PGP PUBLIC KEY BLOCK-----"},
            "apt",
            [],
        ),
        (["gpuops-bench"], "apt", ["['gpuops-bench'] is not a mapping; give name, uris and a signing key"]),
        # Values written into deb822 or .repo files: a newline adds a field ("Trusted: yes") or a section.
        (
            {**APT_REPO, "components": ["main\nTrusted: yes"]},
            "apt",
            ["components ['main\\nTrusted: yes'] must be a list of component names such as main or non-free-firmware"],
        ),
        ({**APT_REPO, "suites": 5}, "apt", ["suites 5 must be a list of suite names such as stable or ./"]),
        (
            {**APT_REPO, "suites": ["stable\nAllow-Insecure: yes"]},
            "apt",
            ["suites ['stable\\nAllow-Insecure: yes'] must be a list of suite names such as stable or ./"],
        ),
        (
            {**APT_REPO, "architectures": ["amd64 arm64"]},
            "apt",
            ["architectures ['amd64 arm64'] must be a list of architectures such as amd64"],
        ),
        (
            {**APT_REPO, "description": "x\n[evil]\ngpgcheck=0"},
            "dnf",
            ["description 'x\\n[evil]\\ngpgcheck=0' must be one line of text (up to 200 characters, no newline)"],
        ),
        (
            {**APT_REPO, "uris": ["http://bench.gpuops.test/apt\nTrusted: yes"]},
            "apt",
            ["uris ['http://bench.gpuops.test/apt\\nTrusted: yes'] must be a list of absolute http(s) or file URLs"],
        ),
        (
            {**APT_REPO, "uris": ['http://x/"a"']},
            "apt",
            ["uris ['http://x/\"a\"'] must be a list of absolute http(s) or file URLs"],
        ),
        (
            {**APT_REPO, "key_content": 5, "key_url": None, "key_sha256": None},
            "apt",
            ["key_content must be the armored key as a string, not int"],
        ),
        (
            {**APT_REPO, "signed_by": "/tmp/k"},
            "apt",
            [
                "has unknown key(s) signed_by; the keys are name, state, uris, suites, components, architectures, "
                "description, key_url, key_sha256, key_fingerprint, key_content"
            ],
        ),
        (
            {**APT_REPO, "name": "gpuops bench"},
            "apt",
            ["name 'gpuops bench' must be letters, digits, '.', '_' or '-' (it names the source and key files)"],
        ),
        (
            {**APT_REPO, "name": None},
            "apt",
            ["name None must be letters, digits, '.', '_' or '-' (it names the source and key files)"],
        ),
        (
            {**APT_REPO, "uris": "http://bench.gpuops.test/apt"},
            "apt",
            ["uris 'http://bench.gpuops.test/apt' must be a list of absolute http(s) or file URLs"],
        ),
        (
            {**APT_REPO, "uris": ["bench.gpuops.test/apt"]},
            "dnf",
            ["uris ['bench.gpuops.test/apt'] must be a list of absolute http(s) or file URLs"],
        ),
        ({**APT_REPO, "uris": []}, "apt", ["uris [] must be a list of absolute http(s) or file URLs"]),
        (
            {**APT_REPO, "key_content": "-----BEGIN PGP PUBLIC KEY BLOCK-----"},
            "apt",
            ["give key_url (with key_fingerprint or key_sha256) or key_content, not both"],
        ),
        (
            {**APT_REPO, "key_url": None},
            "apt",
            [
                "has no signing key: give key_url with key_fingerprint or key_sha256, or key_content; "
                "a repository is never trusted without its key"
            ],
        ),
        (
            {**APT_REPO, "key_sha256": SHA256[:40]},
            "apt",
            [
                f"key_sha256 '{SHA256[:40]}' is not a SHA-256 hex digest; "
                f"compute it with sha256sum on the key from {KEY_URL}"
            ],
        ),
        (
            {**APT_REPO, "key_sha256": None},
            "apt",
            [
                f"key_url {KEY_URL} needs its pin: key_fingerprint (as the vendor publishes it) or key_sha256 "
                "(sha256sum of the file)"
            ],
        ),
        (
            {**APT_REPO, "key_sha256": None, "key_fingerprint": "3BF863CC"},
            "apt",
            [
                "key_fingerprint '3BF863CC' is not an OpenPGP fingerprint (40 hex digits, or 64 for a v6 key); "
                f"gpg --show-keys on the key from {KEY_URL} prints it"
            ],
        ),
        (
            {**APT_REPO, "key_sha256": None, "key_fingerprint": "EB69 3B30 35CD 5710 E231 E123 A4B4 6996 3BF8 63CC"},
            "apt",
            [],
        ),
        (
            {**APT_REPO, "suites": []},
            "apt",
            ["suites is required for apt, e.g. [stable], or [/] for a flat repository"],
        ),
        ({**APT_REPO, "components": []}, "apt", ["components is required with suites ['stable'], e.g. [main]"]),
        (
            {**APT_REPO, "suites": ["/"]},
            "apt",
            ["a flat repository (suite '/') takes no components, got ['main']"],
        ),
        # Several problems are all reported.
        (
            {"name": "a b", "uris": None},
            "apt",
            [
                "name 'a b' must be letters, digits, '.', '_' or '-' (it names the source and key files)",
                "uris None must be a list of absolute http(s) or file URLs",
                "has no signing key: give key_url with key_fingerprint or key_sha256, or key_content; "
                "a repository is never trusted without its key",
                "suites is required for apt, e.g. [stable], or [/] for a flat repository",
            ],
        ),
    ],
)
def test_repository_problems(repo, kind, problems):
    assert repositories.repository_problems(repo, kind) == problems


def test_deb822_is_what_the_bench_node_got():
    # package_repository wrote this file on the bench's Debian 13 node, and apt-get update accepted it.
    captured = (FIXTURES / "os/debian13/root/etc/apt/sources.list.d/gpuops-bench.sources").read_text()
    content = repositories.deb822(
        ["http://gpuops-mirror:8080/bench.gpuops.test/apt"],
        ["stable"],
        ["main"],
        "/etc/apt/keyrings/gpuops-bench.asc",
        description="gpuops test-bench repository",
    )
    assert content == captured
    assert content.startswith(repositories.HEADER)


def test_deb822_flat_repository_with_architectures():
    assert repositories.deb822(
        ["https://r.example/x86_64/"], ["/"], [], "/etc/apt/keyrings/r.gpg", ["amd64", "i386"]
    ) == (
        f"{repositories.HEADER}"
        "Types: deb\n"
        "URIs: https://r.example/x86_64/\n"
        "Suites: /\n"
        "Architectures: amd64 i386\n"
        "Signed-By: /etc/apt/keyrings/r.gpg\n"
    )


def test_yum_repo_checks_signatures_and_lists_every_baseurl():
    assert repositories.yum_repo(
        "cuda", ["http://m/a/x86_64", "http://m/b/x86_64"], "/etc/pki/rpm-gpg/RPM-GPG-KEY-cuda"
    ) == (
        f"{repositories.HEADER}"
        "[cuda]\n"
        "name=cuda\n"
        "baseurl=http://m/a/x86_64\n"
        "        http://m/b/x86_64\n"
        "enabled=1\n"
        "gpgcheck=1\n"
        "gpgkey=file:///etc/pki/rpm-gpg/RPM-GPG-KEY-cuda\n"
    )


@pytest.mark.parametrize(("key", "armored"), [("gpuops-bench.asc", True), ("gpuops-bench.gpg", False)])
def test_is_armored(key, armored):
    assert repositories.is_armored((FIXTURES / "keys" / key).read_bytes()) is armored


INDEX = {"key_url": "http://m/k.pub", "key_fingerprints": ["ABCD"], "key_sha256": "aa11", "key_problem": None}
FIX = "correct the pins."


@pytest.mark.parametrize(
    ("index", "fingerprint", "sha256", "problem"),
    [
        # The pin's spaces and case do not matter, nor the SHA-256's case.
        (INDEX, "ab cd", "", None),
        (INDEX, "ABCD", "AA11", None),
        (
            INDEX,
            "ABCD",
            "bb22",
            "n1: the signing key http://m/k.pub holds ABCD with SHA-256 aa11, but p_fingerprint is ABCD and p_sha256 "
            "bb22: refusing to trust it. Nothing was changed. Fix: correct the pins.",
        ),
        # Another key, or one more than the pinned one: the file must hold exactly the pinned key.
        (
            dict(INDEX, key_fingerprints=["EEEE", "ABCD"]),
            "abcd",
            "",
            "n1: the signing key http://m/k.pub holds EEEE, ABCD with SHA-256 aa11, but p_fingerprint is ABCD: "
            "refusing to trust it. Nothing was changed. Fix: correct the pins.",
        ),
        (
            dict(INDEX, key_fingerprints=None, key_problem="not an OpenPGP key"),
            "ABCD",
            "",
            "n1: the signing key http://m/k.pub holds no key (not an OpenPGP key) with SHA-256 aa11, but p_fingerprint "
            "is ABCD: refusing to trust it. Nothing was changed. Fix: correct the pins.",
        ),
    ],
)
def test_key_problem(index, fingerprint, sha256, problem):
    found = repositories.key_problem(host="n1", index=index, pins="p", fingerprint=fingerprint, sha256=sha256, fix=FIX)
    assert found == problem
