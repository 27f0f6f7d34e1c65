#!/usr/bin/python
# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: dnf_module_stream
short_description: Enable one stream of a dnf module (RHEL 8 and 9), switching from another when one is enabled
version_added: 0.1.0
description:
  - Reads the module's state where dnf keeps it (C(/etc/dnf/modules.d/<name>.module)) and, unless O(stream) is the
    enabled one already, runs C(dnf module reset) when another stream is enabled (dnf refuses to enable a second
    one), then C(dnf module enable <name>:<stream>). The packages of an enabled stream are what dnf then installs and
    updates; those of the module's other streams it hides.
  - Check mode reports the change without running dnf.
  - Fails with dnf's words when it cannot enable the stream (no repository carries it); a stream reset for it stays
    reset.
author: gpuops.bringup developers (@gpuops)
options:
  name:
    description: The module's name (C(nvidia-driver)).
    type: str
    required: true
  stream:
    description: The stream to enable (C(550-dkms), C(570-open)).
    type: str
    required: true
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - gpuops.bringup.attributes.changes
notes:
  - Runs dnf with C(LANG=C). Enabling installs nothing; the module's profiles are left alone.
"""

EXAMPLES = r"""
- name: Take NVIDIA's driver from its 550 branch, proprietary kernel modules
  gpuops.bringup.dnf_module_stream:
    name: nvidia-driver
    stream: 550-dkms
"""

RETURN = r"""
before:
  description: The module's stream and state before (C(stream) null and C(state) null when dnf has no record of it).
  returned: always
  type: dict
  sample: {"stream": "535-dkms", "state": "enabled"}
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpuops.bringup.plugins.module_utils import parsing
from ansible_collections.gpuops.bringup.plugins.module_utils.command import ToolRunner

# Where dnf 4 keeps each module's enabled stream and state (libdnf's ModulePersistor).
MODULES_D = "/etc/dnf/modules.d"


def parse_module_state(text, name):
    """{stream, state} of module name from its modules.d file's text (INI, a section per module); nulls when the
    file has no section for it. state is dnf's word: enabled, disabled, or empty after a reset.

    Read line by line here: libdnf writes "[name]" and "key=value" lines only, and configparser's option pattern is
    quadratic on a line of blanks. ParseError for a line that is neither (or a file no libdnf writes).
    """
    sections = {}
    current = None
    text, cut = parsing.bounded(text, 1024 * 1024)
    if cut:
        raise parsing.ParseError("the file is larger than 1 MiB; libdnf writes a few lines per module")
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if not stripped or stripped[0] in "#;":
            continue
        if stripped.startswith("[") and stripped.endswith("]"):
            current = sections.setdefault(stripped[1:-1].strip(), {})
        elif current is not None and "=" in stripped:
            key, _sep, value = stripped.partition("=")
            current[key.strip().lower()] = value.strip()
        else:
            raise parsing.ParseError(
                f"line {number}, {parsing.excerpt(stripped, 80)}, is neither [section] nor key=value"
            )
    section = sections.get(name)
    if section is None:
        return {"stream": None, "state": None}
    return {"stream": section.get("stream") or None, "state": section.get("state") or None}


def main():
    module = AnsibleModule(
        argument_spec={
            "name": {"type": "str", "required": True},
            "stream": {"type": "str", "required": True},
        },
        supports_check_mode=True,
    )
    name, stream = module.params["name"], module.params["stream"]
    try:
        with open(f"{MODULES_D}/{name}.module", encoding="utf-8", errors="replace") as handle:
            before = parse_module_state(handle.read(), name)
    except FileNotFoundError:
        before = {"stream": None, "state": None}
    except parsing.ParseError as error:
        module.fail_json(msg=f"cannot read {MODULES_D}/{name}.module: {error}; repair or remove it")
    if before == {"stream": stream, "state": "enabled"}:
        module.exit_json(changed=False, before=before)
    diff = {
        "before": f"{name}: {before['stream'] or 'no stream'} ({before['state'] or 'not enabled'})\n",
        "after": f"{name}: {stream} (enabled)\n",
    }
    if not module.check_mode:
        dnf = ToolRunner(module, "dnf")
        if before["state"] == "enabled":
            dnf(["module", "reset", "--assumeyes", "--", name])
        # dnf's refusal (a stream no repository carries) ends the module with dnf's own words.
        dnf(["module", "enable", "--assumeyes", "--", f"{name}:{stream}"])
    module.exit_json(changed=True, before=before, diff=diff)


if __name__ == "__main__":
    main()
