# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Run external tools from modules: list arguments, C locale, one failure format."""

from __future__ import annotations

C_LOCALE = {"LANG": "C", "LC_ALL": "C", "LANGUAGE": "C"}


class ToolRunner:
    """Runs one external tool with the C locale so parsers see the same text everywhere.

    Failures end the module through fail_json with the command, its return
    code and both streams, never a traceback.
    """

    def __init__(self, module, tool, required=True):
        self.module = module
        self.tool = tool
        self.path = module.get_bin_path(tool, required=False)
        if required and self.path is None:
            module.fail_json(
                msg=f"{tool} was not found on this host (searched PATH and the sbin directories)", cmd=tool
            )

    @property
    def available(self):
        return self.path is not None

    def __call__(self, args, ok_rc=(0,), data=None):
        """Run the tool; return (rc, stdout, stderr) when rc is in ok_rc, else fail."""
        cmd = [self.path, *args]
        # Bytes that are not UTF-8 (a process name in nvidia-smi's XML, a firmware string) become U+FFFD: the
        # default, surrogateescape, hands parsers text that no JSON result or XML parser can carry.
        rc, out, err = self.module.run_command(
            cmd, environ_update=C_LOCALE, data=data, binary_data=data is not None, errors="replace"
        )
        if rc not in ok_rc:
            self.module.fail_json(
                msg=f"{self.tool} failed with return code {rc}: {(err or out).strip()[-500:]}",
                cmd=cmd,
                rc=rc,
                stdout=out,
                stderr=err,
            )
        return rc, out, err
