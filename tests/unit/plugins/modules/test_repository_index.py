"""repository_index's main(): a flat repository's Packages.gz, Release and key served from a table, through the mirror;
the Release signed with gpg by throwaway keys (tests/signing.py), the key files also Debian's real ones."""

from __future__ import annotations

import gzip
import hashlib
import io
from pathlib import Path

import pytest
from signing import Signer, flat_repo

from ansible_collections.gpuops.bringup.plugins.modules import repository_index

UPSTREAM = "https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/"
MIRROR = "http://gpuops-mirror:8080"
MIRRORED = f"{MIRROR}/developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64"
# A real published key (Debian's, tests/fixtures/openpgp) and its fingerprint as gpg prints it.
KEY = (Path(__file__).resolve().parents[3] / "fixtures" / "openpgp" / "debian-archive-bookworm-stable.asc").read_bytes()
KEY_FINGERPRINT = "4D64FEC119C2029067D6E791F8D2585B8783D481"
INDEX = (
    b"Package: nvidia-fabricmanager-535\nVersion: 535.261.03-1\nArchitecture: amd64\n\n"
    b"Package: nvidia-fabricmanager-535\nVersion: 535.274.02-1\nArchitecture: amd64\n"
)


@pytest.fixture
def served(monkeypatch):
    table = {}

    def fetch_url(_module, url, timeout):
        if url in table:
            return io.BytesIO(table[url]), {"status": 200, "url": url}
        return None, {"status": 404, "msg": "HTTP Error 404: Not Found", "url": url}

    monkeypatch.setattr(repository_index, "fetch_url", fetch_url)
    return table


@pytest.fixture(scope="module")
def signer():
    made = Signer("repository")
    yield made
    made.close()


@pytest.fixture(scope="module")
def repo(tmp_path_factory, signer):
    """The files of a flat repository carrying INDEX, signed by signer."""
    return flat_repo(tmp_path_factory.mktemp("repo"), signer, INDEX)


def serve(served, repo, signer, *, files=("Packages.gz", "InRelease", "Release", "Release.gpg"), key=None):
    for name in files:
        served[f"{MIRRORED}/{name}"] = repo[name]
    served[f"{MIRRORED}/3bf863cc.pub"] = signer.key if key is None else key


ARGS = {"url": UPSTREAM, "names": ["nvidia-fabricmanager-535", "nvidia-fabricmanager"],
        "key_url": UPSTREAM + "3bf863cc.pub", "mirror_url": MIRROR}  # fmt: skip


def test_versions_and_key_checksum_through_the_mirror(run_module, command_table, served, repo, signer):
    serve(served, repo, signer)
    result, failed = run_module(repository_index.main, ARGS, command_table({}, {}), check_mode=True)
    assert not failed, result
    assert result["changed"] is False
    assert result["packages"] == {
        "nvidia-fabricmanager-535": ["535.261.03-1", "535.274.02-1"],
        "nvidia-fabricmanager": [],
    }
    assert result["index_url"] == f"{MIRRORED}/Packages.gz"
    assert result["key_sha256"] == hashlib.sha256(signer.key).hexdigest()
    assert result["key_fingerprints"] == [signer.fingerprint]
    assert result["key_problem"] is None
    assert result["release_url"] == f"{MIRRORED}/InRelease"
    assert result["signed_by"] == signer.fingerprint


def test_without_inrelease_release_and_its_detached_signature(run_module, command_table, served, repo, signer):
    serve(served, repo, signer, files=("Packages.gz", "Release", "Release.gpg"))
    result, failed = run_module(repository_index.main, ARGS, command_table({}, {}), check_mode=True)
    assert not failed, result
    assert (result["release_url"], result["signed_by"]) == (f"{MIRRORED}/Release", signer.fingerprint)


def test_a_release_another_key_signed_fails_before_its_index_is_trusted(
    run_module, command_table, served, repo, signer
):
    """A mirror serving the pinned key beside an index someone else signed: the versions are not returned."""
    stranger = Signer("stranger")
    signed_by_stranger = stranger.clearsign(repo["Release"])
    stranger.close()
    serve(served, repo, signer, key=KEY)
    result, failed = run_module(repository_index.main, ARGS, command_table({}, {}))
    assert failed
    assert "packages" not in result
    assert result["msg"] == (
        f"the repository's Release {MIRRORED}/InRelease is not signed by the key {MIRRORED}/3bf863cc.pub: no signature "
        f"of it verifies with the key file's keys: it is signed by {signer.fingerprint}; nothing from it is trusted. "
        "Check that the mirror holds this repository as its vendor signed it, and the key's pins"
    )
    served[f"{MIRRORED}/InRelease"] = signed_by_stranger
    served[f"{MIRRORED}/3bf863cc.pub"] = signer.key
    result, failed = run_module(repository_index.main, ARGS, command_table({}, {}))
    assert failed
    assert f"it is signed by {stranger.fingerprint}" in result["msg"]


