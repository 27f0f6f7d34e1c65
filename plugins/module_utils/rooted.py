# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""File reads under a root directory, so unit tests can point a module at a captured tree."""

from __future__ import annotations

import os


class RootedReader:
    """Reads files, listings and metadata under root ("/" on a node); missing or unreadable: default, [] or None."""

    def __init__(self, root="/"):
        self.root = root

    def path(self, path):
        return os.path.join(self.root, path.lstrip("/"))

    def read(self, path, default=None):
        # Unreadable counts as absent: sysfs answers EINVAL for the rate of some down ports.
        try:
            with open(self.path(path), encoding="utf-8", errors="replace") as handle:
                return handle.read()
        except OSError:
            return default

    def listdir(self, path):
        try:
            return sorted(os.listdir(self.path(path)))
        except OSError:
            return []

    def exists(self, path):
        return os.path.exists(self.path(path))

    def mtime(self, path):
        try:
            return os.stat(self.path(path)).st_mtime
        except OSError:
            return None

    def readonly(self, path):
        try:
            return bool(os.statvfs(self.path(path)).f_flag & os.ST_RDONLY)
        except OSError:
            return True
