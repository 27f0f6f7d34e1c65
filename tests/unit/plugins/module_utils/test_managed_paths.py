"""managed_paths' judgment: entries refused before anything changes, and what differs between an entry and a path."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.gpuops.bringup.plugins.module_utils import managed_paths

DIR = {"path": "/opt/x", "state": "directory", "mode": "0755"}
LINK = {"path": "/opt/x/include", "state": "link", "src": "/usr/include"}
FILE = {"path": "/opt/x/bin/nvcc", "state": "file", "mode": "0755", "content": "#!/bin/sh\n"}
OWNED = {"mode": 0o755, "uid": 0, "gid": 0}


def test_valid_entries_have_no_problem():
    assert managed_paths.entry_problems([DIR, LINK, FILE, {"path": "/opt/y", "state": "absent"}]) == []


@pytest.mark.parametrize(
    ("entries", "problem"),
    [
        ({"path": "/x"}, "paths is not a list of entries (got dict)"),
        (["/x"], "paths[0] is not a mapping (got str)"),
        ([{**DIR, "path": "opt/x"}], "paths[0] path 'opt/x' is not an absolute path on one line"),
        ([{**DIR, "path": "/opt/x\n/etc"}], "is not an absolute path on one line"),
        ([DIR, {**DIR, "path": "/opt/x/"}], "paths[1] path /opt/x/ is named twice"),
        ([{**DIR, "state": "fifo"}], "paths[0] state 'fifo' is not one of directory, link, file, absent"),
        ([{"path": "/l", "state": "link"}], "paths[0] is a link without src"),
        ([{"path": "/l", "state": "link", "src": ""}], "paths[0] is a link without src"),
        ([{"path": "/f", "state": "file"}], "paths[0] is a file without content"),
        ([{**FILE, "content": "x" * (managed_paths.MAX_CONTENT + 1)}], "content is over 1048576 bytes"),
        ([{**DIR, "mode": 755}], "paths[0] mode 755 is not an octal mode such as 0644"),
        ([{**DIR, "mode": "0758"}], "paths[0] mode '0758' is not an octal mode"),
    ],
)
def test_entry_problems(entries, problem):
    assert any(problem in found for found in managed_paths.entry_problems(entries))


def test_content_of_exactly_the_bound_is_accepted():
    assert managed_paths.entry_problems([{**FILE, "content": "x" * managed_paths.MAX_CONTENT}]) == []


@pytest.mark.parametrize(
    ("entry", "seen", "found"),
    [
        (DIR, {"type": "directory", **OWNED}, []),
        (DIR, {"type": "absent"}, ["absent"]),
        (DIR, {"type": "file", **OWNED}, ["file in place of a directory"]),
        (DIR, {"type": "directory", **OWNED, "mode": 0o700}, ["mode 0700, not 0755"]),
        (DIR, {"type": "directory", **OWNED, "uid": 1000}, ["owner 1000:0, not 0:0"]),
        ({**DIR, "mode": None}, {"type": "directory", **OWNED, "mode": 0o700}, []),
        (LINK, {"type": "link", "target": "/usr/include", **OWNED, "mode": 0o777}, []),
        # A link's own mode and owner mean nothing: not judged.
        (LINK, {"type": "link", "target": "/usr/include", "mode": 0o777, "uid": 5, "gid": 5}, []),
        (LINK, {"type": "link", "target": "/usr/lib", **OWNED}, ["points to /usr/lib, not /usr/include"]),
        (LINK, {"type": "file", **OWNED}, ["file in place of a link"]),
        (FILE, {"type": "file", **OWNED, "content": b"#!/bin/sh\n"}, []),
        (FILE, {"type": "file", **OWNED, "content": b"#!/bin/bash\n"}, ["content differs"]),
        (FILE, {"type": "file", **OWNED, "mode": 0o644, "content": b"#!/bin/sh\n"}, ["mode 0644, not 0755"]),
        (FILE, {"type": "other", **OWNED}, ["other in place of a file"]),
        ({"path": "/opt/y", "state": "absent"}, {"type": "absent"}, []),
        ({"path": "/opt/y", "state": "absent"}, {"type": "directory", **OWNED}, ["directory present"]),
    ],
)
def test_differences(entry, seen, found):
    assert managed_paths.differences(entry, seen) == found


@given(st.text(max_size=200))
def test_a_file_read_back_as_written_does_not_differ(content):
    entry = {**FILE, "content": content}
    seen = {"type": "file", **OWNED, "content": content.encode("utf-8", "surrogateescape")}
    assert managed_paths.differences(entry, seen) == []
