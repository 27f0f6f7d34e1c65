# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The NVIDIA driver role's preflight: every problem of a node at once, in two judgments.

preflight() judges what is known before any package source is read: the role's variables, the node's OS release
(os_facts), its GPUs and NVSwitches (pci_facts) and the controller's files (the drain hooks, the kubeconfig). It
resolves the branch, its package table, the kernel module flavour, and whether and where the node needs NVIDIA's CUDA
repository: what preflight reads next. packages_preflight() judges what those reads found (package_info,
nvidia_driver_facts, repository_index): the repository's key, the package plan at exact versions with fabric manager's
and DCGM's packages, the kernels DKMS builds for, what installed stands in the way, and the name a Kubernetes drain
uses; it works out the reboot contract and the upgrade. A check whose input another problem leaves meaningless does not
run then, so that each message is a problem of its own. The decisions themselves are driver_plan's.
"""

from __future__ import annotations

import re

from ansible_collections.gpuops.bringup.plugins.module_utils import driver_plan, repositories, variables

_BRANCH = re.compile(r"(?:[0-9]{3})?")
_VERSION = re.compile(r"(?:[0-9]{3}[.][0-9]+(?:[.][0-9]+)?)?")
NVIDIA_REPOSITORIES = "https://developer.download.nvidia.com/compute/cuda/repos/"
# Per source, how messages name it and the releases it serves (the releases themselves are the role's
# __nvidia_driver_supported, which tests/unit/test_role_platforms.py holds to meta/main.yml), and the fix for a node it
# does not serve.
SOURCES = {
    "distribution": (
        "the OS's own packages, which this collection supports on Debian 12 and 13 (their non-free NVIDIA packages)",
        "Fix: a supported release, or nvidia_driver_source: cuda_repo (NVIDIA's CUDA repository, for Debian 12, Ubuntu "
        "22.04/24.04, Rocky Linux and RHEL 8/9).",
    ),
    "cuda_repo": (
        "NVIDIA's CUDA network repository, which this collection supports on Debian 12, Ubuntu 22.04 and 24.04, and "
        "Rocky Linux and RHEL 8 and 9",
        "Fix: a supported release, or nvidia_driver_source: distribution on Debian 12 and 13.",
    ),
}
# Why a release NVIDIA has a repository for is not served by the source, and what to do instead: in place of the fix.
UNSUPPORTED_NOTES = {
    ("cuda_repo", "debian", "13"): (
        "NVIDIA's debian13 repository carries driver branches 580 and later only, signed by another key (8793F200) "
        "that this collection does not pin yet. Fix: nvidia_driver_source: distribution (Debian 13's 535 and 550 "
        "packages, fabric manager from NVIDIA's debian12 repository)."
    ),
}
KEY_FIX = "point nvidia_driver_cuda_repo_key_url (gpuops_mirror_url for a mirror) at NVIDIA's key, or correct the pins."


def _flag(value):
    """Ansible's | bool for what the variables' grammar lets through: a boolean, or one of its words."""
    return str(value).strip().lower() in variables.TRUE_WORDS


def _version_problems(branch, version):
    """The branch and the version pin: their form, then, each well formed, whether they agree."""
    problems = []
    if not _BRANCH.fullmatch(branch):
        problems.append(
            f'nvidia_driver_branch is "{branch}", not a driver branch. Fix: the branch number as a string, e.g. '
            'nvidia_driver_branch: "535", or "" for the source\'s default.'
        )
    if not _VERSION.fullmatch(version):
        problems.append(
            f'nvidia_driver_version is "{version}", not an NVIDIA driver version. Fix: the full version, e.g. '
            'nvidia_driver_version: "535.274.02", or "" for the newest of the branch.'
        )
    elif version and not branch:
        problems.append(
            f'nvidia_driver_version is "{version}" but nvidia_driver_branch is empty: a version pin needs its branch, '
            f'so that both are reviewed together. Fix: nvidia_driver_branch: "{version.split(".")[0]}" with '
            f'nvidia_driver_version: "{version}".'
        )
    elif version and _BRANCH.fullmatch(branch) and version.split(".")[0] != branch:
        problems.append(
            f'nvidia_driver_version {version} is not of branch {branch} (nvidia_driver_branch: "{branch}"). Fix: '
            f'nvidia_driver_branch: "{version.split(".")[0]}" for that version, or a {branch} version '
            f'(nvidia_driver_version: "" for the newest).'
        )
    return problems


def _drain_problems(values, hook_files):
    """A hook drain without its hook, and hooks that are no task file on the controller (hook_files: those that
    are, absolute paths: include_tasks and the check would resolve a relative one differently)."""
    problems = []
    if values.get("nvidia_driver_drain") == "hook" and not values.get("nvidia_driver_drain_hook"):
        problems.append(
            "nvidia_driver_drain is hook but nvidia_driver_drain_hook is empty. Fix: nvidia_driver_drain_hook: the "
            "path of a task file on the controller that takes the node out of service (and "
            "nvidia_driver_undrain_hook: the one that returns it), or nvidia_driver_drain: auto."
        )
    for name in ("nvidia_driver_drain_hook", "nvidia_driver_undrain_hook"):
        hook = values.get(name) or ""
        if hook and hook not in hook_files:
            problems.append(
                f'{name} is "{hook}", which is no task file on the controller (an absolute path is needed). Fix: the '
                f'absolute path of a task file, e.g. {name}: "{{{{ playbook_dir }}}}/hooks/drain.yml", or "" for none.'
            )
    return problems


def _branch_problem(branch, table, where, source):
    """The branch the source does not carry on this OS, with those it does."""
    offered = sorted(table)
    other = (
        ", or nvidia_driver_source: cuda_repo for NVIDIA's other branches (Debian 12, Ubuntu, Rocky Linux, RHEL)"
        if source == "distribution"
        else ""
    )
    return (
        f'nvidia_driver_branch is "{branch}", which {where} (nvidia_driver_source: {source}) do not carry: they carry '
        f"{'branch' if len(offered) == 1 else 'branches'} {', '.join(offered)}. Fix: nvidia_driver_branch: "
        f'"{offered[-1]}" (or "" for the default){other}.'
    )


def _describe_pci(gpus):
    if not gpus:
        return "no NVIDIA GPU either"
    products = []
    for gpu in gpus:
        product = gpu.get("product") or "unknown"
        if product not in products:
            products.append(product)
    return f"{len(gpus)} NVIDIA GPU(s): {', '.join(products)}"


def _repository(values, manager, data):
    """NVIDIA's CUDA repository for the node: {url, key_url, pins (the pins' prefix: NVIDIA signs its RHEL
    repositories with another key than its Debian and Ubuntu ones), fingerprint, sha256}."""
    url = values.get("nvidia_driver_cuda_repo_url") or f"{NVIDIA_REPOSITORIES}{data['cuda_repo_os']}/x86_64/"
    pins = f"nvidia_driver_cuda_repo_{'rpm_' if manager == 'dnf' else ''}key"
    return {
        "url": url,
        "key_url": values.get("nvidia_driver_cuda_repo_key_url") or url + data["cuda_repo_key"]["file"],
        "pins": pins,
        "fingerprint": values.get(f"{pins}_fingerprint") or "",
        "sha256": values.get(f"{pins}_sha256") or "",
    }


def _fabricmanager(host, values, pci):
    """{needed, why (for messages), problem}: whether the node gets fabric manager, and the problem of one forced on a
    node without NVSwitches. HGX B200 and later boards do not show their NVSwitches on the host's PCI bus: the hardware
    profile's gpu.nvswitch speaks for them, and so does a Blackwell GPU for a forced fabric manager."""
    gpus = pci.get("gpus") or []
    nvswitches = pci.get("nvswitches") or []
    hardware = values.get("gpuops_hardware") or {}
    in_profile = _flag((hardware.get("gpu") or {}).get("nvswitch"))
    requested = values.get("nvidia_driver_fabricmanager")
    forced = requested != "auto" and _flag(requested)
    if forced and not (nvswitches or in_profile or any(g.get("architecture") == "blackwell" for g in gpus)):
        profile = (
            f"its hardware profile {hardware.get('profile') or ''} says gpu.nvswitch: false"
            if hardware
            else "no hardware profile (gpuops_hardware) says otherwise"
        )
        # Refused: no reason either to need NVIDIA's repository for it.
        return {
            "needed": False,
            "why": "",
            "problem": (
                f"nvidia_driver_fabricmanager is true but {host} has no NVSwitch: none on its PCI bus "
                f"({_describe_pci(gpus)}), and {profile}. Fabric manager serves NVSwitch systems only (HGX, DGX); on "
                "a PCIe node its service fails to start. Fix: nvidia_driver_fabricmanager: auto (or false)."
            ),
        }
    needed = forced or (requested == "auto" and bool(nvswitches or in_profile))
    if nvswitches:
        seen = f"{len(nvswitches)} NVSwitch(es) on the PCI bus"
    elif in_profile:
        seen = f"hardware profile {hardware.get('profile') or ''} with gpu.nvswitch: true"
    else:
        seen = "Blackwell GPUs on the PCI bus"
    why = f"nvidia_driver_fabricmanager is {'true' if forced else requested}, {seen}" if needed else ""
    return {"needed": needed, "why": why, "problem": None}


