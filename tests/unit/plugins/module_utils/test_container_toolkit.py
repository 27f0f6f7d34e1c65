"""container_toolkit's pure functions: the nvidia runtime merged into runtime configurations, nvidia-ctk's outputs.

Inputs are real: Debian 13's /etc/containerd/config.toml (package containerd 1.7.24~ds1-6+deb13u1, read on a bench
node), nvidia-ctk --version as NVIDIA/nvidia-container-toolkit#1404 quotes it (1.18.0), and nvidia-ctk cdi list in
the format NVIDIA's CDI guide prints. What containerd makes of the merged files was checked with containerd 1.7.24
itself (`containerd config dump`, see the Molecule scenario nvidia_container_toolkit).
"""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import pytest

from ansible_collections.gpuops.bringup.plugins.module_utils import container_toolkit as ctk

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "container"

DEBIAN_13_CONFIG = """\
version = 2

[plugins]
  [plugins."io.containerd.grpc.v1.cri"]
    [plugins."io.containerd.grpc.v1.cri".cni]
      bin_dir = "/usr/lib/cni"
      conf_dir = "/etc/cni/net.d"
  [plugins."io.containerd.internal.v1.opt"]
    path = "/var/lib/containerd/opt"
"""
SITE_CONFIG = """\
# written by the site's tooling
version = 2
imports = ["/etc/containerd/site.d/*.toml"]  # registries
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "registry.example/pause:3.10"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    default_runtime_name = "crun"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.crun]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.crun.options]
        BinaryName = "/usr/bin/crun"
        SystemdCgroup = true
"""
RUNTIME = "/usr/bin/nvidia-container-runtime"
DROP_IN = "/etc/containerd/conf.d/99-nvidia.toml"
CTK_VERSION_1_18 = "NVIDIA Container Toolkit CLI version 1.18.0\ncommit: f8daa5e26de9fd7eb79259040b6dd5a52060048c\n"
CDI_LIST = (
    "nvidia.com/gpu=0\nnvidia.com/gpu=1\nnvidia.com/gpu=GPU-eaf0bc12-3996-9441-6965-b6955608929c\nnvidia.com/gpu=all\n"
)


def cri_of(text):
    return tomllib.loads(text)["plugins"][ctk.CRI_PLUGIN]


def test_the_debian_default_gets_runc_named_since_any_runtimes_table_replaces_containerds():
    cri = cri_of(ctk.containerd_dropin(tomllib.loads(DEBIAN_13_CONFIG), [], RUNTIME, False))
    assert cri["cni"] == {"bin_dir": "/usr/lib/cni", "conf_dir": "/etc/cni/net.d"}
    assert cri["containerd"]["runtimes"]["runc"] == {"runtime_type": ctk.RUNC_V2, "sandbox_mode": "podsandbox"}
    assert cri["containerd"]["runtimes"]["nvidia"] == {
        "runtime_type": ctk.RUNC_V2,
        "sandbox_mode": "podsandbox",
        "options": {"BinaryName": RUNTIME},
    }
    assert "default_runtime_name" not in cri["containerd"]


def test_the_drop_in_carries_the_section_of_the_last_file_that_sets_it_and_keeps_the_owners_default():
    registries = {"plugins": {ctk.CRI_PLUGIN: {"registry": {"config_path": "/etc/containerd/certs.d"}}}}
    unrelated = {"plugins": {"io.containerd.internal.v1.opt": {"path": "/opt/x"}}}
    text = ctk.containerd_dropin(tomllib.loads(SITE_CONFIG), [("a", registries), ("b", unrelated)], RUNTIME, False)
    # containerd 1.7 uses the imported registries section alone, so the drop-in must too.
    cri = cri_of(text)
    assert cri["registry"] == {"config_path": "/etc/containerd/certs.d"}
    assert "sandbox_image" not in cri
    assert cri["containerd"]["runtimes"] == {
        "runc": {"runtime_type": ctk.RUNC_V2, "sandbox_mode": "podsandbox"},
        "nvidia": {"runtime_type": ctk.RUNC_V2, "sandbox_mode": "podsandbox", "options": {"BinaryName": RUNTIME}},
    }


