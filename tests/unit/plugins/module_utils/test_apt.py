"""apt's parsers on `apt-cache policy` captured in the bench's Debian 12 and 13 containers (tests/fixtures/apt)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ansible_collections.gpuops.bringup.plugins.module_utils import apt

APT = Path(__file__).resolve().parents[3] / "fixtures" / "apt"
TESLA = "535.274.02-1~deb13u1"


def policy(name):
    return apt.parse_apt_policy((APT / name).read_text())


def test_policy_of_an_installed_driver_on_debian_13():
    table = policy("trixie-tesla-535-installed.policy.txt")
    assert table["nvidia-tesla-535-kernel-dkms"] == {
        "installed": TESLA,
        "candidate": TESLA,
        "versions": [{"version": TESLA, "installed": True, "downloadable": True}],
    }
    assert table["nvidia-kernel-dkms"]["installed"] is None
    assert table["nvidia-kernel-dkms"]["candidate"] == "550.163.01-2"


def test_policy_lists_every_version_newest_first_and_which_is_installed():
    image = policy("trixie-tesla-535-installed.policy.txt")["linux-image-amd64"]
    assert image["installed"] == "6.12.117-1"
    assert image["candidate"] == "6.12.118-1"
    assert image["versions"] == [
        {"version": "6.12.118-1", "installed": False, "downloadable": True},
        {"version": "6.12.117-1", "installed": True, "downloadable": True},
    ]


def test_policy_leaves_out_names_apt_does_not_know():
    table = policy("trixie-tesla-535-installed.policy.txt")
    # Asked for, printed nothing: no such package in trixie, and the host's kernel has no headers package.
    assert "nvidia-tesla-535-open-kernel-dkms" not in table
    assert "linux-headers-6.18.44-fc-v509" not in table
    assert len(table) == 17


def test_policy_on_debian_12_carries_two_535_package_sets():
    table = policy("bookworm-fresh.policy.txt")
    assert table["nvidia-tesla-535-kernel-dkms"]["candidate"] == "535.216.03-3~deb12u1"
    assert [v["version"] for v in table["nvidia-kernel-dkms"]["versions"]] == ["535.309.01-0+deb12u1", "535.261.03-1"]
    # The open modules were not updated with the proprietary ones.
    assert [v["version"] for v in table["nvidia-open-kernel-dkms"]["versions"]] == ["535.261.03-1"]
    assert all(v["downloadable"] for p in table.values() for v in p["versions"])


def test_a_version_only_in_dpkg_status_is_not_downloadable():
    text = (
        "nvidia-tesla-535-kernel-dkms:\n"
        "  Installed: 535.216.03-3~deb12u1\n"
        "  Candidate: 535.216.03-3~deb12u1\n"
        "  Version table:\n"
        " *** 535.216.03-3~deb12u1 100\n"
        "        100 /var/lib/dpkg/status\n"
    )
    entry = apt.parse_apt_policy(text)["nvidia-tesla-535-kernel-dkms"]
    assert entry["versions"] == [{"version": "535.216.03-3~deb12u1", "installed": True, "downloadable": False}]


@pytest.mark.parametrize(
    ("version", "upstream"),
    [(TESLA, "535.274.02"), ("535.309.01-0+deb12u1", "535.309.01"), ("1:2.3-4", "2.3"), ("550.54.15", "550.54.15")],
)
def test_upstream_version(version, upstream):
    assert apt.upstream_version(version) == upstream


# Each expected result is what `dpkg --compare-versions` said on Debian 12.
@pytest.mark.parametrize(
    ("first", "second", "expected"),
    [
        ("535.274.02-1~deb13u1", "535.274.02-1", -1),
        ("535.309.01-0+deb12u1", "535.261.03-1", 1),
        ("550.163.01-2", "550.163.01-4~bpo13+1", -1),
        ("1:1.0-1", "2.0-1", 1),
        ("1.0~rc1-1", "1.0-1", -1),
        ("6.12.118-1", "6.12.117-1", 1),
        ("1.0a-1", "1.0-1", 1),
        ("1.0-1", "1.0", 1),
        ("1.0+dfsg-1", "1.0-1", 1),
        ("1.10-1", "1.9-1", 1),
        ("0:1.0-1", "1.0-1", 0),
        ("1.0-1.1", "1.0-1", 1),
    ],
)
def test_compare_versions_agrees_with_dpkg(first, second, expected):
    assert apt.compare_versions(first, second) == expected
    assert apt.compare_versions(second, first) == -expected


def test_newest():
    assert apt.newest(["535.261.03-1", "535.309.01-0+deb12u1", "535.216.03-3~deb12u1"]) == "535.309.01-0+deb12u1"
    assert apt.newest([]) is None


# package_info's packages as it reads a node with the 535 driver installed: the kernel module package at its version,
# nvidia-smi at another, libcuda1 half-configured (a failed postinst), firmware not installed.
PACKAGES = {
    "nvidia-tesla-535-kernel-dkms": {"installed": TESLA, "held": True, "broken": False},
    "nvidia-tesla-535-smi": {"installed": "535.216.03-3~deb12u1", "held": False, "broken": False},
    "nvidia-tesla-535-libcuda1": {"installed": TESLA, "held": False, "broken": True},
    "firmware-nvidia-gsp": {"installed": None, "held": False, "broken": False},
    "procps": {"installed": "2:4.0.4-9", "held": False, "broken": False},
}


@pytest.mark.parametrize(
    ("specs", "left"),
    [
        ([f"nvidia-tesla-535-kernel-dkms={TESLA}"], []),
        ([f"nvidia-tesla-535-smi={TESLA}"], [f"nvidia-tesla-535-smi={TESLA}"]),
        ([f"firmware-nvidia-gsp={TESLA}"], [f"firmware-nvidia-gsp={TESLA}"]),
        # Installed at the pinned version, but dpkg left it broken: apt repairs it.
        ([f"nvidia-tesla-535-libcuda1={TESLA}"], [f"nvidia-tesla-535-libcuda1={TESLA}"]),
        # Not read: package_info says nothing about it.
        (["kmod"], ["kmod"]),
        # A bare name is done at any version.
        (["procps"], []),
        (["firmware-nvidia-gsp"], ["firmware-nvidia-gsp"]),
        (["nvidia-tesla-535-libcuda1"], ["nvidia-tesla-535-libcuda1"]),
        # The version as dpkg prints it, epoch included: the apt module compares the strings.
        (["procps=4.0.4-9"], ["procps=4.0.4-9"]),
        (["procps=2:4.0.4-9"], []),
        # Forms the roles do not use are apt's to decide.
        (["procps=2:4.0.4*"], ["procps=2:4.0.4*"]),
        (["procps:amd64"], ["procps:amd64"]),
        (["procps>=2:4.0.4-9"], ["procps>=2:4.0.4-9"]),
        ([], []),
    ],
)
def test_pending(specs, left):
    assert apt.pending(specs, PACKAGES) == left


def test_pending_keeps_the_order_it_was_given():
    specs = [
        "kmod",
        f"nvidia-tesla-535-kernel-dkms={TESLA}",
        f"nvidia-tesla-535-smi={TESLA}",
        "procps",
        f"firmware-nvidia-gsp={TESLA}",
    ]
    left = ["kmod", f"nvidia-tesla-535-smi={TESLA}", f"firmware-nvidia-gsp={TESLA}"]
    assert apt.pending(specs, PACKAGES) == left
    assert apt.pending(specs[::-1], PACKAGES) == left[::-1]