def _key_pin_problem(host, repository, manager, key, why, instead):
    """The problem of NVIDIA's CUDA repository, which the node needs (why), without its key pinned (or with a pin
    that is none): no repository is trusted without. key: NVIDIA's key for it ({file, fingerprint}), the fix;
    instead: the alternative the fix offers."""
    found = repositories.repository_problems(
        {"name": "nvidia-cuda", "uris": [repository["url"]], "suites": ["/"], "key_url": repository["key_url"],
         "key_fingerprint": repository["fingerprint"], "key_sha256": repository["sha256"]},
        manager,
    )  # fmt: skip
    if not found:
        return None
    pins = repository["pins"]
    reasons = "; ".join(found)
    return (
        f"{host} needs NVIDIA's CUDA repository ({why}), but its {reasons}: no repository is trusted without its key "
        "pinned. "
        f"Fix: {pins}_fingerprint: {key['fingerprint']} (NVIDIA's key {key['file'].replace('.pub', '')}, the role's "
        f'default), with {pins}_sha256 the sha256sum of the key file or ""{instead}.'
    )


def preflight(*, host, node, pci, values, controller, data):
    """{problems, ...what preflight reads and installs by} of one node before its package sources are read.

    node: os_facts' gpuops_os; pci: pci_facts' pci; values: the role's variables (nvidia_driver_*) and gpuops_hardware;
    controller: {hook_files: the hooks that are task files on the controller, kubeconfig_problem: kubeconfig_check's
    problem or None}; data: the role's data for the node's OS: {supported (source -> os-release ID -> majors), tables
    (source -> its branch table, {} where the OS has none), cuda_repo_os (NVIDIA's name of the OS's repository),
    cuda_repo_key ({file, fingerprint}: NVIDIA's key for it)}.

    Returns problems and: manager; branch (the source's default when nvidia_driver_branch is empty), table (the
    source's branches), where (how messages name the source), known (<source>/<branch> -> entry, every source's
    branches on this OS); flavor (driver_plan.choose_flavor's result); fabricmanager_needed, dcgm_needed,
    cuda_repo_needed; repository (NVIDIA's CUDA repository: url, key_url, pins, fingerprint, sha256); and
    fabricmanager_names (fabric manager's packages under both names: which one the branch uses is decided once the
    plan is).
    """
    problems = []
    source = values.get("nvidia_driver_source")
    branch_value = str(values.get("nvidia_driver_branch") or "")
    problems += _version_problems(branch_value, str(values.get("nvidia_driver_version") or ""))
    problems += _drain_problems(values, controller.get("hook_files") or [])
    if controller.get("kubeconfig_problem"):
        problems.append(controller["kubeconfig_problem"])

    release = node.get("os") or {}
    manager = release.get("package_manager")
    served = release.get("major") in ((data["supported"].get(source) or {}).get(release.get("id")) or ())
    if not served:
        what, fix = SOURCES[source]
        note = UNSUPPORTED_NOTES.get((source, release.get("id"), release.get("major")))
        problems.append(
            f"nvidia_driver_source is {source}: {what}; {host} runs {release.get('name') or 'an unknown OS'} "
            f"(ID={release.get('id')}, VERSION_ID={release.get('version_id')}). {note or fix}"
        )
    tables = data.get("tables") or {}
    known = {f"{name}/{b}": entry for name in data["supported"]
             for b, entry in ((tables.get(name) or {}).get("branches") or {}).items()}  # fmt: skip
    table_of_source = tables.get(source) or {}
    table = table_of_source.get("branches") or {}
    where = table_of_source.get("where") or ""
    branch = branch_value or table_of_source.get("default_branch") or ""

    flavor = None
    if served and _BRANCH.fullmatch(branch_value):
        if branch in table:
            flavor = driver_plan.choose_flavor(pci, values.get("nvidia_driver_flavor"), branch, table, where)
            if flavor["problem"]:
                problems.append(f"{host}: {flavor['problem']}")
        else:
            problems.append(_branch_problem(branch, table, where, source))

    fabricmanager = _fabricmanager(host, values, pci)
    if fabricmanager["problem"]:
        problems.append(fabricmanager["problem"])
    dcgm = _flag(values.get("nvidia_driver_dcgm"))
    needed = source == "cuda_repo" or fabricmanager["needed"] or dcgm
    repository = _repository(values, manager, data) if served else None
    if repository and needed:
        if source == "cuda_repo":
            why, instead = "the driver: nvidia_driver_source is cuda_repo", ""
        elif fabricmanager["needed"]:
            why = f"fabric manager: {fabricmanager['why']}"
            instead = "; or nvidia_driver_fabricmanager: false to install the driver alone on purpose"
        else:
            why, instead = "DCGM: nvidia_driver_dcgm is true", "; or nvidia_driver_dcgm: false"
        problem = _key_pin_problem(host, repository, manager, data["cuda_repo_key"], why, instead)
        if problem:
            problems.append(problem)

    return {
        "problems": problems,
        "manager": manager,
        "branch": branch,
        "table": table,
        "where": where,
        "known": known,
        "flavor": flavor,
        "fabricmanager_needed": fabricmanager["needed"],
        "dcgm_needed": dcgm,
        "cuda_repo_needed": needed,
        "repository": repository,
        "fabricmanager_names": [
            f"nvidia-fabricmanager-{branch}" if manager == "apt" else "nvidia-fabric-manager",
            "nvidia-fabricmanager",
        ],
    }


