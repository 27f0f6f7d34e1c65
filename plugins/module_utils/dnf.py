# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a dnf install would do, resolved by dnf itself, without installing anything.

dnf's Python bindings exist only for the Python dnf runs on: RHEL 8's /usr/libexec/platform-python 3.6, which
ansible-core 2.17 and later cannot run modules on (ansible/ansible#82068), and RHEL 9's /usr/bin/python3. So the
module does not import dnf: it runs RESOLVE_SCRIPT (Python 3.6 syntax) with the first of DNF_PYTHONS that has dnf,
and reads the JSON it prints. dnf resolves as `dnf install` would (the node's dnf.conf, /etc/dnf/vars, its repository
files, the installed rpm database); nothing is downloaded but repository metadata, nothing installed.
"""

from __future__ import annotations

import json

from ansible_collections.gpuops.bringup.plugins.module_utils import parsing
from ansible_collections.gpuops.bringup.plugins.module_utils.command import C_LOCALE

# (name, directories searched besides PATH). RHEL 8's platform-python first: there python3, where installed, may be
# another Python without dnf.
DNF_PYTHONS = (("platform-python", ["/usr/libexec"]), ("python3", []))

# Exit codes of RESOLVE_SCRIPT besides 0 (resolved, or dnf's own refusal in "error").
NO_DNF = 3
# The script's result line starts with this: dnf and its plugins print to stdout too (a subscription-manager notice,
# "Updating Subscription Management repositories.", a plugin's deprecation warning), before and after it.
RESULT_PREFIX = "gpuops-dnf-resolution: "
_PACKAGE_KEYS = {"name": str, "version": str, "arch": str, "sourcerpm": str, "provides": list, "requires": list}

# sys.argv[1]: JSON {"specs": the package specs as `dnf install` takes them (name, name-version,
# name-epoch:version-release), "install_weak_deps": whether weak dependencies (Recommends) come along}.
RESOLVE_SCRIPT = r"""
import json, os, sys
try:
    import dnf
    import dnf.exceptions
    import dnf.transaction
except ImportError:
    sys.exit(3)

def describe(pkg):
    return {"name": pkg.name, "version": pkg.evr, "arch": pkg.arch, "sourcerpm": pkg.sourcerpm or "",
            "provides": [str(p) for p in pkg.provides], "requires": [str(r) for r in pkg.requires]}

request = json.loads(sys.argv[1])
result = {"error": None, "install": [], "remove": [], "versionlock": False}
base = dnf.Base()
try:
    base.conf.read()
    base.conf.substitutions.update_from_etc(base.conf.installroot)
    result["versionlock"] = any(os.path.exists(os.path.join(path, "versionlock.py"))
                                for path in base.conf.pluginpath)
    # The plugins `dnf install` runs too (versionlock's excludes, NVIDIA's kernel filter), in the CLI's order.
    base.init_plugins()
    base.pre_configure_plugins()
    base.read_all_repos()
    base.configure_plugins()
    base.conf.install_weak_deps = request["install_weak_deps"]
    base.fill_sack(load_system_repo=True)
    for spec in request["specs"]:
        base.install(spec)
    base.resolve(allow_erasing=False)
    forward = [item for item in base.transaction if item.action in dnf.transaction.FORWARD_ACTIONS]
    backward = [item for item in base.transaction if item.action in dnf.transaction.BACKWARD_ACTIONS]
    # A package leaving under the name of one coming is an upgrade (or downgrade, reinstall), not a removal.
    replaced = {item.pkg.name: item.pkg.evr for item in backward}
    for item in forward:
        entry = describe(item.pkg)
        entry["upgrade_from"] = replaced.get(item.pkg.name)
        result["install"].append(entry)
    coming = {item.pkg.name for item in forward}
    result["remove"] = [{"name": item.pkg.name, "version": item.pkg.evr}
                        for item in backward if item.pkg.name not in coming]
except dnf.exceptions.Error as error:
    result["error"] = str(error)
finally:
    base.close()
print("gpuops-dnf-resolution: " + json.dumps(result))
"""


def resolve(module, specs, install_weak_deps=False):
    """dnf's resolution of installing specs: {error, install: [...], remove: [...], versionlock}.

    install: name, version (dnf's evr), arch, sourcerpm, provides, requires, upgrade_from (the installed version it
    replaces, or None). error: dnf's message when it cannot resolve (a spec no repository carries, a conflict), else
    None. versionlock: whether dnf's versionlock plugin is installed. Fails the module when no Python on the node
    has dnf.
    """
    for name, where in DNF_PYTHONS:
        python = module.get_bin_path(name, opt_dirs=where)
        if python is None:
            continue
        rc, out, err = module.run_command(
            [python, "-c", RESOLVE_SCRIPT, json.dumps({"specs": list(specs), "install_weak_deps": install_weak_deps})],
            environ_update=C_LOCALE,
        )
        if rc == NO_DNF:
            continue
        if rc != 0:
            module.fail_json(msg=f"dnf's resolver ({python}) failed with return code {rc}: {(err or out)[-1500:]}")
        try:
            return parse_resolution(out)
        except parsing.ParseError as exc:
            module.fail_json(msg=f"dnf's resolver ({python}) printed no result: {exc}", stdout=out, stderr=err)
    tried = ", ".join(name for name, _where in DNF_PYTHONS)
    module.fail_json(msg=f"no Python with dnf's bindings on this host (tried {tried}): is dnf installed?")
    return None


def parse_resolution(out):
    """The resolution RESOLVE_SCRIPT printed, checked for its shape; ParseError when it printed none."""
    lines = [line for line in parsing.clean(out or "").splitlines() if line.startswith(RESULT_PREFIX)]
    if not lines:
        raise parsing.ParseError(f"no line starts with {RESULT_PREFIX.strip()!r}; output {parsing.excerpt(out)}")
    try:
        result = json.loads(lines[-1][len(RESULT_PREFIX) :])
    except (ValueError, RecursionError) as exc:
        raise parsing.ParseError(f"its result line is not JSON ({exc}): {parsing.excerpt(lines[-1])}") from None
    if not (
        isinstance(result, dict)
        and isinstance(result.get("error"), (str, type(None)))
        and isinstance(result.get("install"), list)
        and isinstance(result.get("remove"), list)
        and all(_is_package(p) for p in result["install"])
        and all(isinstance(p, dict) and isinstance(p.get("name"), str) for p in result["remove"])
    ):
        raise parsing.ParseError(f"its result has not the resolver's shape: {parsing.excerpt(lines[-1])}")
    return result


def _is_package(entry):
    return isinstance(entry, dict) and all(isinstance(entry.get(k), t) for k, t in _PACKAGE_KEYS.items())


def nothing():
    """resolve()'s result for installing nothing."""
    return {"error": None, "install": [], "remove": [], "versionlock": None}