def test_the_nvidia_runtime_copies_the_owners_runc_options_and_becomes_default_when_asked():
    runc = '\n    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]\n      SystemdCgroup = true\n'
    main = tomllib.loads(DEBIAN_13_CONFIG + runc)
    cri = cri_of(ctk.containerd_dropin(main, [], RUNTIME, True))
    assert cri["containerd"]["runtimes"]["nvidia"]["options"] == {"SystemdCgroup": True, "BinaryName": RUNTIME}
    assert cri["containerd"]["default_runtime_name"] == "nvidia"
    # The owner's runtimes table stands as it is: no runc entry of the role's own.
    assert cri["containerd"]["runtimes"]["runc"] == {"options": {"SystemdCgroup": True}}


def test_an_owner_without_runc_keeps_its_runtimes_and_nvidia_starts_from_defaults():
    cri = cri_of(ctk.containerd_dropin(tomllib.loads(SITE_CONFIG), [], RUNTIME, False))
    assert sorted(cri["containerd"]["runtimes"]) == ["crun", "nvidia"]
    assert cri["containerd"]["default_runtime_name"] == "crun"
    assert cri["sandbox_image"] == "registry.example/pause:3.10"


@pytest.mark.parametrize(
    ("text", "expected_line"),
    [
        (DEBIAN_13_CONFIG, f'imports = ["{DROP_IN}"]'),
        (SITE_CONFIG, f'imports = ["/etc/containerd/site.d/*.toml", "{DROP_IN}"]  # registries'),
        ('version = 2\nimports = [\n  "/a.toml", # first\n]\n', f'  "{DROP_IN}",'),
        ("imports = []\nversion = 2\n", f'imports = ["{DROP_IN}"]'),
        ("version = 2", f'imports = ["{DROP_IN}"]'),
    ],
    ids=["debian", "site-imports", "multi-line", "empty", "no-newline"],
)
def test_add_import_adds_one_line_or_element_and_keeps_every_other_byte(text, expected_line):
    result = ctk.add_import(text, DROP_IN, "config.toml")
    assert expected_line in result.splitlines()
    before, after = tomllib.loads(text), tomllib.loads(result)
    assert after == {**before, "imports": [*before.get("imports", []), DROP_IN]}
    # Nothing but the import line (or element) differs.
    removed = [line for line in text.splitlines() if line not in result.splitlines()]
    assert len(removed) <= 1


def test_add_import_refuses_imports_that_are_not_a_list():
    with pytest.raises(ctk.ConfigProblem, match=re.escape('config.toml: imports is "/a.toml", not a list')):
        ctk.add_import('imports = "/a.toml"\n', DROP_IN, "config.toml")


def test_broken_toml_names_the_file():
    with pytest.raises(ctk.ConfigProblem, match=re.escape("/etc/containerd/config.toml is not valid TOML")):
        ctk.toml_loads("version = = 2", "/etc/containerd/config.toml")


@pytest.mark.parametrize("text", ['[plugins.cri]\n  sandbox_image = "x"\n', "version = 4\n", 'version = "3"\n'])
def test_configs_other_than_version_2_or_3_are_refused_with_the_fix(text):
    with pytest.raises(
        ctk.ConfigProblem,
        match=re.escape(
            "containerd configuration; the nvidia runtime is written for version 2 (containerd 1.5 to "
            "1.7, plugin io.containerd.grpc.v1.cri) and version 3 (containerd 2.x, plugin "
            "io.containerd.cri.v1.runtime). Fix: convert it to version 2 or 3"
        ),
    ):
        ctk.containerd_check_version(tomllib.loads(text), "config.toml")


@pytest.mark.parametrize("text", ["version = 2\n", "version = 3\n"])
def test_configs_of_version_2_and_3_are_taken(text):
    ctk.containerd_check_version(tomllib.loads(text), "config.toml")


# containerd 2.1.9's own merges (tests/fixtures/SOURCES.md): each case's main file, its drop-in and containerd's dump.
CONTAINERD_2 = FIXTURES.parent / "containerd" / "containerd-2.1.9"


def containerd_2_case(name):
    case = CONTAINERD_2 / name
    return (
        tomllib.loads((case / "config.toml").read_text()),
        tomllib.loads((case / "99-nvidia.toml").read_text()),
        tomllib.loads((case / "dump.toml").read_text()),
    )


