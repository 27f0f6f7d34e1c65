"""A compile cache for Python code imported from zip files, on bench nodes only (node.Containerfile).

Ansible sends each module to the node as a zip of sources (AnsiballZ), so the node's Python compiles the module and
every module_utils it imports on every task: about 0.2 s of CPU a task on CI's machine, 40 % of the module's start.
This keeps the compiled code by the source's SHA-256 in a directory every bench node mounts, as ccache does for the
kernel's compiler. The code is the same: compile() of the same source with the same flags by the same Python gives
the same code object; only its file name (the zip's temporary path, new each task) is set again on load. Without the
mounted directory, nothing is changed.
"""

import marshal
import os
import sys
import zipimport
from types import CodeType

CACHE = "/var/cache/bench-pycache"
_compile = zipimport._compile_source


def _with_filename(code, filename):
    consts = tuple(_with_filename(c, filename) if isinstance(c, CodeType) else c for c in code.co_consts)
    return code.replace(co_filename=filename, co_consts=consts)


def _compile_source(pathname, source):
    # Imported here: only processes that import from a zip pay for it (8 ms).
    import hashlib

    tag = f"{sys.implementation.cache_tag}-O{sys.flags.optimize}"
    path = os.path.join(CACHE, tag, hashlib.sha256(source).hexdigest())
    try:
        with open(path, "rb") as cached:
            return _with_filename(marshal.loads(cached.read()), pathname)
    except (OSError, EOFError, ValueError, TypeError):
        pass  # not cached yet, or unreadable: compiled as without the cache
    code = _compile(pathname, source)
    # Written to a unique name, then renamed: nodes share the directory (and their PIDs overlap).
    temporary = f"{path}.{os.urandom(6).hex()}"
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(temporary, "wb") as out:
            out.write(marshal.dumps(code))
        os.replace(temporary, path)
    except OSError:
        pass  # a user who may not write there (become_user): the next root task stores it
    return code


if os.path.isdir(CACHE):
    zipimport._compile_source = _compile_source
