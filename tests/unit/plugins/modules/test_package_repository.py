"""package_repository's main() writing into tmp_path instead of /etc, with the bench repository's real signing key."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from ansible_collections.gpuops.bringup.plugins.module_utils import repositories
from ansible_collections.gpuops.bringup.plugins.modules import package_repository

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures"
ARMORED = (FIXTURES / "keys" / "gpuops-bench.asc").read_bytes()
BINARY = (FIXTURES / "keys" / "gpuops-bench.gpg").read_bytes()
ARMORED_SHA256 = hashlib.sha256(ARMORED).hexdigest()
BINARY_SHA256 = hashlib.sha256(BINARY).hexdigest()
# gpg --show-keys tests/fixtures/keys/gpuops-bench.asc
FINGERPRINT = "C0B6C96E2BF82416E3803BE742E82759479F1809"
MIRROR = "http://gpuops-mirror:8080"
KEY_URL = "http://bench.gpuops.test/apt/gpuops-bench.asc"
MIRRORED_KEY_URL = f"{MIRROR}/bench.gpuops.test/apt/gpuops-bench.asc"
# The arguments that produced tests/fixtures/os/debian13/.../gpuops-bench.sources on the bench's Debian 13 node.
BENCH = {
    "name": "gpuops-bench",
    "uris": ["http://bench.gpuops.test/apt"],
    "suites": ["stable"],
    "components": ["main"],
    "key_url": KEY_URL,
    "key_sha256": ARMORED_SHA256,
    "mirror_url": MIRROR,
    "description": "gpuops test-bench repository",
}
CUDA_URI = "https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/"


def without(args, *keys):
    return {key: value for key, value in args.items() if key not in keys}


class Response:
    def __init__(self, body):
        self.body = body

    def read(self, size=-1):
        return self.body if size < 0 else self.body[:size]


class Host:
    """The files package_repository manages, under tmp_path, and the URLs it downloaded."""

    def __init__(self, root):
        self.root = root
        self.fetched = []
        self.served = {}

    def path(self, path):
        return self.root / path.lstrip("/")

    def exists(self, path):
        return self.path(path).exists()

    def read(self, path):
        return self.path(path).read_bytes()

    def write(self, path, data):
        self.path(path).parent.mkdir(parents=True, exist_ok=True)
        self.path(path).write_bytes(data)


@pytest.fixture
def host(monkeypatch, tmp_path):
    """Run package_repository against tmp_path: kind (apt or dnf) chosen per test, downloads served from a table."""
    state = Host(tmp_path)
    real_paths = package_repository.paths
    real_isdir = os.path.isdir

    def fetch_url(_module, url, timeout):
        state.fetched.append(url)
        if url in state.served:
            return Response(state.served[url]), {"status": 200, "url": url}
        return None, {"status": 404, "msg": "HTTP Error 404: Not Found", "url": url}

    def use(kind):
        monkeypatch.setattr(os.path, "isdir", lambda p: kind == "apt" if p == "/etc/apt" else real_isdir(p))
        return state

    monkeypatch.setattr(
        package_repository,
        "paths",
        lambda kind, name, armored: tuple(str(state.path(p)) for p in real_paths(kind, name, armored)),
    )
    monkeypatch.setattr(package_repository, "fetch_url", fetch_url)
    return use


@pytest.fixture
def run(run_module, command_table):
    """Run package_repository; no command may be run (the module downloads, it runs no tool)."""

    def call(args, check_mode=False):
        return run_module(package_repository.main, args, command_table({}, {}), check_mode=check_mode)

    return call


def test_apt_repository_through_the_mirror_matches_the_bench_node(host, run):
    state = host("apt")
    state.served[MIRRORED_KEY_URL] = ARMORED
    result, failed = run(BENCH)
    assert not failed
    assert state.fetched == [MIRRORED_KEY_URL]
    key_file = str(state.path("/etc/apt/keyrings/gpuops-bench.asc"))
    assert result["changed"] is True
    assert result["uris"] == [f"{MIRROR}/bench.gpuops.test/apt"]
    assert result["key_file"] == key_file
    assert state.read("/etc/apt/keyrings/gpuops-bench.asc") == ARMORED
    # What the module wrote on the bench node, with the key under tmp_path.
    written = (FIXTURES / "os/debian13/root/etc/apt/sources.list.d/gpuops-bench.sources").read_text()
    assert state.read("/etc/apt/sources.list.d/gpuops-bench.sources").decode() == written.replace(
        "/etc/apt/keyrings/gpuops-bench.asc", key_file
    )


def test_second_run_changes_nothing_and_downloads_nothing(host, run):
    state = host("apt")
    state.served[MIRRORED_KEY_URL] = ARMORED
    run(BENCH)
    state.fetched.clear()
    result, failed = run(BENCH)
    assert not failed
    assert result["changed"] is False
    # The installed key has the right checksum: no download.
    assert state.fetched == []


def test_check_mode_writes_nothing_and_shows_the_diff(host, run):
    state = host("apt")
    state.served[MIRRORED_KEY_URL] = ARMORED
    result, failed = run(BENCH, check_mode=True)
    assert not failed
    assert result["changed"] is True
    assert not state.exists("/etc/apt/sources.list.d/gpuops-bench.sources")
    assert not state.exists("/etc/apt/keyrings/gpuops-bench.asc")
    source_file = str(state.path("/etc/apt/sources.list.d/gpuops-bench.sources"))
    assert result["diff"] == {
        "before_header": source_file,
        "after_header": source_file,
        "before": "# (signing key differs)\n",
        "after": repositories.deb822(
            [f"{MIRROR}/bench.gpuops.test/apt"],
            ["stable"],
            ["main"],
            str(state.path("/etc/apt/keyrings/gpuops-bench.asc")),
            description="gpuops test-bench repository",
        ),
    }


def test_changed_uri_is_rewritten_and_shown(host, run):
    state = host("apt")
    state.served[MIRRORED_KEY_URL] = ARMORED
    run(BENCH)
    state.served[KEY_URL] = ARMORED
    result, failed = run({**BENCH, "mirror_url": ""})
    assert not failed
    assert result["changed"] is True
    assert state.fetched == [MIRRORED_KEY_URL]
    assert "URIs: http://gpuops-mirror:8080/bench.gpuops.test/apt\n" in result["diff"]["before"]
    assert "URIs: http://bench.gpuops.test/apt\n" in result["diff"]["after"]
    assert b"URIs: http://bench.gpuops.test/apt\n" in state.read("/etc/apt/sources.list.d/gpuops-bench.sources")


def test_key_checksum_mismatch_fails_with_both_hashes_and_writes_nothing(host, run):
    state = host("apt")
    state.served[MIRRORED_KEY_URL] = ARMORED
    result, failed = run({**BENCH, "key_sha256": BINARY_SHA256.upper()})
    assert failed
    assert result["msg"] == (
        f"the signing key from {MIRRORED_KEY_URL} has SHA-256 {ARMORED_SHA256}, expected {BINARY_SHA256} "
        "(key_sha256): refusing to trust it"
    )
    assert not state.exists("/etc/apt/keyrings/gpuops-bench.asc")
    assert not state.exists("/etc/apt/sources.list.d/gpuops-bench.sources")


def test_a_fingerprint_pin_accepts_the_key_in_either_format(host, run):
    state = host("apt")
    state.served[MIRRORED_KEY_URL] = BINARY
    written = " ".join(FINGERPRINT[i : i + 4] for i in range(0, 40, 4)).lower()
    result, failed = run({**without(BENCH, "key_sha256"), "key_fingerprint": written})
    assert not failed, result
    assert state.read("/etc/apt/keyrings/gpuops-bench.gpg") == BINARY
    # Installed and still passing the pin: no download on the next run.
    state.fetched.clear()
    result, failed = run({**without(BENCH, "key_sha256"), "key_fingerprint": FINGERPRINT})
    assert not failed
    assert result["changed"] is False
    assert state.fetched == []


@pytest.mark.parametrize(
    ("served", "msg"),
    [
        (
            ARMORED,
            f"holds the key(s) {FINGERPRINT}, expected only EB693B3035CD5710E231E123A4B469963BF863CC (key_fingerprint)",
        ),
        (b"<html>Not Found</html>", "is no OpenPGP public key (byte 0 is no OpenPGP packet header)"),
    ],
)
def test_a_fingerprint_mismatch_fails_and_writes_nothing(host, run, served, msg):
    state = host("apt")
    state.served[MIRRORED_KEY_URL] = served
    args = {**without(BENCH, "key_sha256"), "key_fingerprint": "EB693B3035CD5710E231E123A4B469963BF863CC"}
    result, failed = run(args)
    assert failed
    assert result["msg"] == f"the signing key from {MIRRORED_KEY_URL} {msg}: refusing to trust it"
    assert not any(path.is_file() for path in state.root.rglob("*"))


def test_key_that_cannot_be_downloaded_fails_with_the_url(host, run):
    host("apt")
    result, failed = run(BENCH)
    assert failed
    assert result["msg"] == f"could not download the signing key from {MIRRORED_KEY_URL}: HTTP Error 404: Not Found"
    assert result["status"] == 404


def test_flat_repository_with_a_binary_key(host, run):
    state = host("apt")
    state.served[f"{CUDA_URI}gpuops-bench.gpg"] = BINARY
    args = {
        "name": "cuda",
        "uris": [CUDA_URI],
        "suites": ["/"],
        "key_url": f"{CUDA_URI}gpuops-bench.gpg",
        "key_sha256": BINARY_SHA256,
    }
    result, failed = run(args)
    assert not failed
    key_file = str(state.path("/etc/apt/keyrings/cuda.gpg"))
    assert result["key_file"] == key_file
    assert state.read("/etc/apt/keyrings/cuda.gpg") == BINARY
    assert state.read("/etc/apt/sources.list.d/cuda.sources").decode() == (
        f"{repositories.HEADER}Types: deb\nURIs: {CUDA_URI}\nSuites: /\nSigned-By: {key_file}\n"
    )


def test_key_content_is_written_as_given(host, run):
    state = host("apt")
    args = {**without(BENCH, "key_url", "key_sha256"), "key_content": ARMORED.decode().rstrip("\n")}
    result, failed = run(args)
    assert not failed
    assert state.fetched == []
    assert result["changed"] is True
    assert state.read("/etc/apt/keyrings/gpuops-bench.asc") == ARMORED


def test_dnf_repository(host, run):
    state = host("dnf")
    state.served[MIRRORED_KEY_URL] = ARMORED
    args = {**BENCH, "uris": ["http://bench.gpuops.test/rpm/el9/x86_64"], "suites": [], "components": []}
    result, failed = run(args)
    assert not failed
    key_file = str(state.path("/etc/pki/rpm-gpg/RPM-GPG-KEY-gpuops-bench"))
    assert result["source_file"] == str(state.path("/etc/yum.repos.d/gpuops-bench.repo"))
    assert state.read("/etc/pki/rpm-gpg/RPM-GPG-KEY-gpuops-bench") == ARMORED
    assert state.read("/etc/yum.repos.d/gpuops-bench.repo").decode() == (
        f"{repositories.HEADER}"
        "[gpuops-bench]\n"
        "name=gpuops test-bench repository\n"
        f"baseurl={MIRROR}/bench.gpuops.test/rpm/el9/x86_64\n"
        "enabled=1\n"
        "gpgcheck=1\n"
        f"gpgkey=file://{key_file}\n"
    )


@pytest.mark.parametrize(
    ("args", "msg"),
    [
        (
            {
                "name": "gpuops-bench",
                "uris": ["http://bench.gpuops.test/apt"],
                "suites": ["stable"],
                "components": ["main"],
            },
            "repository 'gpuops-bench': has no signing key: give key_url with key_fingerprint or key_sha256, or "
            "key_content; "
            "a repository is never trusted without its key",
        ),
        (
            {**BENCH, "suites": ["/"]},
            "repository 'gpuops-bench': a flat repository (suite '/') takes no components, got ['main']",
        ),
        (
            {**BENCH, "key_sha256": "20e5a028"},
            f"repository 'gpuops-bench': key_sha256 '20e5a028' is not a SHA-256 hex digest; "
            f"compute it with sha256sum on the key from {KEY_URL}",
        ),
        (
            {**BENCH, "mirror_url": "ftp://mirror.example"},
            "mirror_url 'ftp://mirror.example' is not usable: "
            "it must be an http://, https:// or file:// URL with no spaces, query or fragment",
        ),
        (
            without(BENCH, "key_sha256"),
            f"repository 'gpuops-bench': key_url {KEY_URL} needs its pin: key_fingerprint (as the vendor publishes "
            "it) or key_sha256 (sha256sum of the file)",
        ),
        ({**BENCH, "key_content": "x"}, "parameters are mutually exclusive: key_url|key_content"),
        (
            {"name": "../gpuops", "state": "absent"},
            "repository '../gpuops': name must be letters, digits, '.', '_' or '-'",
        ),
    ],
)
def test_bad_arguments_fail_before_any_download(host, run, args, msg):
    state = host("apt")
    result, failed = run(args)
    assert failed
    assert result["msg"] == msg
    assert state.fetched == []
    assert not any(state.root.iterdir())


def test_relative_key_url_with_a_mirror_fails_cleanly(host, run):
    host("apt")
    result, failed = run({**BENCH, "key_url": "gpuops-bench.asc"})
    assert failed
    assert "gpuops-bench.asc" in result["msg"]


def test_absent_when_nothing_is_there(host, run):
    host("apt")
    result, failed = run({"name": "gpuops-bench", "state": "absent"})
    assert not failed
    assert result["changed"] is False


def test_absent_in_check_mode_keeps_the_files(host, run):
    state = host("apt")
    state.write("/etc/apt/sources.list.d/gpuops-bench.sources", b"x")
    state.write("/etc/apt/keyrings/gpuops-bench.asc", ARMORED)
    result, failed = run({"name": "gpuops-bench", "state": "absent"}, check_mode=True)
    assert not failed
    assert result["changed"] is True
    assert state.exists("/etc/apt/sources.list.d/gpuops-bench.sources")
    assert state.exists("/etc/apt/keyrings/gpuops-bench.asc")


@pytest.mark.parametrize(
    ("kind", "files"),
    [
        ("apt", ["/etc/apt/sources.list.d/gpuops-bench.sources", "/etc/apt/keyrings/gpuops-bench.asc"]),
        ("dnf", ["/etc/yum.repos.d/gpuops-bench.repo", "/etc/pki/rpm-gpg/RPM-GPG-KEY-gpuops-bench"]),
    ],
)
def test_absent_removes_source_and_key(host, run, kind, files):
    state = host(kind)
    for path in files:
        state.write(path, ARMORED)
    result, failed = run({"name": "gpuops-bench", "state": "absent"})
    assert not failed
    assert result["changed"] is True
    assert not any(state.exists(path) for path in files)
    assert result["diff"]["before"] == "".join(f"{state.path(path)}\n" for path in files)
