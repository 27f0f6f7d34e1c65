"""rdma_fabric_facts.gather over synthetic trees laid out as a Debian 13 node has them after the driver's DKMS build
(module file names as the bench's trixie containers had them: tests/unit/plugins/modules/test_nvidia_driver_facts.py)
and, for DOCA, with OFED's ib_core under updates/dkms."""

from __future__ import annotations

import os

import pytest

from ansible_collections.gpuops.bringup.plugins.module_utils.rooted import RootedReader
from ansible_collections.gpuops.bringup.plugins.modules import rdma_fabric_facts

KERNEL = "6.12.117+deb13-amd64"
DKMS = f"/lib/modules/{KERNEL}/updates/dkms"
DRIVER = [f"nvidia-tesla-535{s}.ko.xz" for s in ("", "-modeset", "-drm", "-uvm", "-peermem")]


def touch(root, path, text="", mtime=None):
    target = root / path.lstrip("/")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)
    if mtime is not None:
        os.utime(target, (mtime, mtime))


def params(**changes):
    return {"stack": "inbox", "kernels": [KERNEL], **changes}


def gather(root, parameters, srcversions=None):
    """gather over the tree, the running kernel KERNEL, modinfo's srcversion answered from srcversions (path under
    the tree: hash)."""

    def srcversion(path):
        return (srcversions or {}).get(path.removeprefix(str(root)))

    return rdma_fabric_facts.gather(RootedReader(str(root)), parameters, KERNEL, srcversion)


@pytest.fixture
def driver(tmp_path):
    for name in DRIVER:
        touch(tmp_path, f"{DKMS}/{name}", mtime=1000)
    return tmp_path


def test_no_driver(tmp_path):
    (tmp_path / "lib" / "modules" / KERNEL).mkdir(parents=True)
    facts = gather(tmp_path, params())
    assert facts["driver_module"] is None
    assert facts["peermem"]["status"] == "no_driver"
    assert facts["peermem"]["loaded"] is False


def test_inbox_driver_built_and_peermem_loaded(driver):
    touch(driver, "/proc/modules", "nvidia_tesla_535_peermem 16384 0 - Live 0x0\nib_core 1 0 - Live 0x0\n")
    facts = gather(driver, params())
    assert facts["driver_module"] == "nvidia-tesla-535"
    assert facts["kernels"][KERNEL]["peermem"] == {"path": f"{DKMS}/nvidia-tesla-535-peermem.ko.xz", "mtime": 1000}
    assert facts["peermem"]["status"] == "ready"
    assert facts["peermem"]["loaded"] is True


@pytest.mark.parametrize(("ofed_mtime", "status"), [(2000, "rebuild"), (500, "ready")])
def test_doca_order(driver, ofed_mtime, status):
    touch(driver, f"{DKMS}/ib_core.ko", mtime=ofed_mtime)
    facts = gather(driver, params(stack="doca"))
    assert facts["kernels"][KERNEL]["ofed_ib_core"]["path"] == f"{DKMS}/ib_core.ko"
    assert facts["peermem"]["status"] == status


def test_gids_skip_empty_entries(tmp_path):
    base = "/sys/class/infiniband/mlx5_0/ports/1"
    touch(tmp_path, f"{base}/gids/0", "fe80:0000:0000:0000:a288:c2ff:fead:eab8\n")
    touch(tmp_path, f"{base}/gids/1", "0000:0000:0000:0000:0000:0000:0000:0000\n")
    touch(tmp_path, f"{base}/gid_attrs/types/0", "RoCE v2\n")
    touch(tmp_path, f"{base}/gid_attrs/ndevs/0", "ens1np0\n")
    touch(tmp_path, "/sys/class/net/ens1np0/mtu", "9000\n")
    facts = gather(tmp_path, params(kernels=[]))
    assert facts["gids"] == {
        "mlx5_0": {
            "1": [{"index": 0, "gid": "fe80:0000:0000:0000:a288:c2ff:fead:eab8", "type": "RoCE v2", "ndev": "ens1np0"}]
        }
    }
    assert facts["netdevs"] == ["ens1np0"]
    assert facts["roce_gid_indexes"] == {}


