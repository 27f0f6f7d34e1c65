"""container_toolkit_runtime, container_toolkit_cdi and container_toolkit_facts: main() on files under tmp_path and
a table of command outputs (containerd config dump captured from Debian 13's containerd 1.7.24, trimmed)."""

from __future__ import annotations

import hashlib
import json
import tomllib
from pathlib import Path

from ansible_collections.gpuops.bringup.plugins.modules import (
    container_toolkit_cdi,
    container_toolkit_facts,
    container_toolkit_runtime,
)

DEBIAN_13_CONFIG = """\
version = 2

[plugins]
  [plugins."io.containerd.grpc.v1.cri"]
    sandbox_image = "registry.example/pause:3.10"
"""
DUMP = """\
version = 2
imports = ["/etc/containerd/config.toml", "/etc/containerd/conf.d/99-nvidia.toml"]

[plugins]
  [plugins."io.containerd.grpc.v1.cri"]
    sandbox_image = "registry.example/pause:3.10"
    [plugins."io.containerd.grpc.v1.cri".containerd]
      default_runtime_name = "runc"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes]
        [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]
          runtime_type = "io.containerd.runc.v2"
          [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia.options]
            BinaryName = "/usr/bin/nvidia-container-runtime"
        [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
          runtime_type = "io.containerd.runc.v2"
          [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
            BinaryName = ""
"""
CTK = "/usr/bin/nvidia-ctk"
# containerd 2.1.9's own files and dumps (tests/fixtures/SOURCES.md).
CONTAINERD_2 = Path(__file__).resolve().parents[3] / "fixtures" / "containerd" / "containerd-2.1.9"


def containerd_args(tmp_path, **extra):
    return {
        "runtime": "containerd",
        "config": str(tmp_path / "config.toml"),
        "drop_in": str(tmp_path / "conf.d" / "99-nvidia.toml"),
        **extra,
    }


def test_containerd_writes_the_drop_in_and_the_import_then_nothing(tmp_path, run_module, command_table):
    (tmp_path / "config.toml").write_text(DEBIAN_13_CONFIG)
    args = containerd_args(tmp_path)
    result, failed = run_module(container_toolkit_runtime.main, args, command_table({}, {}))
    assert not failed and result["changed"]
    assert result["files"] == sorted([args["config"], args["drop_in"]])
    main = tomllib.loads((tmp_path / "config.toml").read_text())
    assert main["imports"] == [args["drop_in"]]
    assert main["plugins"]["io.containerd.grpc.v1.cri"]["sandbox_image"] == "registry.example/pause:3.10"
    dropin = tomllib.loads((tmp_path / "conf.d" / "99-nvidia.toml").read_text())
    nvidia = dropin["plugins"]["io.containerd.grpc.v1.cri"]["containerd"]["runtimes"]["nvidia"]
    assert nvidia["options"]["BinaryName"] == "/usr/bin/nvidia-container-runtime"
    again, _failed = run_module(container_toolkit_runtime.main, args, command_table({}, {}))
    assert not again["changed"] and again["files"] == []


def test_containerd_check_mode_writes_nothing(tmp_path, run_module, command_table):
    (tmp_path / "config.toml").write_text(DEBIAN_13_CONFIG)
    result, _failed = run_module(container_toolkit_runtime.main, containerd_args(tmp_path), command_table({}, {}), True)
    assert result["changed"] and len(result["diff"]) == 2
    assert (tmp_path / "config.toml").read_text() == DEBIAN_13_CONFIG
    assert not (tmp_path / "conf.d").exists()


def test_containerd_without_a_config_gets_one_with_only_the_import(tmp_path, run_module, command_table):
    args = containerd_args(tmp_path)
    result, _failed = run_module(container_toolkit_runtime.main, args, command_table({}, {}))
    assert result["changed"]
    assert tomllib.loads((tmp_path / "config.toml").read_text()) == {"version": 2, "imports": [args["drop_in"]]}


def test_containerd_already_importing_the_drop_in_by_glob_is_left_alone(tmp_path, run_module, command_table):
    text = f'version = 2\nimports = ["{tmp_path}/conf.d/*.toml"]\n'
    (tmp_path / "config.toml").write_text(text)
    result, _failed = run_module(container_toolkit_runtime.main, containerd_args(tmp_path), command_table({}, {}))
    assert result["files"] == [str(tmp_path / "conf.d" / "99-nvidia.toml")]
    assert (tmp_path / "config.toml").read_text() == text


