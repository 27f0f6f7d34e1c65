# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""RPM versions and what rpm and dnf print about packages: the dnf side of apt.py."""

from __future__ import annotations

import re

from ansible_collections.gpuops.bringup.plugins.module_utils import parsing

# dnf repoquery's --qf: one line per package version (dnf ends each with a newline itself). %{evr} leaves out an
# epoch of 0, as dnf names versions everywhere else ("12.4.1-1", "3:550.163.01-1.el9").
REPOQUERY_FORMAT = "%{name}\t%{evr}"
# rpm -q's --qf for installed packages; rpm prints "(none)" for a package built without an epoch.
RPM_QUERY_FORMAT = "%{NAME}\t%{EPOCH}:%{VERSION}-%{RELEASE}\n"

# Where dnf's versionlock plugin keeps its locks (RHEL 8/9, and Debian's dnf).
VERSIONLOCK_LIST = "/etc/dnf/plugins/versionlock.list"

_SEGMENT = re.compile(r"~|\^|[0-9]+|[A-Za-z]+")


def _vercmp(a, b):
    """rpmvercmp(): -1, 0 or 1 for two version (or release) strings, as rpm orders them.

    Runs of digits compare as numbers, runs of letters as strings, a number sorts after letters; "~" sorts before
    anything, even the end (1.0~rc1 < 1.0); "^" after the end but before anything else (1.0 < 1.0^git1 < 1.0.1).
    Other characters only separate segments.
    """
    xs, ys = _SEGMENT.findall(a), _SEGMENT.findall(b)
    for index in range(max(len(xs), len(ys))):
        x = xs[index] if index < len(xs) else None
        y = ys[index] if index < len(ys) else None
        if "~" in (x, y):
            if x != y:
                return 1 if y == "~" else -1
            continue
        if "^" in (x, y):
            if x != y:
                # The end sorts before "^", "^" before any segment.
                return -1 if x is None or (y is not None and y != "^") else 1
            continue
        if x is None or y is None:
            return -1 if x is None else 1
        if x.isdigit() != y.isdigit():
            return 1 if x.isdigit() else -1
        if x.isdigit():
            # As numbers, without int(): a run of thousands of digits is no number int() takes.
            x, y = _digits(x), _digits(y)
        if x != y:
            return -1 if x < y else 1
    return 0


def _digits(run):
    """A run of ASCII digits as a key that orders as its number: (length without leading zeros, the digits)."""
    significant = run.lstrip("0")
    return (len(significant), significant)


def _segment_key(text):
    """_vercmp's order as a sort key: each segment ranked ~ < end < ^ < letters < digits, ended by the end's rank."""
    key = []
    for segment in _SEGMENT.findall(text):
        if segment == "~":
            key.append((0,))
        elif segment == "^":
            key.append((2,))
        elif segment.isdigit():
            key.append((4, _digits(segment)))
        else:
            key.append((3, segment))
    key.append((1,))
    return key


def version_key(text):
    """A sort key in rpm's order of EVRs (sorted(evrs, key=version_key) as compare_versions orders them): sorting a
    long list with the comparison itself took minutes."""
    epoch, version, release = split_evr(text)
    return (epoch, _segment_key(version), _segment_key(release))


def split_evr(text):
    """(epoch, version, release) of "[EPOCH:]VERSION[-RELEASE]"; an absent, "(none)" or unreadable epoch is 0."""
    epoch, sep, rest = str(text).partition(":")
    if not sep:
        epoch, rest = "0", epoch
    version, _sep, release = rest.rpartition("-") if "-" in rest else (rest, "", "")
    return (parsing.to_int(epoch) if parsing.is_digits(epoch) else None) or 0, version, release


def upstream_version(text):
    """The VERSION of an EVR, without epoch and release: 3:550.163.01-1.el9 -> 550.163.01 (apt.upstream_version's
    counterpart)."""
    return split_evr(text)[1]


def compare_versions(a, b):
    """-1, 0 or 1 as EVR a sorts before, equal to or after b (rpm's order: epoch, version, then release)."""
    ea, va, ra = split_evr(a)
    eb, vb, rb = split_evr(b)
    if ea != eb:
        return -1 if ea < eb else 1
    return _vercmp(va, vb) or _vercmp(ra, rb)


def newest(versions):
    """The newest of EVRs by rpm's order, or None for none."""
    return max(versions, key=version_key, default=None)


def parse_repoquery(text, names):
    """{name: [EVRs, oldest first]} for each of names from `dnf repoquery --qf REPOQUERY_FORMAT` (empty: none)."""
    wanted = {name: {} for name in names}
    for line in parsing.bounded(text)[0].splitlines():
        name, sep, evr = line.strip().partition("\t")
        if sep and name in wanted:
            wanted[name][evr] = None
    return {name: sorted(evrs, key=version_key) for name, evrs in wanted.items()}


def parse_installed(text):
    """{name: EVR} from `rpm -q --qf RPM_QUERY_FORMAT ...`, epoch 0 left out as dnf does.

    rpm prints "package NAME is not installed" (or "no package provides ...") on stdout for what it lacks: no tab, so
    no entry. Of an
    install-only package (kernel) installed twice, the newest.
    """
    installed = {}
    for line in parsing.bounded(text)[0].splitlines():
        fields = line.split("\t")
        if len(fields) != 2:
            continue
        name, evr = fields
        epoch, _sep, rest = evr.partition(":")
        evr = rest if epoch in ("0", "(none)") else evr
        if name not in installed or compare_versions(evr, installed[name]) > 0:
            installed[name] = evr
    return installed


def parse_versionlock(text):
    """Names locked in dnf's versionlock.list (entries like kernel-core-0:5.14.0-427.el9.*)."""
    names = set()
    for line in parsing.bounded(text)[0].splitlines():
        line = line.strip()
        if not line or line.startswith(("#", "!")):
            continue
        # NAME-[EPOCH:]VERSION-RELEASE.ARCH: the name ends before the version's dash.
        match = re.match(r"^(.+?)-(\d+:)?[^-]+-[^-]+$", line)
        if match:
            names.add(match.group(1))
    return sorted(names)


def locked_names():
    """The names dnf's versionlock holds (none without the file: nothing was ever locked)."""
    try:
        with open(VERSIONLOCK_LIST, encoding="utf-8") as handle:
            return set(parse_versionlock(handle.read()))
    except FileNotFoundError:
        return set()
