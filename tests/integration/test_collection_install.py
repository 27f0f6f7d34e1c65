"""The collection as an operator gets it: built into its tarball, installed with ansible-galaxy (offline) into a fresh
path that holds the collections it declares (from the `ansible` package), and run from an unrelated directory without
this repository's ansible.cfg, its .collections link or the other collections of the `ansible` package: every
playbook by FQCN passes --syntax-check and a module runs. A collection the roles use but galaxy.yml does not declare
is not installed, so the syntax check fails on it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
GALAXY = yaml.safe_load((ROOT / "galaxy.yml").read_text())
PLAYBOOKS = sorted(p.stem for p in (ROOT / "playbooks").glob("*.yml"))
# Where the `ansible` package (requirements.txt) keeps the collections it carries.
PACKAGED = Path(sys.prefix) / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages"


def clean_env(tmp_path, collections):
    """The environment of a controller that has only the installed collections: no ANSIBLE_* setting of this
    repository's, an empty configuration file, no system path scanned for collections."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    config = tmp_path / "empty.cfg"
    config.write_text("")
    env.update(ANSIBLE_CONFIG=str(config), ANSIBLE_COLLECTIONS_PATH=str(collections),
               ANSIBLE_COLLECTIONS_SCAN_SYS_PATH="false", ANSIBLE_NOCOLOR="1", ANSIBLE_LOCAL_TEMP=str(tmp_path / "tmp"),
               ANSIBLE_HOME=str(tmp_path / "home"))  # fmt: skip
    return env


def run(args, cwd, env):
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=600, check=False)


def copy_dependency(name, collections):
    """The `ansible` package's installed copy of a collection, placed in the fresh path as a site's controller has it
    (that copy cannot be packed again: its FILES.json names files the package leaves out). Only what galaxy.yml
    declares is copied."""
    namespace, collection = name.split(".")
    source = PACKAGED / "ansible_collections" / namespace / collection
    shutil.copytree(source, collections / "ansible_collections" / namespace / collection,
                    ignore=shutil.ignore_patterns("__pycache__"))  # fmt: skip


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(the built tarball, the fresh collections path, an unrelated working directory, its environment)."""
    tmp_path = tmp_path_factory.mktemp("collection")
    dist, collections, elsewhere = tmp_path / "dist", tmp_path / "collections", tmp_path / "elsewhere"
    for directory in (dist, collections, elsewhere):
        directory.mkdir()
    env = clean_env(tmp_path, collections)
    built = run(["ansible-galaxy", "collection", "build", "--output-path", str(dist), str(ROOT)], elsewhere, env)
    assert built.returncode == 0, built.stdout + built.stderr
    (tarball,) = dist.glob("gpuops-bringup-*.tar.gz")
    for name in GALAXY["dependencies"]:
        copy_dependency(name, collections)
    # Offline: galaxy resolves the declared dependencies against what the path holds, and refuses a version outside
    # galaxy.yml's bounds.
    done = run(["ansible-galaxy", "collection", "install", "--offline", str(tarball), "-p", str(collections)],
               elsewhere, env)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "gpuops.bringup:" in done.stdout and "was installed successfully" in done.stdout
    return tarball, collections, elsewhere, env


def test_the_tarball_holds_what_runs_not_the_bench(installed):
    tarball = installed[0]
    with tarfile.open(tarball) as tar:
        names = tar.getnames()
    tops = {name.split("/")[0] for name in names}
    assert {"roles", "playbooks", "plugins", "meta", "schemas", "LICENSE", "README.md", "MANIFEST.json"} <= tops
    development = {"tests", "molecule", "inventory", ".ci", "Makefile", "ansible.cfg", "requirements-dev.txt", "cli"}
    assert not tops & development
    assert (ROOT / "LICENSE").read_text().startswith(" " * 20 + "GNU GENERAL PUBLIC LICENSE\n")
    assert GALAXY["license"] == ["GPL-3.0-or-later"]


def test_the_declared_collections_are_installed_with_it(installed):
    collections = installed[1] / "ansible_collections"
    found = {f"{p.parent.name}.{p.name}" for p in collections.glob("*/*") if (p / "MANIFEST.json").is_file()}
    assert found == {"gpuops.bringup", *GALAXY["dependencies"]}


@pytest.mark.parametrize("playbook", PLAYBOOKS)
def test_every_playbook_passes_the_syntax_check_by_its_name(installed, playbook):
    _tarball, _collections, elsewhere, env = installed
    result = run(["ansible-playbook", "-i", "localhost,", "--syntax-check", f"gpuops.bringup.{playbook}"], elsewhere,
                 env)  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr


def test_an_undeclared_collection_is_missing(installed, tmp_path):
    """The check above can fail: a playbook calling a module of a collection galaxy.yml does not declare."""
    _tarball, _collections, elsewhere, env = installed
    playbook = tmp_path / "undeclared.yml"
    playbook.write_text("- hosts: localhost\n  tasks:\n    - ansible.posix.sysctl: {name: vm.swappiness, value: 1}\n")
    result = run(["ansible-playbook", "-i", "localhost,", "--syntax-check", str(playbook)], elsewhere, env)
    assert result.returncode != 0 and "ansible.posix.sysctl" in result.stdout + result.stderr


def test_a_module_runs_from_the_installed_collection(installed):
    _tarball, _collections, elsewhere, env = installed
    result = run(["ansible", "localhost", "-i", "localhost,", "-c", "local", "-m", "gpuops.bringup.os_facts",
                  "-e", f"ansible_python_interpreter={sys.executable}"], elsewhere, env)  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert "gpuops_os" in result.stdout and "SUCCESS" in result.stdout


def test_an_operator_inventory_gets_the_shipped_profiles_by_group(installed, tmp_path):
    """An inventory of the operator's own, outside this repository, names profiles by group only: the installed
    collection's playbooks give each host its profile (with the site's override merged in), and its inventory check
    passes; an override out of bounds is refused naming the host, the value and the fix."""
    _tarball, _collections, _elsewhere, env = installed
    site = tmp_path / "site"
    (site / "group_vars").mkdir(parents=True)
    hosts = {"all": {"children": {"rack_a01": {"hosts": {"a01-gpu01": None, "a01-gpu02": None, "a01-inf01": None}},
                                  "hgx_h100_8gpu": {"hosts": {"a01-gpu01": None, "a01-gpu02": None}},
                                  "pcie_l40s_4gpu": {"hosts": {"a01-inf01": None}}}}}  # fmt: skip
    (site / "hosts.yml").write_text(yaml.safe_dump(hosts))
    (site / "group_vars" / "hgx_h100_8gpu.yml").write_text(
        "gpuops_hardware_overrides: {gates: {nccl_pair_busbw_gbps: 150}}\n"
    )
    check = ["ansible-playbook", "-i", str(site / "hosts.yml"), "gpuops.bringup.stage_inputs", "-e",
             '{"__stage_prefixes": []}', "--tags", "gpuops_inventory", "-v"]  # fmt: skip
    result = run(check, site, env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "3 hosts in 1 rack(s), 2 hardware profile(s): inventory is well-formed" in result.stdout
    (site / "host_vars").mkdir()
    (site / "host_vars" / "a01-gpu02.yml").write_text("gpuops_hardware_overrides: {infiniband: {ports: 64}}\n")
    result = run(check, site, env)
    assert result.returncode == 2
    refused = ("host a01-gpu02: gpuops_hardware.infiniband.ports is 64, expected an integer from 0 to 32; see "
               "plugins/module_utils/hardware_profiles.py for complete profiles")  # fmt: skip
    assert refused in " ".join(result.stdout.split())