def _repository_where(url, mirror):
    """How messages name NVIDIA's CUDA repository: the mirror's copy where gpuops_mirror_url is set."""
    if mirror:
        return f"the mirror's copy of NVIDIA's CUDA repository ({repositories.mirrored(url, mirror)})"
    return f"NVIDIA's CUDA repository ({url})"


def _join(plan, step, packages, manager):
    """plan with packages (name -> version) added to its packages and, as install specs, to its steps[step]:
    installed after the driver, held, verified and rolled back with it."""
    join = driver_plan.SPEC_JOINS[manager]
    return {
        **plan,
        "packages": {**plan["packages"], **packages},
        "steps": {**plan["steps"], step: [f"{name}{join}{version}" for name, version in packages.items()]},
    }


def packages_preflight(*, host, node, pci, driver, packages, index, resolved, values, data):
    """{problems, ...the plan and what installing it takes} of one node from what its package sources carry and what
    it has installed and loaded.

    node: os_facts' gpuops_os; pci: pci_facts' pci; driver: nvidia_driver_facts' nvidia_driver; packages:
    package_info's packages; index: repository_index's result (read where resolved says the node needs NVIDIA's
    repository); resolved: preflight()'s result, without problems; values: the role's variables (nvidia_driver_*) and
    gpuops_mirror_url; data: {persistenced_package, kubelet_unit, persistenced_unit, daemon_units: the units of the
    daemons this node runs}.

    Returns problems and: plan (driver_plan.choose_packages' plan with fabric manager's and DCGM's packages joined),
    fabricmanager and dcgm (choose_fabricmanager's and choose_dcgm's results, None where not needed), kernels
    (kernel_targets' result), obstacles (install_problems' result), packages_pending (packages_pending()' answer:
    whether the install's package steps have anything to do), reboot (reboot_plan's result), reboot_reasons (its
    reasons where it requires a reboot, else empty: the reboot contract's gate reads them), upgrade ({from, to} or
    None), drain_mode (kubernetes, hook or none) and daemons (daemon_steps' result: what configure does to the
    daemons' units).
    """
    problems = []
    manager = resolved["manager"]
    branch = resolved["branch"]
    flavor = resolved["flavor"]["flavor"]
    source = values.get("nvidia_driver_source")
    repository = resolved["repository"]
    mirror = values.get("gpuops_mirror_url") or ""
    # Nothing NVIDIA's repository's index says counts when its key is not the pinned one.
    carried = None
    if resolved["cuda_repo_needed"]:
        key = repositories.key_problem(
            host=host,
            index=index,
            pins=repository["pins"],
            fingerprint=repository["fingerprint"],
            sha256=repository["sha256"],
            fix=KEY_FIX,
        )
        if key:
            problems.append(key)
        else:
            carried = index.get("packages") or {}

    # From NVIDIA's repository, the driver's packages at the versions it carries only (Debian carries some of the
    # same names), nvidia-persistenced in the set: NVIDIA versions it with the driver. From the distribution,
    # nvidia-persistenced is versioned apart and pinned on its own.
    plan = fabricmanager = dcgm = None
    from_repo = source == "cuda_repo"
    if not from_repo or carried is not None:
        where = resolved["where"]
        if from_repo:
            where += f" ({repositories.mirrored(repository['url'], mirror)})"
        persistenced = _flag(values.get("nvidia_driver_persistenced")) and not from_repo
        plan = driver_plan.choose_packages(
            resolved["table"][branch],
            flavor,
            str(values.get("nvidia_driver_version") or ""),
            driver_plan.repository_info(packages, carried, manager) if from_repo else packages,
            [data["persistenced_package"]] if persistenced else [],
            where,
            branch,
            manager,
        )
        if plan["problem"]:
            problems.append(f"{host}: {plan['problem']}")
            plan = None
    repository_where = _repository_where(repository["url"], mirror) if carried is not None else ""
    if plan and carried is not None and resolved["fabricmanager_needed"]:
        fabricmanager = driver_plan.choose_fabricmanager(carried, packages, plan, branch, repository_where, manager)
        if fabricmanager["problem"]:
            problems.append(f"{host}: {fabricmanager['problem']}")
        else:
            plan = _join(plan, "fabricmanager", {fabricmanager["package"]: fabricmanager["version"]}, manager)
    if plan and carried is not None and resolved["dcgm_needed"]:
        architectures = [gpu["architecture"] for gpu in pci.get("gpus") or [] if gpu.get("architecture")]
        dcgm = driver_plan.choose_dcgm(
            carried, packages, plan, str(values.get("nvidia_driver_dcgm_version")), architectures, repository_where,
            manager,
        )  # fmt: skip
        if dcgm["problem"]:
            problems.append(f"{host}: {dcgm['problem']}")
        else:
            plan = _join(plan, "dcgm", dcgm["packages"], manager)

    # NVIDIA's kmod-nvidia-*-dkms rpms require dkms, which RHEL does not carry: EPEL does. Without it dnf would refuse
    # the kernel module package after the headers were installed.
    dkms = packages.get("dkms") or {}
    if manager == "dnf" and dkms.get("installed") is None and dkms.get("candidate") is None:
        kmods = [track["kernel_modules"][flavor]["package"] for track in resolved["table"][branch]["tracks"]
                 if flavor in track["kernel_modules"]]  # fmt: skip
        problems.append(
            f"{host}: NVIDIA's {', '.join(kmods)} requires dkms, which is not installed and which none of the node's "
            "repositories carries (RHEL and Rocky Linux do not: EPEL does). Fix: add EPEL "
            "(os_baseline_package_repositories in stage 1, pinned with its key, or the offline mirror's copy), or "
            "install dkms; then run again."
        )

    kernels = driver_plan.kernel_targets(node, packages, driver.get("kernels") or {}, manager)
    if kernels["problem"]:
        problems.append(f"{host}: {kernels['problem']}")
    obstacles = driver_plan.install_problems(
        resolved["known"],
        packages,
        plan,
        (node.get("packages") or {}).get("broken") or [],
        [data["persistenced_package"]],
        bool((driver.get("runfile") or {}).get("installed")),
        manager,
    )
    if obstacles["problem"]:
        problems.append(f"{host}: {obstacles['problem']}")

    # Upgrade path: another driver installed or loaded than the plan. How the node leaves service for it is decided,
    # and checked, here.
    reboot = upgrade = None
    if plan:
        reboot = driver_plan.reboot_plan(node, pci, driver.get("loaded") or {}, plan, flavor, kernels["targets"])
        installed = (obstacles["upgrade"] or {}).get("from")
        loaded = f"module {reboot['unload']} loaded" if reboot["unload"] else ""
        old = "; ".join(part for part in (installed, loaded) if part)
        if old:
            upgrade = {"from": old, "to": f"{plan['version']} ({plan['kmod_package']} {plan['package_version']})"}
    drain = values.get("nvidia_driver_drain")
    if drain == "auto":
        units = node.get("units") or {}
        kubelet = (units.get(data["kubelet_unit"]) or {}).get("exists")
        drain = "kubernetes" if kubelet else "hook" if values.get("nvidia_driver_drain_hook") else "none"
    if upgrade and drain == "kubernetes":
        found = variables.variable_problems(
            {"nvidia_driver_kubernetes_node_name": values.get("nvidia_driver_kubernetes_node_name")}, where_used=True
        )
        if found:
            problems.append(f"{host}: {' '.join(found)}")
    pending = bool(plan) and driver_plan.packages_pending(
        plan, kernels, packages, driver.get("dkms") or [], manager, bool(upgrade or obstacles["purge"])
    )
    daemons = driver_plan.daemon_steps(
        node.get("units") or {},
        data["daemon_units"],
        data["persistenced_unit"],
        bool(reboot and reboot["live"]),
        pending or bool(upgrade),
    )
    return {
        "problems": problems,
        "plan": plan,
        "packages_pending": pending,
        "daemons": daemons,
        "fabricmanager": fabricmanager,
        "dcgm": dcgm,
        "kernels": kernels,
        "obstacles": obstacles,
        "reboot": reboot,
        # For the reboot contract's gate (the decide action): why installing the driver needs a reboot.
        "reboot_reasons": list(reboot["reasons"]) if reboot and reboot["required"] else [],
        "upgrade": upgrade,
        "drain_mode": drain,
    }
