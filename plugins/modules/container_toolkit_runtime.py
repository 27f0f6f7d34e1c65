#!/usr/bin/python
# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: container_toolkit_runtime
short_description: Add the NVIDIA runtime to containerd, Docker or CRI-O without taking over their configuration
version_added: 0.1.0
description:
  - The runtime's configuration belongs to whoever installed it (its package, Kubespray, the Kubernetes stage); this
    module never rewrites it. The C(nvidia) runtime, with C(nvidia-container-runtime) as its binary, goes into a
    drop-in file the module owns.
  - B(containerd) reads drop-ins only through C(imports) in its main file, so the module adds that one import to
    O(config) (every other byte kept, the result parsed back to prove it) and writes O(drop_in) in the main file's
    configuration version. Version 2 (containerd 1.5 to 1.7; 2.x migrates it) - containerd 1.7 replaces a plugin's
    whole section with an imported file's, so the drop-in carries the CRI section of the owner's files (the last one
    that sets it, as containerd does) plus the nvidia runtime, which copies runc's settings. Version 3 (containerd
    2.x) - merged key by key, so the drop-in holds the nvidia runtime alone (a copy of runc's settings as the owner's
    files merge them). A missing O(config) is created with only the import.
  - B(Docker) has no drop-ins - C(runtimes.nvidia) (and C(default-runtime) with O(default)) is merged into
    O(config), every other key kept; the file is rewritten only when a value changes.
  - B(CRI-O) reads C(/etc/crio/crio.conf.d/) - the module writes O(drop_in).
  - Restarting the runtime is the caller's business, when the task reports C(changed).
author: gpuops.bringup developers (@gpuops)
options:
  runtime:
    description: The container runtime to configure.
    type: str
    required: true
    choices: [containerd, docker, crio]
  default:
    description:
      - Make C(nvidia) the runtime's default runtime. False leaves the owner's default (and removes Docker's
        C(default-runtime) only when it names C(nvidia)).
    type: bool
    default: false
  runtime_path:
    description: The NVIDIA container runtime binary.
    type: path
    default: /usr/bin/nvidia-container-runtime
  config:
    description:
      - The runtime's main configuration file (containerd, Docker). Defaults to C(/etc/containerd/config.toml) or
        C(/etc/docker/daemon.json).
    type: path
  drop_in:
    description:
      - The drop-in file the module owns (containerd, CRI-O). Defaults to C(/etc/containerd/conf.d/99-nvidia.toml)
        or C(/etc/crio/crio.conf.d/99-nvidia.toml), the paths NVIDIA's own tooling uses.
    type: path
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - gpuops.bringup.attributes.changes
notes:
  - containerd's imports are followed one level deep (the main file's own imports), as globs in their order.
  - Needs Python 3.11 or later on the node for containerd and CRI-O (tomllib), or tomli with an older Python (the
    role installs python3-tomli on Ubuntu 22.04, whose Python is 3.10).
"""

EXAMPLES = r"""
- name: The nvidia runtime in containerd, leaving runc the default
  gpuops.bringup.container_toolkit_runtime:
    runtime: containerd
  notify: Restart containerd

- name: The nvidia runtime as Docker's default
  gpuops.bringup.container_toolkit_runtime:
    runtime: docker
    default: true
"""

RETURN = r"""
files:
  description: The files this run wrote (or would write, in check mode).
  returned: always
  type: list
  elements: str
  sample: [/etc/containerd/config.toml, /etc/containerd/conf.d/99-nvidia.toml]
config:
  description: The runtime's main configuration file (containerd, Docker), or null.
  returned: always
  type: str
drop_in:
  description: The drop-in file (containerd, CRI-O), or null.
  returned: always
  type: str