def runtime_view(section):
    """What the role relies on in the CRI runtime plugin's section: the default runtime and each runtime's type,
    binary and cgroup driver."""
    ctrd = section.get("containerd") or {}
    return {
        "default": ctrd.get("default_runtime_name", "runc"),
        "runtimes": {
            name: (r.get("runtime_type"), (r.get("options") or {}).get("BinaryName", ""),
                   (r.get("options") or {}).get("SystemdCgroup", False))
            for name, r in (ctrd.get("runtimes") or {}).items()
        },
    }  # fmt: skip


@pytest.mark.parametrize("case", ["v3-main-v3-dropin", "v3-main-v2-dropin"])
def test_the_version_3_merge_model_agrees_with_containerd_2(case):
    """Key by key, and an imported file of another version ignored: as containerd 2.1.9 merged them."""
    main, dropin, dump = containerd_2_case(case)
    modelled = ctk.containerd_effective_runtime_plugin(main, [("99-nvidia.toml", dropin)])
    assert runtime_view(modelled) == runtime_view(dump["plugins"][ctk.CRI_RUNTIME_PLUGIN])


def test_a_version_3_drop_in_holds_the_nvidia_runtime_alone_as_a_copy_of_runc():
    main, _dropin, _dump = containerd_2_case("v3-main-v3-dropin")
    text = ctk.containerd_dropin(main, [], RUNTIME, True)
    assert text.startswith(ctk.HEADER)
    dropin = tomllib.loads(text)
    runc = main["plugins"][ctk.CRI_RUNTIME_PLUGIN]["containerd"]["runtimes"]["runc"]
    assert dropin == {
        "version": 3,
        "plugins": {
            ctk.CRI_RUNTIME_PLUGIN: {
                "containerd": {
                    "default_runtime_name": "nvidia",
                    "runtimes": {"nvidia": {**runc, "options": {**runc["options"], "BinaryName": RUNTIME}}},
                }
            }
        },
    }
    # The owner's SystemdCgroup = true (the case's main file) is the nvidia runtime's too.
    assert dropin["plugins"][ctk.CRI_RUNTIME_PLUGIN]["containerd"]["runtimes"]["nvidia"]["options"]["SystemdCgroup"]
    # Merged as containerd 2.x merges it: runc and the owner's settings kept, nvidia the default.
    merged = runtime_view(ctk.containerd_effective_runtime_plugin(main, [("99-nvidia.toml", dropin)]))
    assert merged == {
        "default": "nvidia",
        "runtimes": {"runc": (ctk.RUNC_V2, "", True), "nvidia": (ctk.RUNC_V2, RUNTIME, True)},
    }


def test_the_version_3_drop_in_the_module_wrote_on_containerd_2_is_the_one_it_writes_and_containerd_took_it():
    """On a real containerd 2.1.9: the drop-in the module wrote (module-v3-default) is what containerd_dropin gives for
    that main file, and containerd's dump has the nvidia runtime as the default with the owner's SystemdCgroup."""
    case = CONTAINERD_2 / "module-v3-default"
    main = tomllib.loads((case / "config.toml").read_text())
    assert ctk.containerd_dropin(main, [], RUNTIME, True) == (case / "99-nvidia.toml").read_text()
    dump = tomllib.loads((case / "dump.toml").read_text())
    assert runtime_view(dump["plugins"][ctk.CRI_RUNTIME_PLUGIN]) == {
        "default": "nvidia",
        "runtimes": {"runc": (ctk.RUNC_V2, "", True), "nvidia": (ctk.RUNC_V2, RUNTIME, True)},
    }


