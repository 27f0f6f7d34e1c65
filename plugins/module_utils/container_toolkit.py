# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The NVIDIA runtime in containerd, Docker and CRI-O configurations, and nvidia-ctk's outputs: pure functions.

Each runtime's own configuration belongs to whoever installed the runtime (a package, Kubespray, the Kubernetes
stage): the nvidia runtime goes into a drop-in file, and the owner's file is only ever given the one line that
imports it (containerd) or a merged key (Docker's daemon.json has no drop-ins).
"""

from __future__ import annotations

import copy
import json
import re

from ansible_collections.gpuops.bringup.plugins.module_utils import parsing

try:
    import tomllib
except ImportError:  # Python < 3.11 (Ubuntu 22.04's 3.10): tomli is tomllib's origin, with the same interface.
    try:
        import tomli as tomllib
    except ImportError:  # The caller says what the node needs (tomllib_missing).
        tomllib = None

CRI_PLUGIN = "io.containerd.grpc.v1.cri"
# containerd 2.x's version 3 configuration holds the runtimes in a plugin of their own.
CRI_RUNTIME_PLUGIN = "io.containerd.cri.v1.runtime"
RUNC_V2 = "io.containerd.runc.v2"
RUNTIME_NAME = "nvidia"
HEADER = "# Managed by gpuops.bringup (nvidia_container_toolkit): edit the inventory, not this file.\n"

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")
_CTK_VERSION = re.compile(r"^NVIDIA Container Toolkit CLI version (\S+)", re.MULTILINE)
_CDI_DEVICE = re.compile(r"^([a-z0-9][a-z0-9.-]*/[a-zA-Z0-9][a-zA-Z0-9_.-]*=\S+)$", re.MULTILINE)


class ConfigProblem(Exception):
    """A runtime configuration the role cannot merge into; the message says which file, why and the fix."""


def tomllib_missing():
    return tomllib is None


# --- TOML ---------------------------------------------------------------------------------------------------------


def _key(key):
    return key if _BARE_KEY.match(key) else json.dumps(key)


def _value(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        # JSON's string escapes are valid TOML basic-string escapes.
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_key(k)} = {_value(v)}" for k, v in value.items()) + "}"
    raise ValueError(f"cannot write {type(value).__name__} {value!r} as TOML")


def toml_dumps(data, _path=()):
    """TOML for nested mappings of strings, numbers, booleans and lists (the shapes runtime configurations use)."""
    scalars = {k: v for k, v in data.items() if not isinstance(v, dict)}
    tables = {k: v for k, v in data.items() if isinstance(v, dict)}
    out = []
    if _path and (scalars or not tables):
        out.append("[" + ".".join(_key(p) for p in _path) + "]\n")
    out += [f"{_key(k)} = {_value(v)}\n" for k, v in scalars.items()]
    for key, table in tables.items():
        sub = toml_dumps(table, (*_path, key))
        if sub:
            out.append(("\n" if out else "") + sub)
    return "".join(out)


# Runtime configurations are kilobytes (containerd's full `config dump`: about 10 KB) and their keys a few levels
# deep (plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia.options: 6). tomllib's time grows with the
# square of a dotted key's length, and deep nesting ends it in RecursionError: both are refused first.
MAX_CONFIG = 4 * 1024 * 1024
MAX_KEY_DEPTH = 32


def _too_deep(text):
    """Whether a key or table header of text has more than MAX_KEY_DEPTH parts, or an array or inline table nests
    deeper than that (counted on raw characters: quoted dots and brackets only make it stricter)."""
    for line in text.splitlines():
        stripped = line.strip()
        key = stripped if stripped.startswith("[") else stripped.partition("=")[0]
        if key.count(".") >= MAX_KEY_DEPTH or line.count("[") > 2 * MAX_KEY_DEPTH or line.count("{") > MAX_KEY_DEPTH:
            return True
    return False


def toml_loads(text, name):
    text = parsing.clean(text)
    if len(text) > MAX_CONFIG:
        raise ConfigProblem(
            f"{name} is {len(text)} characters long, more than any runtime configuration. Fix: repair it"
        )
    if _too_deep(text):
        raise ConfigProblem(
            f"{name} nests keys, arrays or tables more than {MAX_KEY_DEPTH} levels deep, which no runtime "
            "configuration does. Fix: repair it"
        )
    try:
        return tomllib.loads(text)
    except (tomllib.TOMLDecodeError, RecursionError) as exc:
        raise ConfigProblem(
            f"{name} is not valid TOML ({exc}). Fix: repair it (the runtime cannot read it either)"
        ) from None


# --- containerd ---------------------------------------------------------------------------------------------------


def containerd_effective_cri(main, imported):
    """The CRI plugin section containerd 1.7 ends up with: that of the last file defining it.

    containerd 1.7 merges imported files into the main one plugin by plugin: an imported file that sets anything
    under a plugin replaces that plugin's whole section (checked with Debian's 1.7.24: a drop-in defining only
    runtimes.nvidia resets sandbox_image and drops the default runc runtime). imported is [(path, parsed)] in
    containerd's import order.
    """
    section = (main.get("plugins") or {}).get(CRI_PLUGIN)
    for _path, data in imported:
        section = (data.get("plugins") or {}).get(CRI_PLUGIN, section)
    return copy.deepcopy(section or {})


def _nvidia_runtime(runtimes, runtime_path):
    """The nvidia runtime: a copy of runc's settings (SystemdCgroup must match the cgroup driver kubelet uses) with
    nvidia-container-runtime as runc's binary."""
    base = runtimes.get("runc") if (runtimes.get("runc") or {}).get("runtime_type", RUNC_V2) == RUNC_V2 else None
    nvidia = copy.deepcopy(base or {})
    nvidia["runtime_type"] = RUNC_V2
    nvidia["options"] = {**(nvidia.get("options") or {}), "BinaryName": runtime_path}
    return nvidia


