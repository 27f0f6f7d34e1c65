# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""CUDA toolkit: pure parsers over apt, dpkg, nvcc, update-alternatives and ldd output, and the cuda_toolkit role's
decisions (which packages at which version, where each toolkit's CUDA root is, whether the driver runs it).

Text in, data out, no I/O. Python 3.8 compatible: shipped to nodes with cuda_toolkit_facts and cuda_compile_check,
and imported on the controller by the cuda_* filters.
"""

from __future__ import annotations

import functools
import json
import re

from ansible_collections.gpuops.bringup.plugins.module_utils import apt, gpu_catalog, parsing, rpm

# Sources the role knows: the OS's own packages, and NVIDIA's CUDA network repository (cuda-toolkit-X-Y under
# /usr/local/cuda-X.Y, several side by side).
SOURCES = ("distribution", "cuda_repo")

# The virtual packages (and real names) through which a toolkit's -dev packages require the driver's userland.
DRIVER_LIBRARIES = ("libcuda.so.1", "libcuda1", "libnvidia-ml.so.1", "libnvidia-ml1")
# Debian builds every NVIDIA driver userland package (libcuda1, libnvidia-ml1, nvidia-alternative...) from a source
# package of this name or its branch variants (nvidia-graphics-drivers-tesla-535).
DRIVER_SOURCE_PREFIX = "nvidia-graphics-drivers"
# NVIDIA's RHEL driver userland: built from the nvidia-driver source rpm (nvidia-driver, -libs, -cuda, -cuda-libs,
# -NVML...), with cuda-drivers (the meta-package) and the kernel module packages (kmod-nvidia-*, nvidia-kmod-common)
# around it; any other build of it provides the libraries' sonames (rpm's automatic provides).
RPM_DRIVER_SOURCES = ("nvidia-driver", "cuda-drivers")
# Names of those packages (nvidia-driver-cuda-libs, cuda-drivers-550, kmod-nvidia-open-dkms, nvidia-kmod-common).
RPM_DRIVER_PREFIXES = ("nvidia-driver", "cuda-drivers", "kmod-nvidia", "nvidia-kmod")
RPM_DRIVER_LIBRARIES = ("libcuda.so.1()(64bit)", "libnvidia-ml.so.1()(64bit)")
# NVIDIA's cuda-compat-X-Y carries a driver's libcuda for forward compatibility under /usr/local/cuda-X.Y/compat,
# off the linker's path: not a second userland.
RPM_COMPAT_PREFIX = "cuda-compat"
# An rpm Requires naming a version: "cuda-drivers >= 550.54.15".
_RPM_REQUIRES = re.compile(r"^(?P<name>\S+) (?P<op>>=|=|>) (?P<version>\S+)$")

# "12.4" (the newest release of that minor the source carries) or "12.4.1" (exactly that release).
_REQUESTED = re.compile(r"(?P<major>[0-9]{2})\.(?P<minor>[0-9]{1,2})(?:\.(?P<update>[0-9]{1,2}))?")
# nvcc --version: "Cuda compilation tools, release 12.4, V12.4.131".
_NVCC = re.compile(r"release (?P<release>\d+\.\d+), V(?P<version>\d+\.\d+\.\d+)")
# Debian's toolkit upstream version: "<nvcc version>~<CUDA release>", 12.4.131~12.4.1 (12.4 Update 1's nvcc).
_DEBIAN = re.compile(r"^(?P<nvcc>\d+\.\d+\.\d+)~(?P<release>(?P<mm>\d+\.\d+)\.\d+)$")
# NVIDIA's cuda-toolkit-X-Y: "<CUDA release>-<revision>", 12.4.1-1.
_NVIDIA = re.compile(r"^(?P<release>(?P<mm>\d+\.\d+)\.\d+)-\S+$")
# apt-get --simulate: "Inst libcuda1 (550.163.01-2 Debian:13.8/stable [amd64])", an upgrade
# "Inst libfoo [1.0-1] (1.1-1 Debian:13.8/stable [amd64])", a removal "Remv libfoo [1.0-1]".
_INST = re.compile(r"^Inst (?P<name>[^\s:]+)(?::\S+)? (?:\[(?P<old>[^\]]+)\] )?\((?P<version>\S+)")
_REMV = re.compile(r"^Remv (?P<name>[^\s:]+)(?::\S+)?(?: \[(?P<old>[^\]]+)\])?")
# A relation in a Depends field: "libcuda.so.1 (>= 550)".
_RELATION = re.compile(
    r"^(?P<name>[a-z0-9][a-z0-9+.-]*)(?::\S+)?(?:\s*\((?P<op><<|<=|=|>=|>>)\s*(?P<version>[^)]+)\))?"
)
# ldd: "libcudart.so.12 => /lib/x86_64-linux-gnu/libcudart.so.12 (0x...)", "libfoo.so.1 => not found".
_LDD = re.compile(r"^\s*(?P<lib>\S+) => (?P<path>not found|\S+)")
# readelf -d: " 0x0000000000000001 (NEEDED)             Shared library: [libcudart.so.12]".
_NEEDED = re.compile(r"\(NEEDED\)\s+Shared library: \[(?P<lib>[^\]]+)\]")


def parse_requested(text):
    """{"text", "major_minor", "release"} for a requested CUDA version ("12.4" -> release None; "12.4.1"), or None:
    also for what is no string (YAML's unquoted 12.10 is the float 12.1) and for a blank or newline around it, which
    would reach the package name as it is."""
    if not isinstance(text, str):
        return None
    match = _REQUESTED.fullmatch(text)
    if match is None:
        return None
    major_minor = f"{int(match.group('major'))}.{int(match.group('minor'))}"
    update = match.group("update")
    return {
        "text": text,
        "major_minor": major_minor,
        "release": None if update is None else f"{major_minor}.{int(update)}",
    }


def version_key(text):
    """Sortable key for a dotted version ("12.10" after "12.9")."""
    return tuple(int(part) for part in re.findall(r"[0-9]{1,20}", str(text)))


_DRIVER_VERSION = re.compile(r"[0-9]{1,9}(?:\.[0-9]{1,9}){0,4}")


def driver_version(text):
    """The NVIDIA driver version in a package relation's version: 550.54.15-1 (a Debian revision), 1:550.54.15-1~deb13u1
    (an epoch too) and 550.54.15 all give 550.54.15; None for what is no driver version."""
    upstream = apt.upstream_version(str(text).strip())
    return upstream if _DRIVER_VERSION.fullmatch(upstream) else None


def parse_nvcc_version(text):
    """{"release": "12.4", "version": "12.4.131"} from `nvcc --version`, or None when the text has no such line."""
    match = _NVCC.search(parsing.bounded(text)[0])
    return None if match is None else {"release": match.group("release"), "version": match.group("version")}


def debian_toolkit_version(version):
    """{"nvcc", "release", "major_minor"} for a Debian nvidia-cuda-toolkit version, or None.

    12.4.131~12.4.1-2 -> nvcc 12.4.131 of CUDA 12.4.1 (12.4 Update 1); 11.8.89~11.8.0-5~deb12u1 -> 11.8.89, 11.8.0.
    """
    match = _DEBIAN.match(apt.upstream_version(version))
    if match is None:
        return None
    return {"nvcc": match.group("nvcc"), "release": match.group("release"), "major_minor": match.group("mm")}


def parse_simulation(text):
    """{"install": [{name, version, upgrade_from}], "remove": [{name, version}]} from `apt-get --simulate install`."""
    install, remove = [], []
    for line in parsing.bounded(text)[0].splitlines():
        match = _INST.match(line)
        if match:
            install.append({"name": match.group("name"), "version": match.group("version"),
                            "upgrade_from": match.group("old")})  # fmt: skip
            continue
        match = _REMV.match(line)
        if match:
            remove.append({"name": match.group("name"), "version": match.group("old")})
    return {"install": install, "remove": remove}


def parse_control(text):
    """Stanzas of RFC 822 control data (`apt-cache show`, `dpkg-query -s`) as dicts, continuation lines joined."""
    stanzas, current, key = [], {}, None
    for line in parsing.bounded(text)[0].splitlines():
        if not line.strip():
            if current:
                stanzas.append(current)
            current, key = {}, None
        elif line[0] in " \t" and key:
            current[key] += "\n" + line.strip()
        elif ":" in line:
            key, _sep, value = line.partition(":")
            current[key] = value.strip()
    if current:
        stanzas.append(current)
    return stanzas


def parse_relations(field):
    """A Depends/Provides field as a list of alternative groups, each [{name, op, version}]."""
    groups = []
    for group in (field or "").split(","):
        alternatives = []
        for part in group.split("|"):
            match = _RELATION.match(part.strip())
            if match:
                alternatives.append({"name": match.group("name"), "op": match.group("op"),
                                     "version": (match.group("version") or "").strip() or None})  # fmt: skip
        if alternatives:
            groups.append(alternatives)
    return groups


def source_name(stanza):
    """The source package of a control stanza: "nvidia-cuda-toolkit (12.4.1-2)" -> nvidia-cuda-toolkit."""
    source = stanza.get("Source", "").split(" ")[0]
    return source or stanza.get("Package", "")


def is_driver_package(stanza):
    """Whether a package is part of an NVIDIA driver's userland (its source is nvidia-graphics-drivers*)."""
    return source_name(stanza).startswith(DRIVER_SOURCE_PREFIX)


def provided_driver_version(stanza):
    """The driver version a package provides libcuda.so.1 at ("libcuda.so.1 (= 535.274.02)"), or None."""
    for group in parse_relations(stanza.get("Provides", "")):
        for rel in group:
            if rel["name"] == "libcuda.so.1" and rel["op"] == "=" and driver_version(rel["version"] or ""):
                return driver_version(rel["version"])
    return None


def driver_library_minimum(stanzas):
    """The newest driver the packages' Depends require of the driver libraries, or None.

    {"version": "550", "package": "nvidia-cuda-dev", "relation": "libcuda1 (>= 550) | libcuda.so.1 (>= 550) | ..."}
    from Debian 13's nvidia-cuda-dev, whose Depends names libcuda1 (>= 550).
    """
    found = None
    for stanza in stanzas:
        for field in ("Pre-Depends", "Depends"):
            for group in parse_relations(stanza.get(field, "")):
                for rel in group:
                    if rel["name"] not in DRIVER_LIBRARIES or rel["op"] not in (">=", ">>", "="):
                        continue
                    # "libcuda1 (>= 550.54.15-1)": the driver version is the upstream part.
                    version = driver_version(rel["version"] or "")
                    if version is None:
                        continue
                    key = gpu_catalog.driver_version_key(version)
                    if found is None or key > gpu_catalog.driver_version_key(found["version"]):
                        relation = " | ".join(
                            a["name"] + (f" ({a['op']} {a['version']})" if a["op"] else "") for a in group
                        )
                        found = {"version": version, "package": stanza.get("Package"), "relation": relation}
    return found


def rpm_source_name(sourcerpm):
    """The source package of an rpm: "nvidia-driver-550.163.01-1.el9.src.rpm" -> nvidia-driver."""
    return sourcerpm.rsplit("-", 2)[0] if sourcerpm.count("-") >= 2 else sourcerpm


def rpm_is_driver(package):
    """Whether an rpm (dnf_install's transaction entry: name, sourcerpm, provides) is NVIDIA driver userland."""
    if package["name"].startswith(RPM_COMPAT_PREFIX):
        return False
    return (
        rpm_source_name(package.get("sourcerpm") or "") in RPM_DRIVER_SOURCES
        or package["name"].startswith(RPM_DRIVER_PREFIXES)
        or any(p.split(" ")[0] in RPM_DRIVER_LIBRARIES for p in package.get("provides") or [])
    )


def rpm_driver_requirement(packages):
    """The newest driver the rpms' Requires name a driver package at, as driver_library_minimum does for debs.

    "cuda-drivers >= 550.54.15" -> {"version": "550.54.15", "package": <the requiring rpm>, "relation": that text};
    an epoch and a release are dropped ("3:550.163.01-1.el9" -> 550.163.01). None when no Requires names one.
    """
    found = None
    for package in packages:
        for text in package.get("requires") or []:
            match = _RPM_REQUIRES.match(text)
            if not match or not rpm_is_driver({"name": match.group("name")}):
                continue
            version = rpm.split_evr(match.group("version"))[1]
            if not _DRIVER_VERSION.fullmatch(version):
                continue
            key = gpu_catalog.driver_version_key(version)
            if found is None or key > gpu_catalog.driver_version_key(found["version"]):
                found = {"version": version, "package": package["name"], "relation": text}
    return found


def dnf_simulation(transaction):
    """cuda_toolkit_facts' simulation from dnf's resolution (module_utils dnf.resolve)."""
    return {
        "ok": transaction["error"] is None,
        "error": transaction["error"],
        "install": [
            {"name": p["name"], "version": p["version"], "upgrade_from": p["upgrade_from"],
             "source": rpm_source_name(p["sourcerpm"]), "driver": rpm_is_driver(p)}
            for p in transaction["install"]
        ],
        "remove": transaction["remove"],
        "driver_requirement": rpm_driver_requirement(transaction["install"]),
    }  # fmt: skip


def parse_alternatives(text):
    """`update-alternatives --query NAME` as {link, status, value, choices: {path: priority}}."""
    result = {"link": None, "status": None, "value": None, "choices": {}}
    current = None
    for line in parsing.bounded(text)[0].splitlines():
        key, _sep, value = line.partition(": ")
        value = value.strip()
        if key == "Link":
            result["link"] = value
        elif key == "Status":
            result["status"] = value
        elif key == "Value":
            result["value"] = None if value == "none" else value
        elif key == "Alternative":
            current = value
            result["choices"][current] = None
        elif key == "Priority" and current is not None:
            # An unreadable priority is unknown (None), as one not printed yet.
            result["choices"][current] = parsing.to_int(value)
    return result


_DISPLAY_MODE = re.compile(r"^(?P<name>\S+) - (?:(?P<debian>auto|manual) mode|status is (?P<rhel>auto|manual)\.)$")
_POINTS_TO = "link currently points to "
_DISPLAY_CHOICE = re.compile(r"^(?P<path>/\S*) - (?:family \S+ )?priority (?P<priority>-?\d+)$", re.ASCII)


def parse_alternatives_display(text):
    """`update-alternatives --display NAME` as parse_alternatives returns --query: {link, status, value, choices}.

    Two formats: Debian's ("cuda - manual mode", "  link currently points to PATH", "  link cuda is LINK", "PATH -
    priority N") and RHEL's alternatives, where update-alternatives is a link to it and --query does not exist
    ("java - status is auto.", " link currently points to PATH", "PATH - [family F ]priority N", followers, "Current
    `best' version is PATH."; no line names the link itself: link is null).
    """
    result = {"link": None, "status": None, "value": None, "choices": {}}
    name = None
    for line in parsing.bounded(text)[0].splitlines():
        mode = _DISPLAY_MODE.match(line)
        choice = _DISPLAY_CHOICE.match(line)
        detail = line.strip()
        if mode and name is None:
            name = mode.group("name")
            result["status"] = mode.group("debian") or mode.group("rhel")
        elif choice:
            result["choices"][choice.group("path")] = parsing.to_int(choice.group("priority"))
        elif detail.startswith(_POINTS_TO):
            result["value"] = detail[len(_POINTS_TO) :]
        elif name and detail.startswith(f"link {name} is "):
            result["link"] = detail[len(f"link {name} is ") :]
    return result


def parse_ldd(text):
    """{library: resolved path or None} from ldd output (None: "not found")."""
    libs = {}
    for line in parsing.bounded(text)[0].splitlines():
        match = _LDD.match(line)
        if match:
            libs[match.group("lib")] = None if match.group("path") == "not found" else match.group("path")
    return libs


def parse_needed(text):
    """The NEEDED shared libraries of `readelf -d` output, in order."""
    return _NEEDED.findall(parsing.bounded(text)[0])


_CHECK_DEVICE = re.compile(
    r"device ([0-9]{1,4}) ([0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}) (?:failed: (.{0,300}?), last value -?[0-9]{1,11}|"
    r"(.{0,200}) kernel ok)$"
)
_CHECK_SUMMARY = re.compile(
    r"devices ([0-9]{1,4}) runtime ([0-9]{1,9}) driver ([0-9]{1,9}) (?:kernel ok|failed [0-9]{1,4})$"
)
# A failure as the check program prints it ("cudaGetDeviceCount: <error string>"), as the CUDA samples do
# ("-> <error string>" under "cudaGetDeviceCount returned 35"; helper_cuda.h's "code=100(cudaErrorNoDevice)"), and
# as a "Check failed: e == cudaSuccess (803 vs. 0) : <error string>" assertion does.
_CHECK_ERROR = re.compile(
    r"(?:cudaGetDeviceCount|cudaMalloc/cudaMemcpy|kernel): (?P<ours>.{1,300})$|^-> (?P<sample>.{1,300})$|"
    r"code=[0-9]{1,4}\((?P<name>cudaError[A-Za-z]{1,60})\)|Check failed: .{0,200}?\) : (?P<check>.{1,300})$"
)


def parse_check_output(text):
    """What the CUDA check program (roles/_common/files/cuda_check.cu) printed: {devices, runtime, driver (CUDA
    versions as numbers, 12040 for 12.4), ok [{device, pci, name}], failed [{device, pci, error}], errors (CUDA's
    error strings of the failures that stopped it, in order)}. devices is None when no summary line was printed."""
    result = {"devices": None, "runtime": None, "driver": None, "ok": [], "failed": [], "errors": []}
    for line in parsing.bounded(text)[0].splitlines():
        line = line.strip()
        device = _CHECK_DEVICE.match(line)
        summary = _CHECK_SUMMARY.match(line)
        error = _CHECK_ERROR.search(line)
        if device and device.group(3) is not None:
            result["failed"].append({"device": int(device.group(1)), "pci": device.group(2), "error": device.group(3)})
            result["errors"].append(device.group(3))
        elif device:
            result["ok"].append({"device": int(device.group(1)), "pci": device.group(2), "name": device.group(4)})
        elif summary:
            result.update(devices=int(summary.group(1)), runtime=int(summary.group(2)), driver=int(summary.group(3)))
        elif error:
            result["errors"].append(next(v for v in error.groupdict().values() if v).strip())
    return result


# Per source: what the role serves (the supported table, os-release ID -> majors, is the role's vars) and the fix for
# a node it does not.
_SOURCE_RELEASES = {
    "distribution": (
        "cuda_toolkit_source is distribution (the OS's own packages), which this collection supports on Debian 12 and "
        "13 (their non-free nvidia-cuda-toolkit)",
        "a supported release, or cuda_toolkit_source: cuda_repo (NVIDIA's CUDA repository).",
    ),
    "cuda_repo": (
        "cuda_toolkit_source is cuda_repo (NVIDIA's CUDA repository), which this collection knows for Debian 12, "
        "Ubuntu 22.04 and 24.04, Rocky Linux and RHEL 8 and 9 (NVIDIA's debian12, ubuntu2204, ubuntu2404, rhel8 and "
        "rhel9 repositories)",
        "one of those releases, or cuda_toolkit_source: distribution where the OS carries a toolkit (Debian 12, 13).",
    ),
}


def preflight(*, host, node, variables, supported):
    """{problems} of one node before anything is read from its package sources: the role's variables (input_problems)
    and the node's OS release (os_facts' gpuops_os) against what the source serves (supported: source -> os-release ID
    -> majors), all at once."""
    source = variables.get("cuda_toolkit_source")
    problems = input_problems(
        source,
        variables.get("cuda_toolkit_versions"),
        variables.get("cuda_toolkit_default"),
        variables.get("nvidia_driver_branch") or "",
    )
    release = (node or {}).get("os") or {}
    if source in _SOURCE_RELEASES and release.get("major") not in (supported.get(source) or {}).get(
        release.get("id"), ()
    ):
        why, fix = _SOURCE_RELEASES[source]
        problems.append(
            f"{why}; {host} runs {release.get('name') or 'an unknown OS'} (ID={release.get('id')}, "
            f"VERSION_ID={release.get('version_id')}). Fix: {fix}"
        )
    return {"problems": problems}


def input_problems(source, versions, default, driver_branch):
    """Problems with the role's variables alone, each naming the variable, the value and the fix."""
    problems = []
    if source not in SOURCES:
        return [
            f"cuda_toolkit_source is {source!r}, which this collection does not know. Fix: cuda_toolkit_source: "
            f"distribution (the OS's own packages) or cuda_repo (NVIDIA's CUDA repository)."
        ]
    if not isinstance(versions, list):
        return [
            f'cuda_toolkit_versions is {versions!r}, not a list. Fix: a list, e.g. cuda_toolkit_versions: ["12.4"].'
        ]
    parsed = []
    for text in versions:
        requested = parse_requested(text)
        if requested is None:
            quote = " (quoted: YAML reads an unquoted 12.10 as the number 12.1)" if not isinstance(text, str) else ""
            problems.append(
                f"cuda_toolkit_versions names {json.dumps(text)}, not a CUDA version{quote}. Fix: major.minor "
                '("12.4", the newest release of 12.4 the source carries) or major.minor.update ("12.4.1", CUDA 12.4 '
                "Update 1)."
            )
            continue
        try:
            requested["min_driver"] = gpu_catalog.cuda_min_driver(requested["release"] or requested["major_minor"])
        except ValueError as exc:
            problems.append(f'cuda_toolkit_versions names "{text}": {exc}. Fix: a CUDA release NVIDIA has published.')
            continue
        parsed.append(requested)
    minors = [p["major_minor"] for p in parsed]
    twice = sorted({m for m in minors if minors.count(m) > 1}, key=version_key)
    if twice:
        problems.append(
            f"cuda_toolkit_versions names CUDA {', '.join(twice)} more than once ({', '.join(map(str, versions))}): "
            f"one CUDA root per minor version. Fix: name each minor version once."
        )
    if str(default) and versions and str(default) not in [str(v) for v in versions]:
        problems.append(
            f'cuda_toolkit_default is "{default}", which is not among cuda_toolkit_versions '
            f"({', '.join(map(str, versions))}): /usr/local/cuda can only point at an installed toolkit. Fix: "
            f'cuda_toolkit_default: "{versions[-1]}" (one of them), or "" for the newest.'
        )
    if source == "cuda_repo" and not versions:
        problems.append(
            "cuda_toolkit_source is cuda_repo but cuda_toolkit_versions is empty: NVIDIA's CUDA repository carries "
            'every release, so the role installs none it is not told. Fix: cuda_toolkit_versions: ["12.4"] (one or '
            "several versions)."
        )
    elif str(default) and not versions:
        problems.append(
            f'cuda_toolkit_default is "{default}" but cuda_toolkit_versions is empty (the one toolkit the source '
            f'carries). Fix: cuda_toolkit_versions: ["{default}"], or cuda_toolkit_default: "".'
        )
    branch = str(driver_branch or "")
    if branch and not re.fullmatch(r"\d{3}", branch):
        problems.append(
            f'nvidia_driver_branch is "{branch}", not a driver branch. Fix: the branch number as a string, e.g. '
            f'nvidia_driver_branch: "550".'
        )
    elif branch:
        for requested in parsed:
            if int(branch) < gpu_catalog.driver_version_key(requested["min_driver"])[0]:
                problems.append(
                    f"cuda_toolkit_versions {requested['text']} needs driver >= {requested['min_driver']}; "
                    f'nvidia_driver_branch is {branch}. Fix: nvidia_driver_branch: "'
                    f'{gpu_catalog.driver_version_key(requested["min_driver"])[0]}" or later, or a CUDA version '
                    f"driver branch {branch} runs (the newest: {newest_cuda_for_branch(branch)})."
                )
    return problems


def newest_cuda_for_branch(branch):
    """The newest CUDA release (x.y) whose toolkit driver a driver branch satisfies ("535" -> "12.2")."""
    best = None
    for _label, number, driver in gpu_catalog.TOOLKIT_DRIVERS:
        if gpu_catalog.driver_version_key(driver)[0] <= int(branch):
            minor = ".".join(number.split(".")[:2])
            if best is None or version_key(minor) > version_key(best):
                best = minor
    return best or "none"


def distribution_plan(packages, versions, default, table, host):
    """The toolkits the distribution source installs, or the problem.

    packages: package_info's result for the table's package. versions: cuda_toolkit_versions ([] for the one the
    source carries). table: the OS's layout (where, package, held, root with {version}, nvcc, links with
    {multiarch}, multiarch, executables_of). Returns {"problems", "toolkits": [{version, major_minor, release, nvcc,
    package, package_version, held, root, links, executables_of, nvcc_binary, priority, min_driver}], "default"};
    default is the root /usr/local/cuda points at.
    """
    name, where = table["package"], table["where"]
    info = packages.get(name) or {}
    carried = list(info.get("available") or [])
    if info.get("installed") and info["installed"] not in carried:
        carried.append(info["installed"])
    releases = {v: debian_toolkit_version(v) for v in carried}
    releases = {v: r for v, r in releases.items() if r is not None}
    if not releases:
        return _problem(
            f"{host}: {where} carry no version of {name}: the OS sources lack Debian's non-free component "
            f"(Debian keeps the CUDA toolkit there). Fix: run stage 1 (os_baseline), which configures contrib, "
            f"non-free and non-free-firmware, then run again."
        )
    described = ", ".join(
        f"CUDA {r['release']} ({name} {v})"
        for v, r in sorted(releases.items(), key=lambda i: functools.cmp_to_key(apt.compare_versions)(i[0]))
    )
    wanted = versions or [releases[_newest(releases)]["major_minor"]]
    if len({parse_requested(v)["major_minor"] for v in wanted}) > 1:
        return _problem(
            f"{host}: cuda_toolkit_versions is {', '.join(map(str, wanted))}, but {where} carry one CUDA toolkit "
            f'at a time ({described}). Fix: cuda_toolkit_versions: ["{releases[_newest(releases)]["major_minor"]}"], '
            f"or cuda_toolkit_source: cuda_repo for several side by side (NVIDIA's CUDA repository)."
        )
    requested = parse_requested(wanted[0])
    # The installed version is kept (pinned and held) as long as it is of the requested release.
    matching = [
        v
        for v, r in releases.items()
        if r["major_minor"] == requested["major_minor"] and requested["release"] in (None, r["release"])
    ]
    if not matching:
        return _problem(
            f'{host}: cuda_toolkit_versions names "{requested["text"]}", which {where} do not carry: they carry '
            f'{described}. Fix: cuda_toolkit_versions: ["{releases[_newest(releases)]["major_minor"]}"], or '
            f"cuda_toolkit_source: cuda_repo for other versions (NVIDIA's CUDA repository)."
        )
    chosen = info["installed"] if info.get("installed") in matching else apt.newest(matching)
    release = releases[chosen]
    toolkit = {
        "version": requested["text"],
        "major_minor": release["major_minor"],
        "release": release["release"],
        "nvcc": release["nvcc"],
        "package_version": chosen,
        "package": name,
        "held": list(table["held"]),
        "root": table["root"].replace("{version}", release["major_minor"]),
        # What the root holds besides bin: its name -> the path in Debian's layout.
        "links": [
            {"name": name, "target": target.replace("{multiarch}", table["multiarch"])}
            for name, target in sorted(table["links"].items())
        ],
        "executables_of": list(table["executables_of"]),
        # The real nvcc, whose directory holds the host compiler wrappers it must find first on PATH.
        "nvcc_binary": table["nvcc"],
        # NVIDIA's packages register /usr/local/cuda at priority <major><minor> (12.4 -> 124): the same scale.
        "priority": int(release["major_minor"].replace(".", "")),
        "min_driver": gpu_catalog.cuda_min_driver(release["release"]),
    }
    return {"problems": [], "toolkits": [toolkit], "default": default_root([toolkit], default)}


def repository_plan(index, packages, versions, default, table, host):
    """The toolkits NVIDIA's CUDA repository installs, one cuda-toolkit-X-Y per requested minor, or the problem.

    index: repository_index's packages ({cuda-toolkit-12-2: [Debian versions]}, read without adding the repository).
    packages: package_info's result for the same names (what is installed, and held). versions: cuda_toolkit_versions
    (input_problems has refused an empty list and a minor named twice). table: the OS's layout (where, root with
    {version}; manager: dnf orders versions as rpm does, else as dpkg). Returns {"problems", "toolkits", "default"} as
    distribution_plan does; a toolkit's nvcc (its exact version) is null: NVIDIA names it by another package's
    version, and verify checks the release nvcc reports.
    """
    order = rpm if table.get("manager") == "dnf" else apt
    toolkits = []
    for text in versions:
        requested = parse_requested(text)
        name = "cuda-toolkit-" + requested["major_minor"].replace(".", "-")
        info = packages.get(name) or {}
        carried = [v for v in index.get(name) or [] if _NVIDIA.match(v)]
        matching = [v for v in carried if requested["release"] in (None, _NVIDIA.match(v).group("release"))]
        if not matching:
            has = ", ".join(sorted(carried, key=functools.cmp_to_key(order.compare_versions))) or "no version"
            newest = (
                f' (cuda_toolkit_versions: ["{requested["major_minor"]}"], the newest it carries)' if carried else ""
            )
            return _problem(
                f'{host}: cuda_toolkit_versions names "{requested["text"]}", but {table["where"]} carries {has} of '
                f"{name}. Nothing was changed. Fix: a version it carries{newest}, or a mirror that holds it "
                f"(gpuops_mirror_url)."
            )
        # The installed version is kept (pinned and held) as long as it is of the requested release.
        chosen = info["installed"] if info.get("installed") in matching else order.newest(matching)
        release = _NVIDIA.match(chosen).group("release")
        toolkits.append({
            "version": requested["text"],
            "major_minor": requested["major_minor"],
            "release": release,
            "nvcc": None,
            "package": name,
            "package_version": chosen,
            "held": [name],
            "root": table["root"].replace("{version}", requested["major_minor"]),
            # The packages install the whole root: the role links nothing into it.
            "links": [],
            "executables_of": [],
            "nvcc_binary": None,
            # The scale NVIDIA's cuda-toolkit-X-Y-config-common registers /usr/local/cuda-X.Y at (12.2 -> 122).
            "priority": int(requested["major_minor"].replace(".", "")),
            "min_driver": gpu_catalog.cuda_min_driver(release),
            # Whether the package manager knows it yet (the repository configured by an earlier run): it can simulate.
            "known": chosen in (info.get("available") or []),
        })  # fmt: skip
    return {"problems": [], "toolkits": toolkits, "default": default_root(toolkits, default)}


def root_paths(plan, executables):
    """The CUDA roots' layout as managed_paths entries: where the source spreads a toolkit over the OS (Debian; a
    toolkit with an nvcc_binary), its root with bin and nvvm, bin/nvcc a wrapper that puts the real nvcc's directory
    first on PATH (there Debian's gcc/g++ wrappers pick a host compiler that nvcc supports), every other executable
    of its packages linked into bin (executables: cuda_toolkit_facts' list), and the plan's links (include, lib64,
    nvvm/libdevice). NVIDIA's packages install their own roots whole: nothing for them."""
    entries = []
    for toolkit in plan["toolkits"]:
        root = toolkit["root"]
        if toolkit["nvcc_binary"]:
            entries += [{"path": root + sub, "state": "directory", "mode": "0755"} for sub in ("", "/bin", "/nvvm")]
            nvcc = toolkit["nvcc_binary"]
            entries.append({
                "path": root + "/bin/nvcc",
                "state": "file",
                "mode": "0755",
                "content": (
                    "#!/bin/sh\n"
                    f"# Managed by gpuops.bringup (cuda_toolkit): CUDA {toolkit['release']}'s nvcc "
                    f"({toolkit['package']} {toolkit['package_version']}).\n"
                    "# Its directory first on PATH: nvcc runs the host compiler as gcc/g++, and\n"
                    "# there Debian's wrappers pick a version this nvcc supports.\n"
                    f'PATH="{nvcc.rsplit("/", 1)[0]}:${{PATH}}"\n'
                    "export PATH\n"
                    f'exec {nvcc} "$@"\n'
                ),
            })  # fmt: skip
            entries += [
                {"path": f"{root}/bin/{path.rsplit('/', 1)[-1]}", "state": "link", "src": path}
                for path in executables
                if not path.endswith("/nvcc")
            ]
        entries += [
            {"path": f"{root}/{link['name']}", "state": "link", "src": link["target"]} for link in toolkit["links"]
        ]
    return entries


def profile_text(link, alternative):
    """The login shells' CUDA_HOME and PATH (/etc/profile.d/cuda.sh) for the CUDA root behind link."""
    return (
        "# Managed by gpuops.bringup (cuda_toolkit): edit the inventory, not this file.\n"
        f"# The default CUDA toolkit is the one behind {link}\n"
        f"# (update-alternatives --display {alternative}). The libraries need no LD_LIBRARY_PATH: the\n"
        "# dynamic linker finds them where the packages put them.\n"
        f"export CUDA_HOME={link}\n"
        'case ":${PATH}:" in\n'
        f"  *:{link}/bin:*) ;;\n"
        f"  *) export PATH={link}/bin:${{PATH}} ;;\n"
        "esac\n"
    )


def alternatives_steps(plan, alternatives, *, alternative, link, own_roots):
    """What update-alternatives must do for the plan, from the alternatives as read (cuda_toolkit_facts'
    alternatives: {status, value, choices: {root: priority}}): {commands, stale}.

    commands, in order (argv lists): --install for each planned root not registered at its priority, --remove for
    each root of the role's own (under own_roots) that no toolkit plans any more, --set to the plan's default unless
    it already is the manual choice. stale: those roots, for their directories to go once unregistered (NVIDIA's
    /usr/local/cuda-X.Y belong to their packages and are never stale). [] and [] on a node where all is right.
    """
    choices = alternatives.get("choices") or {}
    planned = [toolkit["root"] for toolkit in plan["toolkits"]]
    commands = [
        ["update-alternatives", "--install", link, alternative, toolkit["root"], str(toolkit["priority"])]
        for toolkit in plan["toolkits"]
        if choices.get(toolkit["root"]) != toolkit["priority"]
    ]
    stale = [root for root in choices if root.startswith(own_roots) and root not in planned]
    commands += [["update-alternatives", "--remove", alternative, root] for root in stale]
    if alternatives.get("value") != plan["default"] or alternatives.get("status") != "manual":
        commands.append(["update-alternatives", "--set", alternative, plan["default"]])
    return {"commands": commands, "stale": stale}


def configuration_paths(plan, executables, *, link, alternative, profile):
    """Everything the role lays out as managed_paths entries: the CUDA roots (root_paths()) and the login shells'
    profile (profile_text()) at the path profile."""
    profile_entry = {"path": profile, "state": "file", "mode": "0644", "content": profile_text(link, alternative)}
    return [*root_paths(plan, executables), profile_entry]


def default_root(toolkits, default):
    """The CUDA root of the toolkit requested as default (its version as cuda_toolkit_versions names it), else of
    the newest."""
    for toolkit in toolkits:
        if str(default) and toolkit["version"] == str(default):
            return toolkit["root"]
    return max(toolkits, key=lambda t: version_key(t["release"]))["root"]


def _newest(releases):
    return apt.newest(releases)


def _problem(text):
    # One problem: each one found ends the plan (no toolkit to plan beyond it).
    return {"problems": [text], "toolkits": [], "default": None}


def driver_problem(plan, facts, host):
    """Whether the node's driver runs the planned toolkits, and whether installing them would touch the driver.

    facts: cuda_toolkit_facts' ansible_facts.cuda_toolkit (driver userland installed, the install simulated).
    Returns the problem text (naming both versions and the fix) or None.
    """
    driver = facts["driver"]
    simulation = facts["simulation"]
    pulled = [p for p in simulation["install"] if p["driver"]]
    requirement = simulation["driver_requirement"]
    toolkit = ", ".join(f"CUDA {t['release']} ({t['package']} {t['package_version']})" for t in plan["toolkits"])
    if driver["version"] is None:
        return (
            f"{host} has no NVIDIA driver userland installed (no package provides libcuda.so.1), and installing "
            f"{toolkit} would pull one in: {_names(pulled) or 'libcuda1'}. The driver is stage 2's nvidia_driver role, "
            f"pinned and held there. Fix: run playbooks/nvidia_driver.yml first (a driver branch that runs "
            f"{_needs(plan, requirement)}), then run again."
        )
    installed = f"{driver['version']} ({_names([driver['provider']])})"
    newest = newest_cuda_for_branch(driver["version"].split(".")[0])
    beside = (
        f"installing it would put {_names(pulled)} beside the installed driver"
        + (f" ({requirement['package']} depends on {requirement['relation']})" if requirement else "")
        + ": two driver userlands on one node is a driver/library version mismatch (nvidia-smi and CUDA fail with "
        "'Driver/library version mismatch')"
    )
    for t in plan["toolkits"]:
        if not gpu_catalog.driver_at_least(driver["version"], t["min_driver"]):
            branch = gpu_catalog.driver_version_key(t["min_driver"])[0]
            return (
                f"{host}: cuda_toolkit_versions {t['version']} (CUDA {t['release']}) needs driver >= "
                f"{t['min_driver']}; the installed driver is {installed}"
                + (f", and {beside}" if pulled else "")
                + f'. Nothing was changed. Fix: nvidia_driver_branch: "{branch}" or later '
                f"(playbooks/nvidia_driver.yml), or a CUDA version driver {driver['version']} runs "
                f"(the newest: {newest})."
            )
    if pulled:
        return (
            f"{host}: the installed driver {installed} runs {toolkit}, but {beside}. Nothing was changed. Fix: "
            f"{_branch_for(requirement)} (playbooks/nvidia_driver.yml), whose userland the toolkit accepts, or a "
            f"toolkit built for driver {driver['version']} (cuda_toolkit_source: cuda_repo, NVIDIA's CUDA "
            f"repository)."
        )
    if simulation["remove"]:
        return (
            f"{host}: installing {toolkit} would remove {_names(simulation['remove'])}. Nothing was changed. "
            f"Fix: resolve the conflict with those packages first."
        )
    return None


def _names(packages):
    return ", ".join(f"{p['name']} {p['version']}" for p in packages)


def _needs(plan, requirement):
    minimum = max((t["min_driver"] for t in plan["toolkits"]), key=gpu_catalog.driver_version_key)
    if requirement and gpu_catalog.driver_version_key(requirement["version"]) > gpu_catalog.driver_version_key(minimum):
        minimum = requirement["version"]
    return f"driver >= {minimum}"


def _branch_for(requirement):
    if requirement is None:
        return "a driver branch"
    return f'nvidia_driver_branch: "{gpu_catalog.driver_version_key(requirement["version"])[0]}" or later'


def _held(plan):
    """The packages the plan holds, every toolkit's, sorted."""
    return sorted({name for t in plan["toolkits"] for name in t["held"]})


def _runtime(names):
    """The CUDA runtime's sonames among library names."""
    return [name for name in names if name.startswith("libcudart.so")]


def verify_problems(plan, packages, facts, profile, compiled, link):
    """What the node, read again, lacks of the plan; [] when nothing.

    packages: package_info's packages for the held names. facts: cuda_toolkit_facts' cuda_toolkit. profile: a login
    shell's CUDA_HOME and `command -v nvcc`, one per line. compiled: cuda_compile_check's results, one per toolkit
    root and then one for link (each with item, the root it compiled with).
    """
    problems = []
    for toolkit in plan["toolkits"]:
        installed = (packages.get(toolkit["package"]) or {}).get("installed")
        if installed != toolkit["package_version"]:
            problems.append(
                f"{toolkit['package']} is installed at {installed or 'no version'}, not {toolkit['package_version']}"
            )
    problems += [f"{name} is not held" for name in _held(plan) if not (packages.get(name) or {}).get("held")]
    if facts["driver"]["version"] is None:
        problems.append("no NVIDIA driver userland is installed any more")
    current = facts["alternatives"]["value"]
    if current != plan["default"]:
        problems.append(f"{link} points at {current or 'nothing'}, not {plan['default']}")
    if list(profile) != [link, f"{link}/bin/nvcc"]:
        got = [*profile, "", ""]
        problems.append(
            f"a login shell gets CUDA_HOME={got[0]} and nvcc {got[1] or 'not on PATH'}, not {link} and {link}/bin/nvcc"
        )
    roots = {t["root"]: t for t in plan["toolkits"]}
    for result in compiled:
        toolkit = roots.get(result["item"]) or roots[plan["default"]]
        nvcc = result.get("nvcc") or {}
        # NVIDIA's toolkits are checked by release: their nvcc's own version is not the toolkit package's.
        reported, expected = (nvcc.get("version"), toolkit["nvcc"]) if toolkit["nvcc"] else (
            nvcc.get("release"), toolkit["major_minor"])  # fmt: skip
        if reported != expected:
            problems.append(f"{result['item']}/bin/nvcc reports {reported}, not {expected}")
        resolved = (result.get("libraries") or {}).get("resolved") or {}
        runtime = _runtime((result.get("libraries") or {}).get("needed", []))
        if not runtime:
            problems.append(f"the program compiled with {result['item']} does not link against libcudart")
        problems += [f"{lib} (needed by the program compiled with {result['item']}) is not found" for lib in runtime
                     if resolved.get(lib) is None]  # fmt: skip
    return problems


def run_check(node):
    """{live, why_not}: whether the CUDA program verify compiles can run on this node (its own kernel, with the NVIDIA
    module loaded), and why not where it cannot. node: os_facts' gpuops_os, read with kernel_modules [nvidia]."""
    own_kernel = bool((node.get("capabilities") or {}).get("own_kernel"))
    loaded = (node.get("kernel_modules") or {}).get("nvidia") == "loaded"
    why_not = "this node's kernel belongs to its container host" if not own_kernel else "no NVIDIA driver is loaded"
    return {"live": own_kernel and loaded, "why_not": why_not}


def verify(*, host, plan, packages, facts, profile, compiled, link, profile_path, run):
    """{failures, passed} of the node read again after converge (verify_problems' failures; run: run_check's).

    compiled: cuda_compile_check's results, one per toolkit root in the plan's order and then one for link."""
    built = ", ".join(
        f"CUDA {toolkit['release']} (nvcc {(compiled[index].get('nvcc') or {}).get('version')}) under {toolkit['root']}"
        for index, toolkit in enumerate(plan["toolkits"])
    )
    runtimes = [
        resolved[name]
        for resolved in (((result.get("libraries") or {}).get("resolved") or {}) for result in compiled)
        for name in _runtime(resolved)
    ]
    passed = (
        f"{host} passed cuda_toolkit verification: {built}; {link} -> {plan['default']}; CUDA_HOME and PATH from "
        f"{profile_path}; {len(_held(plan))} packages held at their versions; a CUDA program compiled and "
        f"linked against {', '.join(dict.fromkeys(str(path) for path in runtimes))}"
    )
    if run["live"]:
        outputs = dict.fromkeys(str(result.get("output") or "").strip() for result in compiled)
        passed += f" and ran: {', '.join(outputs)}"
    else:
        passed += f" (not applicable: running it, {run['why_not']})"
    return {"failures": verify_problems(plan, packages, facts, profile, compiled, link), "passed": passed}
