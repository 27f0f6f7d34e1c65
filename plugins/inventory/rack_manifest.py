# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
name: rack_manifest
short_description: Racks of GPU nodes from the manifest a datacenter team hands over
version_added: 0.1.0
description:
  - Reads a rack manifest, a CSV file (a header row, then a row per server) or a YAML file (C(nodes), a list of
    mappings), with per server its C(hostname), C(address), C(rack), C(u) (the lowest rack unit it occupies),
    C(profile) (its hardware profile), C(serial) (the system serial number) and C(bmc) (its BMC's address).
    C(hostname), C(address), C(rack) and C(profile) are required; other columns are left alone.
  - Every node becomes a host with C(ansible_host) its address, in the group C(rack_<rack>) (the rack's name in
    lower case, other characters as underscores) and in its profile's group, as the rack inventory contract of every
    stage wants; C(gpuops_rack), C(gpuops_rack_unit), C(gpuops_system_serial) and C(gpuops_bmc_address) are set where
    the manifest gives them. Ansible marks every value read from the manifest unsafe, so none is ever templated.
  - The manifest is checked whole before any host is added, every problem with its line and the fix - a hostname
    that is not a lower-case DNS name, a malformed address, an unknown profile, a rack unit out of range, the same
    host, address, serial, BMC or rack unit twice, a BMC on a node's own address - and a manifest with any problem
    adds no host. A file over 64 MiB is refused from its size, before it is read.
  - The acceptance stage's check C(inventory.system_serial) holds the node to C(gpuops_system_serial) - the serial
    C(dmidecode) reads on it must be that one.
  - The configuration file's name ends in C(rack_manifest.yml) or C(rack_manifest.yaml). Variables for every node
    (C(ansible_user), the control plane) go in C(group_vars/) beside it; the control plane's hosts come from another
    inventory source (a second C(-i), or a file in the same inventory directory).
extends_documentation_fragment:
  - ansible.builtin.constructed
options:
  plugin:
    description: The name of this plugin, which marks the file as its configuration.
    required: true
    type: str
    choices: [gpuops.bringup.rack_manifest]
  manifest:
    description:
      - The manifest file, C(.csv), C(.yml) or C(.yaml); a relative path is relative to this file's directory (not to
        where Ansible runs), C(~) and environment variables are expanded.
    required: true
    type: str
  columns:
    description:
      - "The manifest's own header for a field where it differs from the field's name, for example
        C({hostname: Host Name, address: Mgmt IP}). Headers match without regard to case or surrounding spaces."
    type: dict
    default: {}
  delimiter:
    description: What separates a CSV manifest's columns (a spreadsheet saved in some locales uses C(;)).
    type: str
    default: ","
  profiles:
    description:
      - Names of the site's own hardware profiles (defined in C(gpuops_hardware_profiles)) the manifest may name,
        besides the profiles the collection ships.
    type: list
    elements: str
    default: []
"""

EXAMPLES = r"""
# site.rack_manifest.yml beside racks.csv, which reads:
#   hostname,address,rack,u,profile,serial,bmc
#   a01-gpu01,10.20.1.11,A01,3,hgx_h100_8gpu,SN0001,10.30.1.11
# holds no more than:
#   plugin: gpuops.bringup.rack_manifest
#   manifest: racks.csv

# A manifest with its own headers, saved with semicolons, a site profile, and groups of the constructed plugin's kind:
plugin: gpuops.bringup.rack_manifest
manifest: /srv/handover/hall2.csv
delimiter: ";"
columns:
  hostname: Host Name
  address: Mgmt IP
  u: RU
  serial: Serial Number
  bmc: iDRAC IP
profiles: [hgx_h100_8gpu_site]
keyed_groups:
  - key: gpuops_rack_unit > 20
    prefix: upper_half
"""

import os

from ansible.errors import AnsibleParserError
from ansible.plugins.inventory import BaseInventoryPlugin, Constructable

from ansible_collections.gpuops.bringup.plugins.module_utils import hardware_profiles
from ansible_collections.gpuops.bringup.plugins.plugin_utils import rack_manifest

# Where a manifest's optional fields go, by variable.
_VARIABLES = (
    ("rack", "gpuops_rack"),
    ("u", "gpuops_rack_unit"),
    ("serial", "gpuops_system_serial"),
    ("bmc", "gpuops_bmc_address"),
)


class InventoryModule(BaseInventoryPlugin, Constructable):
    NAME = "gpuops.bringup.rack_manifest"

    def verify_file(self, path):
        return super().verify_file(path) and path.endswith(("rack_manifest.yml", "rack_manifest.yaml"))

    def _settings(self, path):
        """(manifest path, columns, delimiter, profiles), each checked, from the configuration."""
        where = f"{path}:"
        columns = self.get_option("columns") or {}
        unknown = sorted(str(key) for key in columns if key not in rack_manifest.FIELD_NAMES)
        if unknown or not all(isinstance(value, str) and value.strip() for value in columns.values()):
            raise AnsibleParserError(
                f"{where} columns maps the fields {', '.join(rack_manifest.FIELD_NAMES)} to a manifest's headers; "
                f"{', '.join(unknown) or 'an empty header'} is not one of them"
            )
        delimiter = self.get_option("delimiter")
        if len(delimiter) != 1 or delimiter in '"\r\n':
            raise AnsibleParserError(f"{where} delimiter is {delimiter!r}; give one character, such as , or ;")
        site = self.get_option("profiles") or []
        bad = [name for name in site if not hardware_profiles.is_name(name)]
        if bad:
            raise AnsibleParserError(
                f"{where} profiles names {bad[0]!r}, not a profile name (lower case, digits, underscores)"
            )
        manifest = os.path.expanduser(os.path.expandvars(self.get_option("manifest")))
        manifest = os.path.join(os.path.dirname(os.path.abspath(path)), manifest)
        return manifest, columns, delimiter, set(hardware_profiles.BUILTIN) | set(site)

    def parse(self, inventory, loader, path, cache=True):
        super().parse(inventory, loader, path, cache)
        self._read_config_data(path)
        manifest, columns, delimiter, profiles = self._settings(path)
        data, problem = rack_manifest.read(manifest)
        if problem:
            raise AnsibleParserError(f"{path}: {problem}")
        nodes, problems = rack_manifest.load(data, manifest, profiles, columns, delimiter)
        if problems:
            raise AnsibleParserError(
                f"the rack manifest {manifest} has {len(problems)} problem(s), no host was added:\n"
                + "\n".join(f"  {manifest} {problem}" for problem in problems)
            )
        strict = self.get_option("strict")
        for node in nodes:
            host = node["hostname"]
            for group in (node["rack_group"], node["profile"]):
                self.inventory.add_group(group)
            self.inventory.add_host(host, group=node["rack_group"])
            self.inventory.add_child(node["profile"], host)
            self.inventory.set_variable(host, "ansible_host", node["address"])
            for field, variable in _VARIABLES:
                if node[field] is not None:
                    self.inventory.set_variable(host, variable, node[field])
            hostvars = self.inventory.get_host(host).get_vars()
            self._set_composite_vars(self.get_option("compose"), hostvars, host, strict=strict)
            self._add_host_to_composed_groups(self.get_option("groups"), hostvars, host, strict=strict)
            self._add_host_to_keyed_groups(self.get_option("keyed_groups"), hostvars, host, strict=strict)
