# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Argument checks the collection's filters share (controller side: they raise AnsibleFilterError)."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError


def mapping(value, what, name):
    """value when it is a mapping; otherwise an error naming the filter (gpuops.bringup.<name>) and the argument."""
    if not isinstance(value, dict):
        raise AnsibleFilterError(f"gpuops.bringup.{name} needs {what} (a mapping), got {type(value).__name__}")
    return value


def names(value, what, name):
    """value, a list, as plain strings; otherwise an error naming the filter (gpuops.bringup.<name>) and the
    argument: a string would otherwise be read a character at a time."""
    if not isinstance(value, list):
        raise AnsibleFilterError(f"gpuops.bringup.{name} needs {what} (a list), got {type(value).__name__}")
    return [str(item) for item in value]


def fields(value, what, name, keys):
    """The mapping's keys, each given (plain): a missing one would otherwise be read as an empty table or read; an
    error naming the filter (gpuops.bringup.<name>), the argument and the missing keys."""
    found = plain(mapping(value, what, name))
    missing = [key for key in keys if key not in found]
    if missing:
        raise AnsibleFilterError(f"gpuops.bringup.{name} needs {what} with {', '.join(missing)}")
    return {key: found[key] for key in keys}


def facts_of(hosts, hostvars, name):
    """The fact `name` of each host that has one (not null), in the hosts' order: what each node made of its own
    variables (play variables do not reach another node's hostvars)."""
    found = (plain(hostvars[h].get(name)) for h in hosts or [])
    return [f for f in found if f]


def plain(value):
    """value with Ansible's tagged str, dict and list subclasses (what templates hand filters) as plain ones, nested
    too: the checks compare types and run regular expressions on them."""
    if isinstance(value, str):
        return str(value)
    if isinstance(value, dict):
        return {plain(k): plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value