problem:
  description:
    - Why the nvidia runtime cannot be added, where the module fails for the node's state rather than an error of its
      own - C(config) (a configuration it cannot merge into; the message names the file and the fix) or C(tomllib)
      (the node's Python cannot read TOML). A preflight reports these with the node's other problems.
  returned: on failure, for those reasons
  type: str
  sample: config
"""

import fnmatch
import glob
import os
import platform

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpuops.bringup.plugins.module_utils import container_toolkit as ctk

DEFAULTS = {
    "containerd": ("/etc/containerd/config.toml", "/etc/containerd/conf.d/99-nvidia.toml"),
    "docker": ("/etc/docker/daemon.json", None),
    "crio": (None, "/etc/crio/crio.conf.d/99-nvidia.toml"),
}


def read_text(path):
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except FileNotFoundError:
        return None


def resolve_imports(main, config, drop_in):
    """The files containerd imports from the main configuration, in its order (each glob's matches sorted), and
    whether the drop-in is one of them; the drop-in is placed where containerd will find it once written, so that a
    first run sees the files that would override it as the next run does."""
    base = os.path.dirname(config)
    files, ours_imported = [], False
    for pattern in main.get("imports") or []:
        pattern = pattern if os.path.isabs(pattern) else os.path.join(base, pattern)
        matched = set(glob.glob(pattern))
        if fnmatch.fnmatch(drop_in, pattern):
            ours_imported = True
            matched.add(drop_in)
        files += [p for p in sorted(matched) if p not in files]
    return files, ours_imported


def plan_containerd(config, drop_in, runtime_path, default):
    """{path: (old text, new text)} for containerd."""
    main_text = read_text(config)
    main = ctk.toml_loads(main_text, config) if main_text is not None else {"version": 2}
    ctk.containerd_check_version(main, config)
    files, ours_imported = resolve_imports(main, config, drop_in)
    imported = [(p, ctk.toml_loads(read_text(p) or "", p)) for p in files if p != drop_in]
    if ours_imported:
        later = [(p, ctk.containerd_overrides(main, data, default)) for p, data in imported
                 if files.index(p) > files.index(drop_in)]  # fmt: skip
        later = [(p, why) for p, why in later if why]
        if later:
            raise ctk.ConfigProblem(
                f"{', '.join(p for p, _why in later)} (imported after {drop_in}) {later[0][1]}. Fix: rename them to "
                f"sort before {os.path.basename(drop_in)}"
            )
    plan = {drop_in: (read_text(drop_in), ctk.containerd_dropin(main, imported, runtime_path, default))}
    if main_text is None:
        plan[config] = (None, f'{ctk.HEADER}version = 2\nimports = ["{drop_in}"]\n')
    elif not ours_imported:
        plan[config] = (main_text, ctk.add_import(main_text, drop_in, config))
    return plan


def plan_docker(config, runtime_path, default):
    old = read_text(config)
    new = ctk.docker_daemon(old, runtime_path, default, config)
    return {} if new is None else {config: (old, new)}


def write(module, path, text):
    os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
    tmp = f"{path}.gpuops-tmp"
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.write(text)
    # Keep the owner's mode on a file that exists; runtime configurations are world-readable otherwise.
    os.chmod(tmp, os.stat(path).st_mode & 0o7777 if os.path.exists(path) else 0o644)
    module.atomic_move(tmp, path)


def main():
    module = AnsibleModule(
        argument_spec={
            "runtime": {"type": "str", "required": True, "choices": sorted(DEFAULTS)},
            "default": {"type": "bool", "default": False},
            "runtime_path": {"type": "path", "default": "/usr/bin/nvidia-container-runtime"},
            "config": {"type": "path"},
            "drop_in": {"type": "path"},
        },
        supports_check_mode=True,
    )
    p = module.params
    config = p["config"] or DEFAULTS[p["runtime"]][0]
    drop_in = p["drop_in"] or DEFAULTS[p["runtime"]][1]
    if p["runtime"] != "docker" and ctk.tomllib_missing():
        module.fail_json(
            msg=f"configuring containerd or CRI-O reads TOML: the node's Python {platform.python_version()} has no "
            "tomllib (3.11 and later) and no tomli. Fix: install python3-tomli (the nvidia_container_toolkit role "
            "does on Ubuntu 22.04), or run the module with Python 3.11 or later (ansible_python_interpreter)",
            problem="tomllib",
        )
    try:
        if p["runtime"] == "containerd":
            plan = plan_containerd(config, drop_in, p["runtime_path"], p["default"])
        elif p["runtime"] == "docker":
            plan = plan_docker(config, p["runtime_path"], p["default"])
        else:
            plan = {drop_in: (read_text(drop_in), ctk.crio_dropin(p["runtime_path"], p["default"]))}
    except ctk.ConfigProblem as exc:
        module.fail_json(msg=str(exc), problem="config")
    changes = {path: texts for path, texts in plan.items() if texts[0] != texts[1]}
    if changes and not module.check_mode:
        for path, (_old, new) in changes.items():
            write(module, path, new)
    module.exit_json(
        changed=bool(changes),
        files=sorted(changes),
        config=config,
        drop_in=drop_in,
        diff=[
            {"before_header": path, "after_header": path, "before": old or "", "after": new}
            for path, (old, new) in sorted(changes.items())
        ],
    )


if __name__ == "__main__":
    main()
