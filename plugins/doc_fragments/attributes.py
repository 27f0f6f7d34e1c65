"""The attributes the collection's node modules share, stated once (`gpuops.bringup.attributes`)."""

from __future__ import annotations


class ModuleDocFragment:
    # Reads the node and changes nothing: full check mode, nothing to diff.
    DOCUMENTATION = r"""
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
  platform:
    platforms: posix
"""

    # A facts module: reads the node, returns only ansible_facts.
    FACTS = r"""
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
  facts:
    support: full
  platform:
    platforms: posix
"""

    # Changes the node, says in check mode what it would change and shows it as a diff.
    CHANGES = r"""
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
  platform:
    platforms: posix
"""

    # An action that reads the controller only (files, the inventory) and changes nothing.
    CONTROLLER_CHECK = r"""
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
  action:
    support: full
  async:
    support: none
  bypass_host_loop:
    support: none
  platform:
    platforms: all
"""