def _merged(base, over):
    merged = dict(base)
    for key, value in over.items():
        mergeable = isinstance(value, dict) and isinstance(merged.get(key), dict)
        merged[key] = _merged(merged[key], value) if mergeable else copy.deepcopy(value)
    return merged


def containerd_effective_runtime_plugin(main, imported):
    """The CRI runtime plugin's section containerd 2.x ends up with from a version 3 main file and its imports.

    containerd 2.x merges imported files key by key, in import order, and ignores an imported file of another version
    than the main one's (both checked with Debian's containerd 2.1.9: tests/fixtures/containerd/containerd-2.1.9).
    imported is [(path, parsed)] in containerd's import order.
    """
    section = {}
    for data in [main] + [data for _path, data in imported if data.get("version", 1) == main.get("version", 1)]:
        section = _merged(section, (data.get("plugins") or {}).get(CRI_RUNTIME_PLUGIN) or {})
    return section


def containerd_dropin(main, imported, runtime_path, make_default):
    """The drop-in's text, in the main file's configuration version.

    Version 2 (containerd 1.5 to 1.7; 2.x migrates it): the drop-in replaces the CRI section (see
    containerd_effective_cri), so it carries every setting the owner's files make there, plus the nvidia runtime;
    settings nobody makes stay containerd's defaults. Version 3 (containerd 2.x), merged key by key: the nvidia runtime
    alone. A drop-in of the other version would be ignored, or would make containerd 2.x ignore the main file's
    settings (both seen with 2.1.9).
    """
    if main.get("version") == 3:
        runtimes = ((containerd_effective_runtime_plugin(main, imported).get("containerd") or {}).get("runtimes")) or {}
        ctrd = {"runtimes": {RUNTIME_NAME: _nvidia_runtime(runtimes, runtime_path)}}
        if make_default:
            ctrd["default_runtime_name"] = RUNTIME_NAME
        return (
            HEADER + "# containerd 2.x merges this file key by key into the files that import it, so it holds the\n"
            "# nvidia runtime alone: runc's settings as they were when it was written, with\n"
            "# nvidia-container-runtime as the binary. Changed runc's settings? Run the container\n"
            "# toolkit stage again.\n"
            + toml_dumps({"version": 3, "plugins": {CRI_RUNTIME_PLUGIN: {"containerd": ctrd}}})
        )
    cri = containerd_effective_cri(main, imported)
    runtimes_set = bool((cri.get("containerd") or {}).get("runtimes"))
    ctrd = cri.setdefault("containerd", {})
    runtimes = ctrd.setdefault("runtimes", {})
    if not runtimes_set:
        # Any runtimes table replaces containerd's default one, which holds runc: name runc as the default has it.
        runtimes["runc"] = {"runtime_type": RUNC_V2, "sandbox_mode": "podsandbox"}
    runtimes[RUNTIME_NAME] = _nvidia_runtime(runtimes, runtime_path)
    if make_default:
        ctrd["default_runtime_name"] = RUNTIME_NAME
    body = toml_dumps({"version": 2, "plugins": {CRI_PLUGIN: cri}})
    return (
        HEADER
        + "# containerd 1.7 replaces a plugin's whole section with an imported file's, so this file carries the\n"
        "# CRI settings of the files that import it, as they were when it was written, plus the nvidia runtime.\n"
        "# Changed those settings? Run the container toolkit stage again.\n" + body
    )