def test_a_version_3_drop_in_copies_runc_as_the_owners_imports_leave_it():
    main = {"version": 3, "imports": ["/etc/containerd/conf.d/*.toml"]}
    site = {"version": 3, "plugins": {ctk.CRI_RUNTIME_PLUGIN: {"containerd": {"runtimes": {"runc": {
        "runtime_type": ctk.RUNC_V2, "options": {"SystemdCgroup": True}}}}}}}  # fmt: skip
    ignored = {"version": 2, "plugins": {ctk.CRI_RUNTIME_PLUGIN: {"containerd": {"runtimes": {"runc": {
        "runtime_type": ctk.RUNC_V2, "options": {"SystemdCgroup": False, "Root": "/x"}}}}}}}  # fmt: skip
    dropin = tomllib.loads(ctk.containerd_dropin(main, [("a", site), ("b", ignored)], RUNTIME, False))
    ctrd = dropin["plugins"][ctk.CRI_RUNTIME_PLUGIN]["containerd"]
    assert ctrd == {"runtimes": {"nvidia": {"runtime_type": ctk.RUNC_V2,
                                            "options": {"SystemdCgroup": True, "BinaryName": RUNTIME}}}}  # fmt: skip


@pytest.mark.parametrize(
    ("main_version", "later", "default", "overrides"),
    [
        (2, {"version": 2, "plugins": {ctk.CRI_PLUGIN: {"enable_cdi": True}}}, False, True),
        (2, {"version": 2, "plugins": {"io.containerd.internal.v1.opt": {}}}, False, False),
        (3, {"version": 3, "plugins": {ctk.CRI_RUNTIME_PLUGIN: {"containerd": {"runtimes": {"nvidia": {}}}}}}, False,
         True),
        (3, {"version": 3, "plugins": {ctk.CRI_RUNTIME_PLUGIN: {"containerd": {"default_runtime_name": "runc"}}}}, True,
         True),
        # The default is the owner's when the drop-in does not set it.
        (3, {"version": 3, "plugins": {ctk.CRI_RUNTIME_PLUGIN: {"containerd": {"default_runtime_name": "runc"}}}},
         False, False),
        # Key by key: a later file's other settings leave the nvidia runtime alone.
        (3, {"version": 3, "plugins": {ctk.CRI_RUNTIME_PLUGIN: {"enable_cdi": True}}}, True, False),
        # containerd 2.x ignores an imported file of another version.
        (3, {"version": 2, "plugins": {ctk.CRI_RUNTIME_PLUGIN: {"containerd": {"runtimes": {"nvidia": {}}}}}}, True,
         False),
    ],
)  # fmt: skip
def test_a_file_imported_after_the_drop_in_overrides_it(main_version, later, default, overrides):
    assert bool(ctk.containerd_overrides({"version": main_version}, later, default)) is overrides


def test_toml_dumps_round_trips_the_shapes_runtime_configs_use():
    data = {
        "version": 2,
        "plugins": {
            "io.containerd.grpc.v1.cri": {
                "enable_cdi": True,
                "cdi_spec_dirs": ["/etc/cdi", "/var/run/cdi"],
                "max": 1.5,
                "empty": {},
                "registry": {"mirrors": {"docker.io": {"endpoint": ["https://r.example"]}}},
                "inline": [{"a": 1}],
                "quote": 'say "hi"\n',
            }
        },
    }
    assert tomllib.loads(ctk.toml_dumps(data)) == data


def test_docker_merge_keeps_other_keys_and_writes_only_on_change():
    daemon = json.dumps({"log-driver": "journald", "runtimes": {"kata": {"path": "/usr/bin/kata"}}})
    merged = json.loads(ctk.docker_daemon(daemon, RUNTIME, True, "daemon.json"))
    assert merged == {
        "log-driver": "journald",
        "runtimes": {"kata": {"path": "/usr/bin/kata"}, "nvidia": {"args": [], "path": RUNTIME}},
        "default-runtime": "nvidia",
    }
    assert ctk.docker_daemon(json.dumps(merged), RUNTIME, True, "daemon.json") is None
    # No longer the default: only a default naming nvidia is removed.
    assert "default-runtime" not in json.loads(ctk.docker_daemon(json.dumps(merged), RUNTIME, False, "daemon.json"))
    assert ctk.docker_daemon(json.dumps({**merged, "default-runtime": "kata"}), RUNTIME, False, "d") is None


def test_docker_merge_creates_a_missing_file_and_refuses_broken_json():
    created = json.loads(ctk.docker_daemon(None, RUNTIME, False, "d"))
    assert created == {"runtimes": {"nvidia": {"args": [], "path": RUNTIME}}}
    with pytest.raises(ctk.ConfigProblem, match=re.escape("/etc/docker/daemon.json is not valid JSON")):
        ctk.docker_daemon("{", RUNTIME, False, "/etc/docker/daemon.json")
    with pytest.raises(ctk.ConfigProblem, match="holds list, not a JSON object"):
        ctk.docker_daemon("[]", RUNTIME, False, "d")


