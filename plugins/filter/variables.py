# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The grammar of the roles' variables: what each may hold before it is written into a file or a command."""

from __future__ import annotations

from ansible_collections.gpuops.bringup.plugins.module_utils import variables
from ansible_collections.gpuops.bringup.plugins.plugin_utils.filter_args import mapping, plain


def variable_problems(values, where_used=False):
    """Problems with the variables given (a mapping name -> value), each naming the variable, the value and the fix;
    where_used also checks those a role checks only where it uses them."""
    return variables.variable_problems(plain(mapping(values, "the variables", "variable_problems")), bool(where_used))


class FilterModule:
    def filters(self):
        return {"variable_problems": variable_problems}