def containerd_overrides(main, data, make_default):
    """What an imported file read after the drop-in sets that would undo it (a phrase), or None.

    Version 2 under containerd 1.7: any CRI section replaces the drop-in's. Version 3: the nvidia runtime, or the
    default runtime where the drop-in sets it, merged over the drop-in's.
    """
    if main.get("version") != 3:
        return "set the CRI plugin's section, which would replace the nvidia runtime's" if CRI_PLUGIN in (
            data.get("plugins") or {}) else None  # fmt: skip
    if data.get("version", 1) != 3:
        return None
    ctrd = ((data.get("plugins") or {}).get(CRI_RUNTIME_PLUGIN) or {}).get("containerd") or {}
    if RUNTIME_NAME in (ctrd.get("runtimes") or {}) or (make_default and "default_runtime_name" in ctrd):
        return "set the nvidia runtime or the default runtime, which would override the drop-in's"
    return None


def containerd_check_version(main, name):
    version = main.get("version", 1)
    if version not in (2, 3):
        raise ConfigProblem(
            f"{name} is a version {version} containerd configuration; the nvidia runtime is written for version 2 "
            "(containerd 1.5 to 1.7, plugin io.containerd.grpc.v1.cri) and version 3 (containerd 2.x, plugin "
            "io.containerd.cri.v1.runtime). Fix: convert it to version 2 or 3 (`containerd config default` shows the "
            "layout), then run again"
        )


def _top_level_end(lines):
    """Index of the first table header line: top-level keys must come before it."""
    for i, line in enumerate(lines):
        if line.lstrip().startswith("["):
            return i
    return len(lines)


def _array_close(text, start):
    """Index of the ']' closing the array whose '[' is at start, skipping strings and comments."""
    depth, i, quote = 0, start, None
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\" and quote == '"':
                i += 1
            elif ch == quote:
                quote = None
        elif ch in "\"'":
            quote = ch
        elif ch == "#":
            i = text.find("\n", i)
            if i < 0:
                break
        elif ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return -1


def add_import(text, path, name):
    """The main configuration with path added to its imports, every other byte kept.

    The result is parsed back: it must equal the original with the one import added, or nothing is written.
    """
    text = parsing.clean(text)
    before = toml_loads(text, name)
    imports = before.get("imports")
    if imports is not None and not isinstance(imports, list):
        raise ConfigProblem(f"{name}: imports is {json.dumps(imports)}, not a list. Fix: make it a list of paths")
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    end = _top_level_end(lines)
    if imports is None:
        at = next((i + 1 for i in range(end) if re.match(r"^version\s*=", lines[i])), 0)
        lines.insert(at, f"imports = [{json.dumps(path)}]\n")
        result = "".join(lines)
    else:
        head = "".join(lines[:end])
        match = re.search(r"^imports\s*=\s*\[", head, re.MULTILINE)
        close = _array_close(head, match.end() - 1) if match else -1
        if close < 0:
            raise ConfigProblem(f"{name}: could not find the end of its imports list")
        inner = head[match.end() : close]
        # The last element gets its comma (after it, not after a trailing comment); the new one follows.
        blanked = re.sub(r"#[^\n]*", lambda m: " " * len(m.group()), inner)
        last = len(blanked.rstrip())
        if last and not blanked[:last].endswith(","):
            inner = inner[:last] + "," + inner[last:]
        if inner.endswith("\n"):
            inner += f"  {json.dumps(path)},\n"
        else:
            inner += f"{' ' if last else ''}{json.dumps(path)}"
        result = head[: match.end()] + inner + head[close:] + "".join(lines[end:])
    after = toml_loads(result, name)
    expected = {**before, "imports": [*(imports or []), path]}
    if after != expected:
        raise ConfigProblem(
            f"{name}: adding {path} to its imports would change other settings. Fix: add "
            f"imports = [{json.dumps(path)}] (with any imports it has) at its top by hand, then run again"
        )
    return result


