#!/usr/bin/python
# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: managed_paths
short_description: A stage's directories, links and small files, read and put right in one round trip
version_added: 0.1.0
description:
  - Reads every listed path once and changes only those that differ from their entry, in one module call. A stage's
    roots, links and configuration files would otherwise each be a task, and each item of a loop a module call of its
    own, on every run of every node.
  - Judges with C(module_utils/managed_paths.py) (unit-tested); check mode reports what would change, and C(--diff)
    shows each file's content before and after.
  - Files are written to a temporary file in the same directory, created with their mode, and renamed over the old
    one, so a reader never sees half a file and a secret is never world-readable, not even for a moment.
author: gpuops.bringup developers (@gpuops)
options:
  paths:
    description:
      - The entries, each C(path) (absolute) and C(state) - C(directory) (with C(mode); parents are created 0755),
        C(link) (with C(src), the target as the link should read), C(file) (with C(content) and C(mode)) or C(absent)
        (a directory goes with everything in it).
      - A link whose target does not exist is refused. Check mode, which changes nothing, does not look, since the
        packages that bring the target may still be to come. An entry never replaces a directory with a link or a
        file, nor a file with a directory or a link.
    type: list
    elements: dict
    required: true
  owner:
    description: The owner of every directory, file and link.
    type: str
    default: root
  group:
    description: The group of every directory, file and link.
    type: str
    default: root
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - gpuops.bringup.attributes.changes
"""

EXAMPLES = r"""
- name: Lay out a CUDA root
  gpuops.bringup.managed_paths:
    paths:
      - {path: /usr/local/cuda-12.4, state: directory, mode: "0755"}
      - {path: /usr/local/cuda-12.4/include, state: link, src: /usr/include}
      - path: /usr/local/cuda-12.4/bin/nvcc
        state: file
        mode: "0755"
        content: "#!/bin/sh\nexec /usr/bin/nvcc \"$@\"\n"
      - {path: /usr/local/cuda-11.8, state: absent}
"""

RETURN = r"""
changed_paths:
  description: The paths this run changed (or would, in check mode), each with what differed.
  returned: always
  type: dict
  sample: {"/usr/local/cuda-12.4/bin/nvcc": ["content differs"]}
"""

import grp
import os
import pwd
import shutil
import stat

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpuops.bringup.plugins.module_utils import managed_paths


def observe(path, want_content):
    """What the node has at the path, as managed_paths.differences reads it."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return {"type": "absent"}
    seen = {"mode": stat.S_IMODE(info.st_mode), "uid": info.st_uid, "gid": info.st_gid}
    if stat.S_ISLNK(info.st_mode):
        seen.update(type="link", target=os.readlink(path))
    elif stat.S_ISDIR(info.st_mode):
        seen["type"] = "directory"
    elif stat.S_ISREG(info.st_mode):
        seen["type"] = "file"
        if want_content and info.st_size <= managed_paths.MAX_CONTENT:
            with open(path, "rb") as handle:
                seen["content"] = handle.read()
    else:
        seen["type"] = "other"
    return seen


def apply(entry, seen, uid, gid):
    """Put the path right; raises OSError or ValueError with what stood in the way."""
    path, state = entry["path"], entry["state"]
    kind = seen["type"]
    if state == "absent":
        if kind == "directory":
            shutil.rmtree(path)
        else:
            os.unlink(path)
        return
    # A directory is never replaced, nor replaces anything but a directory; a file is never replaced by a link (a
    # link at a file's path is written over).
    if kind != "absent" and (kind == "directory") != (state == "directory"):
        raise ValueError(f"a {kind} is in the way of the {state}: remove it, or name another path")
    if kind == "file" and state == "link":
        raise ValueError("a file is in the way of the link: remove it, or name another path")
    parent = os.path.dirname(path.rstrip("/"))
    os.makedirs(parent, mode=0o755, exist_ok=True)
    if state == "directory":
        if kind == "absent":
            os.mkdir(path, int(entry.get("mode") or "0755", 8))
        os.chmod(path, int(entry.get("mode") or "0755", 8))
        os.chown(path, uid, gid)
        return
    temporary = os.path.join(parent, f".{os.path.basename(path)}.gpuops-{os.getpid()}")
    try:
        if state == "link":
            if not os.path.exists(os.path.join(parent, entry["src"])):
                raise ValueError("its target {} does not exist".format(entry["src"]))
            os.symlink(entry["src"], temporary)
            os.lchown(temporary, uid, gid)
        else:
            descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, int(entry.get("mode") or "0644", 8))
            with os.fdopen(descriptor, "wb") as handle:
                os.fchown(handle.fileno(), uid, gid)
                # The umask may have narrowed the mode given at creation.
                os.fchmod(handle.fileno(), int(entry.get("mode") or "0644", 8))
                handle.write(entry["content"].encode("utf-8", "surrogateescape"))
                handle.flush()
                os.fsync(handle.fileno())
        os.rename(temporary, path)
    finally:
        if os.path.lexists(temporary):
            os.unlink(temporary)


def file_diff(entry, seen):
    before = seen.get("content", b"") if seen["type"] == "file" else b""
    after = entry["content"].encode("utf-8", "surrogateescape") if entry["state"] == "file" else b""
    return {
        "before_header": entry["path"],
        "after_header": entry["path"],
        "before": before.decode("utf-8", "replace"),
        "after": after.decode("utf-8", "replace"),
    }


def main():
    module = AnsibleModule(
        argument_spec={
            "paths": {"type": "list", "elements": "dict", "required": True},
            "owner": {"type": "str", "default": "root"},
            "group": {"type": "str", "default": "root"},
        },
        supports_check_mode=True,
    )
    entries = module.params["paths"]
    problems = managed_paths.entry_problems(entries)
    if problems:
        module.fail_json(msg="managed_paths: " + "; ".join(problems), changed_paths={})
    owner, group = module.params["owner"], module.params["group"]
    try:
        uid = int(owner) if owner.isdigit() else pwd.getpwnam(owner).pw_uid
    except KeyError:
        module.fail_json(msg=f"managed_paths: owner {owner} is no user on this node", changed_paths={})
    try:
        gid = int(group) if group.isdigit() else grp.getgrnam(group).gr_gid
    except KeyError:
        module.fail_json(msg=f"managed_paths: group {group} is no group on this node", changed_paths={})
    changed = {}
    diffs = []
    for entry in entries:
        seen = observe(entry["path"], entry["state"] == "file")
        found = managed_paths.differences(entry, seen, uid, gid)
        if not found:
            continue
        changed[entry["path"]] = found
        if "file" in (entry["state"], seen["type"]):
            diffs.append(file_diff(entry, seen))
        if module.check_mode:
            continue
        try:
            apply(entry, seen, uid, gid)
        except (OSError, ValueError) as error:
            del changed[entry["path"]]
            module.fail_json(
                msg="managed_paths: {} ({}): {}".format(entry["path"], ", ".join(found), error),
                changed=bool(changed),
                changed_paths=changed,
            )
    module.exit_json(changed=bool(changed), changed_paths=changed, diff=diffs)


if __name__ == "__main__":
    main()