def test_roce_gid_index_per_port(tmp_path):
    base = "/sys/class/infiniband/mlx5_0/ports/1"
    for index, gid, kind in [(0, "fe80:0000:0000:0000:a288:c2ff:fead:eab8", "IB/RoCE v1"),
                             (1, "fe80:0000:0000:0000:a288:c2ff:fead:eab8", "RoCE v2"),
                             (2, "0000:0000:0000:0000:0000:ffff:0a00:0001", "IB/RoCE v1"),
                             (3, "0000:0000:0000:0000:0000:ffff:0a00:0001", "RoCE v2")]:  # fmt: skip
        touch(tmp_path, f"{base}/gids/{index}", gid + "\n")
        touch(tmp_path, f"{base}/gid_attrs/types/{index}", kind + "\n")
    facts = gather(tmp_path, params(kernels=[]))
    assert facts["roce_gid_indexes"] == {"mlx5_0/1": 3}


def test_dkms_version_and_kernels_ib_core(driver):
    """The kernel's own ib_core loaded (no version file): a node that must reboot into OFED's."""
    for name in ("535.274.02", "535.261.03", "kernel-6.1.0-28-amd64-x86_64", "source"):
        (driver / "var" / "lib" / "dkms" / "nvidia-tesla-535" / name).mkdir(parents=True)
    touch(driver, "/proc/modules", "ib_core 1 0 - Live 0x0\n")
    facts = gather(driver, params())
    assert facts["driver_dkms_version"] == "535.274.02"
    assert facts["ib_core"] == {"loaded": True, "version": None, "srcversion": None, "installed_srcversion": None}


def test_ofed_ib_core_loaded(driver):
    touch(driver, "/proc/modules", "ib_core 1 0 - Live 0x0\n")
    touch(driver, "/sys/module/ib_core/version", "24.10-0.7.0\n")
    touch(driver, "/sys/module/ib_core/srcversion", "0F1E2D3C4B5A69788796A5B\n")
    touch(driver, f"/lib/modules/{KERNEL}/updates/dkms/ib_core.ko.xz")
    facts = gather(driver, params(stack="doca"), {f"/lib/modules/{KERNEL}/updates/dkms/ib_core.ko.xz": "C3B2A1"})
    assert facts["driver_dkms_version"] is None
    assert facts["ib_core"] == {
        "loaded": True,
        "version": "24.10-0.7.0",
        "srcversion": "0F1E2D3C4B5A69788796A5B",
        "installed_srcversion": "C3B2A1",
    }


def test_no_installed_srcversion_without_ofeds_ib_core_for_the_running_kernel(driver):
    """OFED's ib_core built for another kernel of the node is not the running one's."""
    touch(driver, "/proc/modules", "ib_core 1 0 - Live 0x0\n")
    touch(driver, "/sys/module/ib_core/version", "24.10-0.7.0\n")
    touch(driver, "/lib/modules/6.12.0-other/updates/dkms/ib_core.ko.xz")
    facts = gather(driver, params(stack="doca", kernels=[KERNEL, "6.12.0-other"]),
                   {"/lib/modules/6.12.0-other/updates/dkms/ib_core.ko.xz": "C3B2A1"})  # fmt: skip
    assert facts["kernels"]["6.12.0-other"]["ofed_ib_core"] is not None
    assert facts["ib_core"]["installed_srcversion"] is None


def test_owned_files_lists_what_matches_and_nothing_else(tmp_path):
    for path in ["/etc/systemd/network/60-gpuops-ib0.network", "/etc/systemd/network/60-gpuops-ib1.network",
                 "/etc/systemd/network/10-eth0.network", "/etc/systemd/system/gpuops-roce-qos-ens1.service",
                 "/etc/netplan/60-gpuops-rdma-fabric.yaml", "/etc/netplan/50-cloud-init.yaml"]:  # fmt: skip
        touch(tmp_path, path)
    # A link to nothing is the node's too: the role still removes it.
    (tmp_path / "etc/systemd/system/gpuops-roce-qos-gone.service").symlink_to(tmp_path / "nowhere")
    patterns = ["/etc/systemd/network/60-gpuops-*.network", "/etc/netplan/60-gpuops-rdma-fabric.yaml",
                "/etc/NetworkManager/system-connections/gpuops-*.nmconnection",
                "/etc/systemd/system/gpuops-roce-qos-*.service"]  # fmt: skip
    assert gather(tmp_path, params(kernels=[], owned_files=patterns))["owned_files"] == [
        "/etc/netplan/60-gpuops-rdma-fabric.yaml",
        "/etc/systemd/network/60-gpuops-ib0.network",
        "/etc/systemd/network/60-gpuops-ib1.network",
        "/etc/systemd/system/gpuops-roce-qos-ens1.service",
        "/etc/systemd/system/gpuops-roce-qos-gone.service",
    ]
    assert gather(tmp_path, params(kernels=[]))["owned_files"] == []
