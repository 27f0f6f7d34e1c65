# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pure parsers and comparisons for apt: `apt-cache policy` output, Debian version strings, and which of the apt
module's names are still to install.

Text in, data out, no I/O. Python 3.8 compatible: shipped to nodes with
package_info, and imported on the controller by the driver and package filters.
"""

from __future__ import annotations

import re

from ansible_collections.gpuops.bringup.plugins.module_utils import parsing

DPKG_STATUS = "/var/lib/dpkg/status"

_PACKAGE = re.compile(r"^(?P<name>[a-z0-9][a-z0-9+.-]*)(?::[a-z0-9]+)?:$")
_FIELD = re.compile(r"^  (?P<key>Installed|Candidate): (?P<value>.+)$")
# A version line of the table: " *** 535.274.02-1~deb13u1 500" (installed) or "     6.12.118-1 500".
_VERSION = re.compile(r"^ (?P<mark>\*\*\*| {3}) (?P<version>\S+) (?P<priority>-?\d+)$")
# A source under a version line: "        500 http://deb.debian.org/debian trixie/non-free amd64 Packages".
_SOURCE = re.compile(r"^ {8}(?P<priority>-?\d+) (?P<source>.+)$")


def parse_apt_policy(text):
    """{name: {installed, candidate, versions}} from `apt-cache policy NAME...`.

    installed and candidate are null for "(none)"; versions lists the version
    table, newest first as apt prints it, each {version, installed, downloadable}
    (downloadable: some source other than dpkg's status file carries it). apt
    prints nothing for a name it does not know: such names are absent.
    """
    packages = {}
    current = None
    for line in parsing.bounded(text)[0].splitlines():
        match = _PACKAGE.match(line)
        if match:
            current = {"installed": None, "candidate": None, "versions": []}
            packages[match.group("name")] = current
            continue
        if current is None:
            continue
        match = _FIELD.match(line)
        if match:
            value = match.group("value").strip()
            current[match.group("key").lower()] = None if value == "(none)" else value
            continue
        match = _VERSION.match(line)
        if match:
            current["versions"].append(
                {"version": match.group("version"), "installed": match.group("mark") == "***", "downloadable": False}
            )
            continue
        match = _SOURCE.match(line)
        if match and current["versions"] and match.group("source").strip() != DPKG_STATUS:
            current["versions"][-1]["downloadable"] = True
    return packages


def upstream_version(version):
    """The upstream part of a Debian version: 535.274.02-1~deb13u1 -> 535.274.02, 1:2.3-4 -> 2.3."""
    text = str(version)
    if ":" in text.split("-", maxsplit=1)[0]:
        text = text.split(":", 1)[1]
    return text.rsplit("-", 1)[0] if "-" in text else text


def _order(char):
    """dpkg's character order in non-digit parts: ~ before everything, then the end, letters, then the rest."""
    if char == "~":
        return -1
    if char.isalpha():
        return ord(char)
    return ord(char) + 256


def _digit(char):
    """dpkg's isdigit(): ASCII digits only (str.isdigit() also takes '²' and '٣')."""
    return "0" <= char <= "9"


def _compare_part(a, b):
    """dpkg's verrevcmp for one part (upstream version or revision)."""
    i = j = 0
    while i < len(a) or j < len(b):
        first_diff = 0
        while (i < len(a) and not _digit(a[i])) or (j < len(b) and not _digit(b[j])):
            ac = _order(a[i]) if i < len(a) and not _digit(a[i]) else 0
            bc = _order(b[j]) if j < len(b) and not _digit(b[j]) else 0
            if ac != bc:
                return -1 if ac < bc else 1
            i += 1
            j += 1
        while i < len(a) and a[i] == "0":
            i += 1
        while j < len(b) and b[j] == "0":
            j += 1
        while i < len(a) and _digit(a[i]) and j < len(b) and _digit(b[j]):
            if not first_diff:
                first_diff = (a[i] > b[j]) - (a[i] < b[j])
            i += 1
            j += 1
        if i < len(a) and _digit(a[i]):
            return 1
        if j < len(b) and _digit(b[j]):
            return -1
        if first_diff:
            return first_diff
    return 0


def _split(version):
    text = str(version)
    epoch, sep, rest = text.partition(":")
    if not sep or not parsing.is_digits(epoch) or parsing.to_int(epoch) is None:
        epoch, rest = "0", text
    upstream, sep, revision = rest.rpartition("-")
    if not sep:
        upstream, revision = rest, ""
    return int(epoch), upstream, revision


def compare_versions(a, b):
    """-1, 0 or 1 as Debian version a sorts before, equal to or after b (dpkg --compare-versions)."""
    ea, ua, ra = _split(a)
    eb, ub, rb = _split(b)
    if ea != eb:
        return -1 if ea < eb else 1
    return _compare_part(ua, ub) or _compare_part(ra, rb)


def newest(versions):
    """The newest of Debian versions by dpkg's order, or None for none."""
    best = None
    for version in versions:
        if best is None or compare_versions(version, best) > 0:
            best = version
    return best


def parse_packages_index(text, names):
    """{name: [Debian versions]} for each of names in an apt Packages index (a flat repository's Packages file).

    Stanzas are separated by blank lines; only the Package and Version fields are read. A name the index lacks
    maps to an empty list.
    """
    wanted = {name: [] for name in names}
    package = version = None
    for line in [*parsing.bounded(text)[0].splitlines(), ""]:
        if not line.strip():
            if package in wanted and version and version not in wanted[package]:
                wanted[package].append(version)
            package = version = None
        elif line.startswith("Package:"):
            package = line.split(":", 1)[1].strip()
        elif line.startswith("Version:"):
            version = line.split(":", 1)[1].strip()
    return wanted


# An apt module name entry as the roles pass it: a package name, alone or with one exact version.
_SPEC = re.compile(r"^(?P<name>[a-z0-9][a-z0-9+.-]*)(?:=(?P<version>[A-Za-z0-9.+~:-]+))?$")


def pending(specs, packages):
    """The specs apt still has to install, in their order: the apt module's names ("name" or "name=version").

    packages: package_info's packages. A spec is done when dpkg has its package installed, not broken, and at exactly
    the version it names (the apt module compares the strings too). Not done: a name package_info did not read, and
    any other form apt takes (a wildcard, name:arch, name>=version): apt decides those.
    """
    left = []
    for spec in specs:
        match = _SPEC.match(spec)
        entry = (packages.get(match.group("name")) or {}) if match else {}
        installed = entry.get("installed")
        wanted = match.group("version") if match else None
        if not installed or entry.get("broken") or (wanted is not None and installed != wanted):
            left.append(spec)
    return left