def test_crio_drop_in():
    data = tomllib.loads(ctk.crio_dropin(RUNTIME, True))
    assert data == {
        "crio": {
            "runtime": {
                "default_runtime": "nvidia",
                "runtimes": {"nvidia": {"runtime_path": RUNTIME, "runtime_type": "oci"}},
            }
        }
    }
    assert "default_runtime" not in tomllib.loads(ctk.crio_dropin(RUNTIME, False))["crio"]["runtime"]


def test_nvidia_ctk_outputs():
    assert ctk.parse_ctk_version(CTK_VERSION_1_18) == "1.18.0"
    assert ctk.parse_ctk_version("nvidia-ctk: command not found") is None
    assert ctk.parse_cdi_list("INFO[0000] Found 4 CDI devices\n" + CDI_LIST) == CDI_LIST.split()


RECORD = {"driver_version": "570.172.08", "gpus": ["GPU-b", "GPU-a"], "toolkit_version": "1.17.8", "spec_sha256": "s"}


@pytest.mark.parametrize(
    ("record", "sha", "driver", "gpus", "toolkit", "reason"),
    [
        (RECORD, "s", "570.172.08", ["GPU-a", "GPU-b"], "1.17.8", None),
        (RECORD, None, "570.172.08", ["GPU-a", "GPU-b"], "1.17.8", "there is no spec yet"),
        (None, "s", "570.172.08", ["GPU-a"], "1.17.8", "nothing records what the spec was generated for"),
        (RECORD, "t", "570.172.08", ["GPU-a", "GPU-b"], "1.17.8", "the spec was changed since it was generated"),
        (RECORD, "s", "575.57.08", ["GPU-a", "GPU-b"], "1.17.8", "the driver changed from 570.172.08 to 575.57.08"),
        (RECORD, "s", "570.172.08", ["GPU-a"], "1.17.8", "the GPUs changed (2 then, 1 now)"),
        (RECORD, "s", "570.172.08", ["GPU-a", "GPU-b"], "1.18.0", "the toolkit changed from 1.17.8 to 1.18.0"),
    ],
    ids=["current", "no-spec", "no-record", "edited", "driver", "gpus", "toolkit"],
)
def test_cdi_regenerate_reason(record, sha, driver, gpus, toolkit, reason):
    assert ctk.cdi_regenerate_reason(record, sha, driver, gpus, toolkit) == reason


@pytest.mark.parametrize(
    ("capture", "said"),
    [
        ("ctr-cgroup-devices-not-found.stderr.txt",
         "nvidia-container-cli: container error: cgroup subsystem devices not found: unknown"),
        ("docker-nvml-driver-not-loaded.stderr.txt",
         "nvidia-container-cli: initialization error: nvml error: driver not loaded: unknown."),
        ("docker-libnvidia-ml-not-found.stderr.txt",
         "nvidia-container-cli: initialization error: load library failed: libnvidia-ml.so.1: cannot open shared "
         "object file: no such file or directory: unknown."),
        ("docker-compose-cdi-unresolvable.stderr.txt", "unresolvable CDI devices runtime.nvidia.com/gpu=all"),
        ("podman-cdi-unresolvable.stderr.txt", "unresolvable CDI devices nvidia.com/gpu=all"),
        ("docker-could-not-select-device-driver.stderr.txt",
         'could not select device driver "" with capabilities: [[gpu]].'),
        ("nvidia-smi-L-in-container-nvml-unknown-error.txt", "Failed to initialize NVML: Unknown Error"),
    ],
)  # fmt: skip
def test_runtime_error_finds_the_nvidia_part(capture, said):
    text = (FIXTURES / capture).read_text()
    assert ctk.runtime_error(text) == said


def test_runtime_error_falls_back_to_the_last_line():
    assert ctk.runtime_error("a\nctr: image not found\n\n") == "ctr: image not found"
    assert ctk.runtime_error("") is None
