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
    development = {"tests", "molecule", "inventory", ".ci", "Makefile", "ansible.cfg", "requirements-dev.txt", "cli",
                   "execution-environment.yml"}  # fmt: skip
    # What an execution environment's introspection reads from the installed collection.
    assert {"meta/execution-environment.yml", "meta/ee-requirements.txt", "bindep.txt"} <= set(names)
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


def test_a_rack_manifest_is_an_inventory_of_the_installed_collection(installed, tmp_path):
    """The manifest plugin from the installed copy, with no configuration of this repository's: the stages' check
    passes on what it makes; a faulty manifest adds no host, its problems printed, and with the setting the README
    recommends (unparsed_is_failed) the run fails (Ansible's default warns and runs on no host with status 0)."""
    _tarball, _collections, _elsewhere, env = installed
    fixtures = ROOT / "tests" / "fixtures" / "rack_manifest"
    for name in ("handover.csv", "faulty.csv"):
        shutil.copy(fixtures / name, tmp_path / name)
    check = ["ansible-playbook", "-i", "hall1.rack_manifest.yml", "gpuops.bringup.stage_inputs", "-e",
             '{"__stage_prefixes": []}', "--tags", "gpuops_inventory", "-v"]  # fmt: skip
    (tmp_path / "hall1.rack_manifest.yml").write_text("plugin: gpuops.bringup.rack_manifest\nmanifest: handover.csv\n")
    result = run(check, tmp_path, env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "4 hosts in 2 rack(s), 3 hardware profile(s): inventory is well-formed" in result.stdout
    (tmp_path / "hall1.rack_manifest.yml").write_text("plugin: gpuops.bringup.rack_manifest\nmanifest: faulty.csv\n")
    result = run(check, tmp_path, env)
    assert "TASK [" not in result.stdout
    assert "faulty.csv line 3: hostname 'A01_GPU02' is not a lower-case DNS name" in result.stderr
    result = run(check, tmp_path, {**env, "ANSIBLE_INVENTORY_UNPARSED_FAILED": "true"})
    assert result.returncode != 0 and "TASK [" not in result.stdout


def pins():
    """requirements.txt's pins, by package name."""
    lines = (ROOT / "requirements.txt").read_text().splitlines()
    return dict(line.split("==") for line in lines if "==" in line and not line.startswith("#"))


def test_the_execution_environment_s_build_context(installed, tmp_path):
    """ansible-builder create makes the build context of execution-environment.yml (no image can be built here): the
    collection from the tarball built first, ansible-core and ansible-runner at requirements.txt's pins, Python 3.11."""
    tarball = installed[0]
    definition = yaml.safe_load((ROOT / "execution-environment.yml").read_text())
    source = tmp_path / "checkout"
    (source / "dist").mkdir(parents=True)
    shutil.copy(ROOT / "execution-environment.yml", source)
    # The definition names the tarball of galaxy.yml's version: the one `ansible-galaxy collection build` makes.
    assert tarball.name == f"gpuops-bringup-{GALAXY['version']}.tar.gz"
    assert definition["additional_build_files"] == [{"src": f"dist/{tarball.name}", "dest": "collections"}]
    shutil.copy(tarball, source / "dist")
    context = tmp_path / "context"
    created = subprocess.run(["ansible-builder", "create", "-f", "execution-environment.yml", "-c", str(context)],
                             cwd=source, capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
    assert created.returncode == 0, created.stdout + created.stderr
    assert "No matches" not in created.stdout + created.stderr
    containerfile = (context / "Containerfile").read_text()
    versions = pins()
    assert 'ARG EE_BASE_IMAGE="quay.io/centos/centos:stream9"' in containerfile
    assert 'ARG PYCMD="/usr/bin/python3.11"' in containerfile
    assert f"ansible-core=={versions['ansible-core']}" in containerfile
    assert f"ansible-runner=={versions['ansible-runner']}" in containerfile
    assert "RUN ANSIBLE_GALAXY_DISABLE_GPG_VERIFY=1 ansible-galaxy collection install" in containerfile
    # The tarball is in the context where the galaxy stage's requirements (run in /build, the copy of _build) find it.
    assert (context / "_build" / "collections" / tarball.name).read_bytes() == tarball.read_bytes()
    requirements = yaml.safe_load((context / "_build" / "requirements.yml").read_text())
    assert requirements == {"collections": [{"name": f"collections/{tarball.name}", "type": "file"}]}
    assert "COPY _build /build" in containerfile and "WORKDIR /build" in containerfile


def test_the_installed_collection_s_needs_are_found_by_introspection(installed):
    """What ansible-builder's introspection (run inside the image it builds) finds in the installed collections: this
    collection's Python and system needs from meta/execution-environment.yml, attributed to it."""
    collections = installed[1]
    found = subprocess.run(["ansible-builder", "introspect", str(collections)], capture_output=True, text=True,
                           timeout=120, check=False)  # fmt: skip
    assert found.returncode == 0, found.stdout + found.stderr
    report = yaml.safe_load(found.stdout.split("---", 1)[1] if "---" in found.stdout else found.stdout)
    python = [line for line in report["python"] if "gpuops.bringup" in line]
    system = [line for line in report["system"] if "gpuops.bringup" in line]
    assert python == [f"{name}  # from collection gpuops.bringup" for name in ("jinja2>=3.1", "markupsafe>=2.1")]
    assert system == [
        "openssh-clients [platform:rpm]  # from collection gpuops.bringup",
        "openssh-client [platform:dpkg]  # from collection gpuops.bringup",
    ]