def test_containerd_file_imported_after_the_drop_in_that_sets_cri_is_refused(tmp_path, run_module, command_table):
    (tmp_path / "conf.d").mkdir()
    (tmp_path / "conf.d" / "99-nvidia.toml").write_text("version = 2\n")
    (tmp_path / "conf.d" / "zz-site.toml").write_text('[plugins."io.containerd.grpc.v1.cri"]\nenable_cdi = true\n')
    (tmp_path / "config.toml").write_text(f'version = 2\nimports = ["{tmp_path}/conf.d/*.toml"]\n')
    result, failed = run_module(container_toolkit_runtime.main, containerd_args(tmp_path), command_table({}, {}))
    assert failed
    assert (
        "zz-site.toml (imported after" in result["msg"]
        and "Fix: rename them to sort before 99-nvidia.toml" in (result["msg"])
    )


def test_containerd_version_1_config_fails_with_the_file_and_the_fix(tmp_path, run_module, command_table):
    (tmp_path / "config.toml").write_text('[plugins.cri]\n  sandbox_image = "x"\n')
    result, failed = run_module(container_toolkit_runtime.main, containerd_args(tmp_path), command_table({}, {}))
    assert failed
    assert result["msg"].startswith(f"{tmp_path}/config.toml is a version 1 containerd configuration")
    assert result["problem"] == "config"


def test_docker_keeps_the_owners_keys_and_mode(tmp_path, run_module, command_table):
    daemon = tmp_path / "daemon.json"
    daemon.write_text('{"log-driver": "journald"}\n')
    daemon.chmod(0o600)
    args = {"runtime": "docker", "config": str(daemon), "default": True}
    result, _failed = run_module(container_toolkit_runtime.main, args, command_table({}, {}))
    assert result["changed"]
    assert json.loads(daemon.read_text())["log-driver"] == "journald"
    assert json.loads(daemon.read_text())["default-runtime"] == "nvidia"
    assert daemon.stat().st_mode & 0o777 == 0o600


def test_crio_drop_in(tmp_path, run_module, command_table):
    args = {"runtime": "crio", "drop_in": str(tmp_path / "crio.conf.d" / "99-nvidia.toml")}
    result, _failed = run_module(container_toolkit_runtime.main, args, command_table({}, {}))
    assert result["changed"]
    runtime = tomllib.loads((tmp_path / "crio.conf.d" / "99-nvidia.toml").read_text())["crio"]["runtime"]
    assert runtime["runtimes"]["nvidia"]["runtime_path"] == "/usr/bin/nvidia-container-runtime"


def cdi_args(tmp_path, driver="570.172.08"):
    return {
        "spec": str(tmp_path / "cdi" / "nvidia.yaml"),
        "record": str(tmp_path / "state" / "cdi.json"),
        "driver_version": driver,
        "gpus": ["GPU-a", "GPU-b"],
        "toolkit_version": "1.17.8",
    }


class Generating:
    """A command table whose nvidia-ctk cdi generate writes a spec naming the driver, as the real one does."""

    def __init__(self, tmp_path, driver):
        self.spec = tmp_path / "cdi" / "nvidia.yaml"
        self.driver = driver
        self.calls = []

    def get_bin_path(self, arg, required=False, opt_dirs=None):
        return CTK if arg == "nvidia-ctk" else None

    def run_command(self, args, **kwargs):
        self.calls.append(tuple(args))
        assert tuple(args) == (CTK, "cdi", "generate", f"--output={self.spec}")
        self.spec.parent.mkdir(exist_ok=True)
        self.spec.write_text(f"kind: nvidia.com/gpu\n# libcuda.so.{self.driver}\n")
        return 0, "", "INFO[0000] Generated CDI spec with version 0.5.0\n"


