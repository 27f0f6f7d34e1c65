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


class RecordingReader:
    """Wraps a reader and records what it read, so a parser's reads on a node can be replayed elsewhere
    (SnapshotReader over snapshot())."""

    def __init__(self, reader):
        self.reader = reader
        self.files = {}
        self.dirs = {}

    def read(self, path, default=None):
        value = self.reader.read(path)
        self.files[path] = value
        return default if value is None else value

    def listdir(self, path):
        value = self.reader.listdir(path)
        self.dirs[path] = list(value)
        return value

    def snapshot(self):
        return {"files": dict(self.files), "dirs": dict(self.dirs)}


class SnapshotReader:
    """Answers a parser's reads from a RecordingReader's snapshot: what was not read there is absent."""

    def __init__(self, snapshot):
        snapshot = snapshot if isinstance(snapshot, dict) else {}
        files, dirs = snapshot.get("files"), snapshot.get("dirs")
        self.files = files if isinstance(files, dict) else {}
        self.dirs = dirs if isinstance(dirs, dict) else {}

    def read(self, path, default=None):
        value = self.files.get(path)
        return value if isinstance(value, str) else default

    def listdir(self, path):
        value = self.dirs.get(path)
        return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []
