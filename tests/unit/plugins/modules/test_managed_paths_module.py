"""managed_paths' main() on real files under a temporary directory: changes only where a path differs, says so in
check mode without changing it, shows a file's diff, and never leaves a temporary file behind."""

from __future__ import annotations

import os
import stat

import pytest

from ansible_collections.gpuops.bringup.plugins.modules import managed_paths

OWNER = {"owner": str(os.getuid()), "group": str(os.getgid())}
# The module runs no command: a table of none fails the test if it does.
NONE = None


def entries(root):
    return [
        {"path": f"{root}/cuda", "state": "directory", "mode": "0755"},
        {"path": f"{root}/cuda/bin/nvcc", "state": "file", "mode": "0750", "content": "#!/bin/sh\nexec nvcc\n"},
        {"path": f"{root}/cuda/include", "state": "link", "src": str(root)},
        {"path": f"{root}/old", "state": "absent"},
    ]


def test_first_run_changes_each_path_and_the_second_nothing(run_module, tmp_path):
    (tmp_path / "old" / "sub").mkdir(parents=True)
    result, failed = run_module(managed_paths.main, {"paths": entries(tmp_path), **OWNER}, NONE)
    assert not failed and result["changed"], result
    assert sorted(result["changed_paths"]) == sorted(e["path"] for e in entries(tmp_path))
    nvcc = tmp_path / "cuda" / "bin" / "nvcc"
    assert nvcc.read_text() == "#!/bin/sh\nexec nvcc\n" and stat.S_IMODE(nvcc.stat().st_mode) == 0o750
    assert os.readlink(tmp_path / "cuda" / "include") == str(tmp_path)
    assert not (tmp_path / "old").exists()
    assert [p.name for p in (tmp_path / "cuda" / "bin").iterdir()] == ["nvcc"]
    again, _failed = run_module(managed_paths.main, {"paths": entries(tmp_path), **OWNER}, NONE)
    assert (again["changed"], again["changed_paths"], again["diff"]) == (False, {}, [])


def test_check_mode_reports_without_changing_and_shows_the_file_diff(run_module, tmp_path):
    paths = entries(tmp_path)
    run_module(managed_paths.main, {"paths": paths, **OWNER}, NONE)
    (tmp_path / "cuda" / "bin" / "nvcc").write_text("#!/bin/sh\nexec other\n")
    os.chmod(tmp_path / "cuda", 0o700)
    result, failed = run_module(managed_paths.main, {"paths": paths, **OWNER}, NONE, check_mode=True)
    assert not failed and result["changed_paths"] == {
        f"{tmp_path}/cuda": ["mode 0700, not 0755"],
        f"{tmp_path}/cuda/bin/nvcc": ["content differs"],
    }
    assert result["diff"] == [{
        "before_header": f"{tmp_path}/cuda/bin/nvcc", "after_header": f"{tmp_path}/cuda/bin/nvcc",
        "before": "#!/bin/sh\nexec other\n", "after": "#!/bin/sh\nexec nvcc\n",
    }]  # fmt: skip
    assert (tmp_path / "cuda" / "bin" / "nvcc").read_text() == "#!/bin/sh\nexec other\n"
    assert stat.S_IMODE((tmp_path / "cuda").stat().st_mode) == 0o700


def test_a_link_to_a_missing_target_is_refused(run_module, tmp_path):
    link = {"path": f"{tmp_path}/lib64", "state": "link", "src": f"{tmp_path}/missing"}
    result, failed = run_module(managed_paths.main, {"paths": [link], **OWNER}, NONE)
    assert failed and result["msg"] == (
        f"managed_paths: {tmp_path}/lib64 (absent): its target {tmp_path}/missing does not exist"
    ), result
    assert result["changed_paths"] == {} and not os.path.lexists(link["path"])


def test_check_mode_does_not_look_for_a_links_target(run_module, tmp_path):
    """On a fresh node the packages that bring the target are still to come."""
    link = {"path": f"{tmp_path}/lib64", "state": "link", "src": f"{tmp_path}/missing"}
    result, failed = run_module(managed_paths.main, {"paths": [link], **OWNER}, NONE, check_mode=True)
    assert not failed and result["changed_paths"] == {link["path"]: ["absent"]}
    assert not os.path.lexists(link["path"])


def test_a_file_in_the_way_of_a_link_is_never_replaced(run_module, tmp_path):
    (tmp_path / "include").write_text("x")
    link = {"path": f"{tmp_path}/include", "state": "link", "src": str(tmp_path)}
    result, failed = run_module(managed_paths.main, {"paths": [link], **OWNER}, NONE)
    assert failed and result["msg"].endswith("a file is in the way of the link: remove it, or name another path")
    assert (tmp_path / "include").read_text() == "x"


@pytest.mark.parametrize(
    ("who", "message"),
    [
        ({"owner": "gpuops-nobody"}, "managed_paths: owner gpuops-nobody is no user on this node"),
        ({"owner": "0", "group": "gpuops-nobody"}, "managed_paths: group gpuops-nobody is no group on this node"),
    ],
)
def test_an_unknown_owner_or_group_fails_before_any_change(run_module, tmp_path, who, message):
    paths = [{"path": f"{tmp_path}/d", "state": "directory", "mode": "0755"}]
    result, failed = run_module(managed_paths.main, {"paths": paths, **who}, NONE)
    assert failed and result["msg"] == message, result
    assert not (tmp_path / "d").exists()


def test_a_directory_in_the_way_is_never_replaced(run_module, tmp_path):
    (tmp_path / "nvcc").mkdir()
    paths = [{"path": f"{tmp_path}/nvcc", "state": "file", "mode": "0755", "content": "x"}]
    result, failed = run_module(managed_paths.main, {"paths": paths, **OWNER}, NONE)
    assert failed and "a directory is in the way of the file" in result["msg"], result
    assert (tmp_path / "nvcc").is_dir()


def test_bad_entries_fail_before_any_change(run_module, tmp_path):
    paths = [{"path": f"{tmp_path}/d", "state": "directory"}, {"path": "relative", "state": "directory"}]
    result, failed = run_module(managed_paths.main, {"paths": paths, **OWNER}, NONE)
    assert failed and "paths[1] path 'relative' is not an absolute path" in result["msg"]
    assert not (tmp_path / "d").exists()
