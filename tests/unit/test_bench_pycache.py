"""The bench nodes' compile cache for code imported from zips (tests/bench/images/bench_pycache.py)."""

from __future__ import annotations

import importlib.util
import sys
import zipfile
import zipimport
from pathlib import Path

import pytest

SOURCE = Path(__file__).resolve().parents[1] / "bench" / "images" / "bench_pycache.py"
MODULE = "def outer():\n    def inner():\n        return 42\n    return inner\n"


@pytest.fixture
def pycache(tmp_path, monkeypatch):
    spec = importlib.util.spec_from_file_location("bench_pycache", SOURCE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    # On this machine there is no /var/cache/bench-pycache: loading it changed nothing.
    assert zipimport._compile_source is module._compile
    monkeypatch.setattr(module, "CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(zipimport, "_compile_source", module._compile_source)
    return module


def import_from_zip(tmp_path, name, monkeypatch):
    """Imports the module from a new zip, as AnsiballZ does for every task (a new temporary path each time)."""
    archive = tmp_path / f"{name}.zip"
    with zipfile.ZipFile(archive, "w") as out:
        out.writestr("payload_mod.py", MODULE)
    monkeypatch.syspath_prepend(str(archive))
    sys.modules.pop("payload_mod", None)
    module = importlib.import_module("payload_mod")
    sys.modules.pop("payload_mod")
    return archive, module


def test_the_second_import_comes_from_the_cache_under_its_own_file_name(pycache, tmp_path, monkeypatch):
    module = import_from_zip(tmp_path, "task1", monkeypatch)[1]
    assert module.outer()() == 42
    (stored,) = (tmp_path / "cache").glob("*/*")
    assert stored.parent.name == f"{sys.implementation.cache_tag}-O{sys.flags.optimize}"

    def no_compile(pathname, source):
        raise AssertionError(f"compiled {pathname} again")

    monkeypatch.setattr(pycache, "_compile", no_compile)
    second, module = import_from_zip(tmp_path, "task2", monkeypatch)
    assert module.outer()() == 42
    # Tracebacks name the zip this task imported from, nested code included.
    assert module.outer.__code__.co_filename == str(second / "payload_mod.py")
    assert module.outer().__code__.co_filename == str(second / "payload_mod.py")


def test_an_unreadable_entry_is_compiled_again(pycache, tmp_path, monkeypatch):
    import_from_zip(tmp_path, "task1", monkeypatch)
    (stored,) = (tmp_path / "cache").glob("*/*")
    stored.write_bytes(b"not marshal data")
    module = import_from_zip(tmp_path, "task2", monkeypatch)[1]
    assert module.outer()() == 42
    assert stored.read_bytes() != b"not marshal data"