# --- Docker and CRI-O ---------------------------------------------------------------------------------------------


def docker_daemon(text, runtime_path, make_default, name):
    """daemon.json with runtimes.nvidia (and default-runtime when asked) merged in; None when nothing changes.

    Docker reads one file: every other key is kept as it is. default-runtime is removed only when it names
    nvidia and nvidia is no longer wanted as the default.
    """
    try:
        data = json.loads(text) if text and text.strip() else {}
    except (ValueError, RecursionError) as exc:
        raise ConfigProblem(f"{name} is not valid JSON ({exc}). Fix: repair it (dockerd cannot start with it)") from exc
    if not isinstance(data, dict):
        raise ConfigProblem(f"{name} holds {type(data).__name__}, not a JSON object. Fix: repair it")
    new = copy.deepcopy(data)
    runtimes = new.get("runtimes")
    if runtimes is None:
        runtimes = new["runtimes"] = {}
    elif not isinstance(runtimes, dict):
        raise ConfigProblem(f"{name}: runtimes is not an object. Fix: repair it")
    runtimes[RUNTIME_NAME] = {"args": [], "path": runtime_path}
    if make_default:
        new["default-runtime"] = RUNTIME_NAME
    elif new.get("default-runtime") == RUNTIME_NAME:
        del new["default-runtime"]
    return None if new == data else json.dumps(new, indent=4) + "\n"


def crio_dropin(runtime_path, make_default):
    runtime = {"default_runtime": RUNTIME_NAME} if make_default else {}
    runtime["runtimes"] = {RUNTIME_NAME: {"runtime_path": runtime_path, "runtime_type": "oci"}}
    return HEADER + toml_dumps({"crio": {"runtime": runtime}})


# --- nvidia-ctk ---------------------------------------------------------------------------------------------------


def parse_ctk_version(text):
    """The version `nvidia-ctk --version` prints ("1.17.8"), or None."""
    match = _CTK_VERSION.search(parsing.bounded(text)[0])
    return match.group(1) if match else None


def parse_cdi_list(text):
    """The fully qualified device names `nvidia-ctk cdi list` prints on stdout ("nvidia.com/gpu=0")."""
    return _CDI_DEVICE.findall(parsing.bounded(text)[0])


def cdi_regenerate_reason(record, spec_sha256, driver_version, gpus, toolkit_version):
    """Why the CDI spec must be generated again, or None when it was generated for what the node has now.

    record is what the last generation wrote down ({driver_version, gpus, toolkit_version, spec_sha256}), or None;
    spec_sha256 is the spec file's checksum now, or None when it is missing.
    """
    if spec_sha256 is None:
        return "there is no spec yet"
    if not record:
        return "nothing records what the spec was generated for"
    if record.get("spec_sha256") != spec_sha256:
        return "the spec was changed since it was generated"
    if record.get("driver_version") != driver_version:
        return f"the driver changed from {record.get('driver_version')} to {driver_version}"
    if sorted(record.get("gpus") or []) != sorted(gpus):
        return f"the GPUs changed ({len(record.get('gpus') or [])} then, {len(gpus)} now)"
    if record.get("toolkit_version") != toolkit_version:
        return f"the toolkit changed from {record.get('toolkit_version')} to {toolkit_version}"
    return None


# The GPU runtime's own words inside a container runtime's error: nvidia-container-cli's (after runc's "stderr: "),
# the CDI injection's, or NVML's as nvidia-smi prints them in the container.
_RUNTIME_ERROR = re.compile(
    r"(nvidia-container-cli: .{1,300}|unresolvable CDI devices .{1,200}|could not select device driver .{1,200}|"
    r"Failed to initialize NVML: .{1,200})$"
)


def runtime_error(text):
    """The line that says why a GPU container did not start or saw no GPU, from a container runtime's output (ctr,
    docker, podman): the NVIDIA part where there is one, else the last line; None for no output."""
    lines = [line.strip() for line in parsing.bounded(text)[0].splitlines() if line.strip()]
    for line in reversed(lines):
        found = _RUNTIME_ERROR.search(line)
        if found:
            return found.group(1)
    return lines[-1][-300:] if lines else None