def test_cdi_is_generated_recorded_and_generated_again_only_when_the_driver_changes(tmp_path, run_module):
    table = Generating(tmp_path, "570.172.08")
    result, _failed = run_module(container_toolkit_cdi.main, cdi_args(tmp_path), table)
    assert result["changed"] and result["reason"] == "there is no spec yet"
    record = json.loads((tmp_path / "state" / "cdi.json").read_text())
    assert record == {
        "driver_version": "570.172.08",
        "gpus": ["GPU-a", "GPU-b"],
        "spec_sha256": hashlib.sha256((tmp_path / "cdi" / "nvidia.yaml").read_bytes()).hexdigest(),
        "toolkit_version": "1.17.8",
    }
    again, _failed = run_module(container_toolkit_cdi.main, cdi_args(tmp_path), table)
    assert not again["changed"] and len(table.calls) == 1
    checked, _failed = run_module(container_toolkit_cdi.main, cdi_args(tmp_path, "575.57.08"), table, True)
    assert checked["changed"] and checked["reason"] == "the driver changed from 570.172.08 to 575.57.08"
    assert len(table.calls) == 1
    table.driver = "575.57.08"
    upgraded, _failed = run_module(container_toolkit_cdi.main, cdi_args(tmp_path, "575.57.08"), table)
    assert upgraded["changed"] and "libcuda.so.575.57.08" in (tmp_path / "cdi" / "nvidia.yaml").read_text()


def test_facts_read_nvidia_ctk_and_containerds_effective_config(run_module, command_table):
    table = command_table(
        {"nvidia-ctk": CTK, "containerd": "/usr/bin/containerd"},
        {
            (CTK, "--version"): (0, "NVIDIA Container Toolkit CLI version 1.17.8\ncommit: x\n", ""),
            (CTK, "cdi", "list"): (0, "nvidia.com/gpu=0\nnvidia.com/gpu=all\n", "INFO[0000] Found 2 CDI devices\n"),
            ("/usr/bin/containerd", "config", "dump"): (0, DUMP, ""),
        },
    )
    result, _failed = run_module(container_toolkit_facts.main, {"runtimes": ["containerd"]}, table)
    facts = result["ansible_facts"]["container_toolkit"]
    assert facts["version"] == "1.17.8"
    assert facts["cdi_devices"] == ["nvidia.com/gpu=0", "nvidia.com/gpu=all"]
    assert facts["runtimes"]["containerd"] == {
        "runtimes": {
            "nvidia": {"type": "io.containerd.runc.v2", "binary": "/usr/bin/nvidia-container-runtime"},
            "runc": {"type": "io.containerd.runc.v2", "binary": ""},
        },
        "default": "runc",
    }
    assert facts["errors"] == []


def test_facts_read_containerd_2s_version_3_dump(run_module, command_table):
    """containerd 2.x dumps version 3, its runtimes in a plugin of their own (a capture: tests/fixtures/SOURCES.md)."""
    dump = (CONTAINERD_2 / "v3-main-v3-dropin" / "dump.toml").read_text()
    table = command_table(
        {"containerd": "/usr/bin/containerd"}, {("/usr/bin/containerd", "config", "dump"): (0, dump, "")}
    )
    result, _failed = run_module(container_toolkit_facts.main, {"runtimes": ["containerd"]}, table)
    assert result["ansible_facts"]["container_toolkit"]["runtimes"]["containerd"] == {
        "runtimes": {
            "nvidia": {"type": "io.containerd.runc.v2", "binary": "/usr/bin/nvidia-container-runtime"},
            "runc": {"type": "io.containerd.runc.v2", "binary": ""},
        },
        "default": "nvidia",
    }


def test_containerd_2s_default_config_gets_a_version_3_drop_in_then_nothing(tmp_path, run_module, command_table):
    """containerd 2.x's own default configuration (version 3, imports = []): the import added, every other byte kept,
    and a version 3 drop-in, which containerd 2.x merges key by key."""
    default = (CONTAINERD_2 / "config-default-v3.toml").read_text()
    (tmp_path / "config.toml").write_text(default)
    args = containerd_args(tmp_path, default=True)
    result, failed = run_module(container_toolkit_runtime.main, args, command_table({}, {}))
    assert not failed and result["changed"]
    text = (tmp_path / "config.toml").read_text()
    assert text == default.replace("imports = []", f'imports = ["{args["drop_in"]}"]', 1)
    dropin = tomllib.loads((tmp_path / "conf.d" / "99-nvidia.toml").read_text())
    assert dropin["version"] == 3
    ctrd = dropin["plugins"]["io.containerd.cri.v1.runtime"]["containerd"]
    assert sorted(ctrd) == ["default_runtime_name", "runtimes"] and sorted(ctrd["runtimes"]) == ["nvidia"]
    assert ctrd["runtimes"]["nvidia"]["options"]["BinaryName"] == "/usr/bin/nvidia-container-runtime"
    again, _failed = run_module(container_toolkit_runtime.main, args, command_table({}, {}))
    assert not again["changed"] and again["files"] == []