def test_an_index_the_release_does_not_list_fails(run_module, command_table, served, repo, signer):
    """A Packages.gz changed after signing (or a mirror half-way through a sync)."""
    serve(served, repo, signer)
    changed = gzip.compress(INDEX + b"\nPackage: nvidia-fabricmanager-535\nVersion: 999-1\n")
    served[f"{MIRRORED}/Packages.gz"] = changed
    result, failed = run_module(repository_index.main, ARGS, command_table({}, {}))
    assert failed
    assert "packages" not in result
    listed = repo["Packages.gz"]
    assert result["msg"] == (
        f"{MIRRORED}/Packages.gz is not the index {MIRRORED}/InRelease signed: Packages.gz is {len(changed)} bytes "
        f"with SHA-256 {hashlib.sha256(changed).hexdigest()}; the signed Release lists {len(listed)} bytes "
        f"with {hashlib.sha256(listed).hexdigest()} (a mirror out of date, or changed)"
    )


def test_a_repository_without_any_release_fails(run_module, command_table, served, repo, signer):
    serve(served, repo, signer, files=("Packages.gz",))
    result, failed = run_module(repository_index.main, ARGS, command_table({}, {}))
    assert failed
    assert result["msg"].startswith(
        f"could not download the repository's Release from {MIRRORED}/Release: HTTP Error 404"
    )


def test_a_key_url_that_serves_no_key_says_why(run_module, command_table, served):
    """No key to verify with: the caller refuses key_problem against its pins, so nothing is verified here."""
    served[f"{MIRRORED}/Packages.gz"] = gzip.compress(INDEX)
    served[f"{MIRRORED}/3bf863cc.pub"] = b"<html>mirror error page</html>"
    args = {"url": UPSTREAM, "names": ["nvidia-fabricmanager-535"], "key_url": UPSTREAM + "3bf863cc.pub",
            "mirror_url": MIRROR}  # fmt: skip
    result, failed = run_module(repository_index.main, args, command_table({}, {}), check_mode=True)
    assert not failed, result
    assert result["key_fingerprints"] is None
    assert result["key_problem"] == "byte 0 is no OpenPGP packet header"
    assert (result["release_url"], result["signed_by"]) == (None, None)


def test_a_mirror_without_the_repository_fails_naming_the_url(run_module, command_table, served):
    result, failed = run_module(
        repository_index.main, {"url": UPSTREAM, "names": ["x"], "mirror_url": MIRROR}, command_table({}, {})
    )
    assert failed
    assert result["msg"].startswith(f"could not download the repository's package index from {MIRRORED}/Packages.gz")
    assert "with an offline mirror, that it holds this repository" in result["msg"]


def test_an_index_that_is_not_gzip_fails(run_module, command_table, served):
    served[f"{UPSTREAM}Packages.gz"] = b"<html>not found</html>"
    result, failed = run_module(repository_index.main, {"url": UPSTREAM, "names": ["x"]}, command_table({}, {}))
    assert failed
    assert "is not a gzip-compressed package index" in result["msg"]


def test_a_corrupt_index_fails_saying_so(run_module, command_table, served):
    # A damaged gzip member: zlib.error, which gzip.decompress let through as a traceback.
    served[f"{UPSTREAM}Packages.gz"] = b"\x1f\x8b\x08\x00" + bytes(range(100))
    result, failed = run_module(repository_index.main, {"url": UPSTREAM, "names": ["x"]}, command_table({}, {}))
    assert failed
    assert result["msg"] == (
        f"{UPSTREAM}Packages.gz is not a gzip-compressed package index: the compressed data is corrupt "
        "(Error -3 while decompressing data: invalid block type)"
    )