def test_containerd_version_3_file_imported_after_the_drop_in_setting_nvidia_is_refused(
    tmp_path, run_module, command_table
):
    (tmp_path / "conf.d").mkdir()
    (tmp_path / "conf.d" / "zz-site.toml").write_text(
        'version = 3\n[plugins."io.containerd.cri.v1.runtime".containerd]\ndefault_runtime_name = "runc"\n'
    )
    (tmp_path / "config.toml").write_text(f'version = 3\nimports = ["{tmp_path}/conf.d/*.toml"]\n')
    result, failed = run_module(container_toolkit_runtime.main, containerd_args(tmp_path, default=True),
                                command_table({}, {}))  # fmt: skip
    assert failed
    assert result["msg"] == (
        f"{tmp_path}/conf.d/zz-site.toml (imported after {tmp_path}/conf.d/99-nvidia.toml) set the nvidia runtime or "
        "the default runtime, which would override the drop-in's. Fix: rename them to sort before 99-nvidia.toml"
    )


def test_facts_report_what_could_not_be_read(run_module, command_table):
    table = command_table(
        {"containerd": "/usr/bin/containerd"},
        {("/usr/bin/containerd", "config", "dump"): (1, "", "containerd: failed to load TOML: near line 3\n")},
    )
    result, failed = run_module(container_toolkit_facts.main, {"runtimes": ["containerd"]}, table)
    facts = result["ansible_facts"]["container_toolkit"]
    assert not failed and facts["version"] is None and facts["runtimes"]["containerd"] is None
    assert facts["errors"] == [
        "nvidia-ctk is not installed",
        "containerd config dump failed (rc=1): containerd: failed to load TOML: near line 3",
    ]


def on_a_python_without(blocked, script, tmp_path):
    """script's output, run by this Python with the modules blocked (a node's Python 3.10 has no tomllib), in a
    process of its own: a reload here would give the module's exceptions new classes under every other test."""
    import subprocess
    import sys
    from pathlib import Path

    collections = Path(__file__).resolve().parents[4] / ".collections"
    program = "import sys\n" + "".join(f"sys.modules[{name!r}] = None\n" for name in blocked) + script
    proc = subprocess.run([sys.executable, "-c", program], cwd=tmp_path, capture_output=True, text=True, check=False,
                          env={"PYTHONPATH": str(collections)}, timeout=60)  # fmt: skip
    return proc.returncode, proc.stdout + proc.stderr


def module_run(tmp_path):
    """A program that runs container_toolkit_runtime on tmp_path's containerd configuration, as Ansible does."""
    import json

    args = {"ANSIBLE_MODULE_ARGS": {**containerd_args(tmp_path), "_ansible_check_mode": False}}
    (tmp_path / "args.json").write_text(json.dumps(args))
    return (
        "sys.argv = ['container_toolkit_runtime', 'args.json']\n"
        "from ansible_collections.gpuops.bringup.plugins.modules import container_toolkit_runtime\n"
        "container_toolkit_runtime.main()\n"
    )


def test_a_python_without_tomllib_reads_toml_with_tomli(tmp_path):
    (tmp_path / "config.toml").write_text(DEBIAN_13_CONFIG)
    rc, output = on_a_python_without(["tomllib"], module_run(tmp_path), tmp_path)
    assert rc == 0, output
    assert json.loads(output)["changed"] is True
    dropin = tomllib.loads((tmp_path / "conf.d" / "99-nvidia.toml").read_text())
    assert "nvidia" in dropin["plugins"]["io.containerd.grpc.v1.cri"]["containerd"]["runtimes"]
    probe = (
        "from ansible_collections.gpuops.bringup.plugins.module_utils import container_toolkit as c\n"
        "print(c.tomllib.__name__)\n"
    )
    assert on_a_python_without(["tomllib"], probe, tmp_path) == (0, "tomli\n")


def test_a_python_without_tomllib_or_tomli_is_told_what_to_install(tmp_path):
    (tmp_path / "config.toml").write_text(DEBIAN_13_CONFIG)
    rc, output = on_a_python_without(["tomllib", "tomli"], module_run(tmp_path), tmp_path)
    result = json.loads(output)
    assert rc == 1 and result["failed"]
    assert "has no tomllib (3.11 and later) and no tomli. Fix: install python3-tomli" in result["msg"]
    # The node's state, not an error of the module: a preflight judges it with the node's other problems.
    assert result["problem"] == "tomllib"
    assert (tmp_path / "config.toml").read_text() == DEBIAN_13_CONFIG