def test_a_download_larger_than_any_index_fails(run_module, command_table, served, monkeypatch):
    monkeypatch.setattr(repository_index, "MAX_INDEX_BYTES", 1000)
    served[f"{UPSTREAM}Packages.gz"] = b"x" * 1001
    result, failed = run_module(repository_index.main, {"url": UPSTREAM, "names": ["x"]}, command_table({}, {}))
    assert failed
    assert result["msg"] == (
        f"the repository's package index at {UPSTREAM}Packages.gz is larger than 1000 bytes, more than any repository's"
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"url": "http://[", "names": ["x"]}, "url 'http://[' is not usable: it is not a valid URL"),
        (
            {"url": UPSTREAM, "names": ["x"], "key_url": "https://x/k\nTrusted: yes"},
            "key_url 'https://x/k\\nTrusted: yes' is not usable: it must be an http://",
        ),
    ],
)
def test_a_url_that_is_no_url_fails_before_any_download(run_module, command_table, served, args, message):
    result, failed = run_module(repository_index.main, args, command_table({}, {}))
    assert failed
    assert result["msg"].startswith(message)


RHEL9 = "https://developer.download.nvidia.com/compute/cuda/repos/rhel9/x86_64/"
RHEL9_MIRRORED = f"{MIRROR}/developer.download.nvidia.com/compute/cuda/repos/rhel9/x86_64"
DNF = Path(__file__).resolve().parents[3] / "fixtures" / "dnf"


@pytest.fixture
def dnf_cache(monkeypatch, tmp_path):
    """The cache directory dnf is given, made where the test can see that it is removed afterwards."""
    cache = tmp_path / "cache"
    monkeypatch.setattr(repository_index.tempfile, "mkdtemp", lambda prefix: str(cache.mkdir() or cache))
    return cache


def repoquery(cache, names, url=RHEL9_MIRRORED):
    return ("/usr/bin/dnf", "repoquery", "--quiet", "--noplugins", f"--repofrompath=gpuops-index,{url}",
            "--repo=gpuops-index", f"--setopt=cachedir={cache}", "--setopt=gpuops-index.skip_if_unavailable=False",
            "--setopt=gpuops-index.module_hotfixes=true", "--showduplicates", "--qf=%{name}\t%{evr}", "--",
            *names)  # fmt: skip


def test_dnf_reads_an_rpm_md_repository_through_the_mirror_and_leaves_no_cache(
    run_module, command_table, served, dnf_cache
):
    """dnf 4.14's output (Debian 12's, RHEL 9's version) for a repository of the bench's rpms."""
    names = ["cuda-toolkit-12-4", "cuda-toolkit-11-8"]
    served[f"{RHEL9_MIRRORED}/D42D0685.pub"] = KEY
    table = command_table(
        {"dnf": "/usr/bin/dnf"},
        {repoquery(dnf_cache, names): (0, (DNF / "repoquery-repofrompath.stdout").read_text(), "")},
    )
    args = {"url": RHEL9, "names": names, "key_url": RHEL9 + "D42D0685.pub", "mirror_url": MIRROR, "manager": "dnf"}
    result, failed = run_module(repository_index.main, args, table, check_mode=True)
    assert not failed, result
    assert result["packages"] == {"cuda-toolkit-12-4": ["12.4.0-1", "12.4.1-1"], "cuda-toolkit-11-8": []}
    assert result["index_url"] == f"{RHEL9_MIRRORED}/repodata/repomd.xml"
    assert result["key_fingerprints"] == [KEY_FINGERPRINT]
    # dnf checks the repository's signatures itself once it is added (gpgcheck): nothing verified here.
    assert (result["release_url"], result["signed_by"]) == (None, None)
    assert not dnf_cache.exists()


def test_dnf_a_repository_it_cannot_read_fails_with_dnf_s_reason(run_module, command_table, served, dnf_cache):
    error = (DNF / "repoquery-unreachable.stderr").read_text()
    table = command_table({"dnf": "/usr/bin/dnf"}, {repoquery(dnf_cache, ["x"]): (1, "", error)})
    args = {"url": RHEL9, "names": ["x"], "mirror_url": MIRROR, "manager": "dnf"}
    result, failed = run_module(repository_index.main, args, table)
    assert failed
    assert result["msg"] == (
        f"could not read the repository at {RHEL9_MIRRORED} with dnf: {error.strip()}; check the URL and, with an "
        "offline mirror, that it holds this repository"
    )
    assert not dnf_cache.exists()
