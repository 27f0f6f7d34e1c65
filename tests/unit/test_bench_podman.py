"""The bench's transient podman failures are retried (tests/bench/bench.py): a container removal that fails while the
container settles, and a node whose published port another node took while both started."""

from __future__ import annotations

import importlib.util
import subprocess
from pathlib import Path

import pytest

SOURCE = Path(__file__).resolve().parents[1] / "bench" / "bench.py"


@pytest.fixture
def bench(monkeypatch):
    spec = importlib.util.spec_from_file_location("bench_under_test", SOURCE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(module.time, "sleep", lambda _seconds: None)
    return module


class FakePodman:
    """Containers by name; `rm` fails for the names in `stuck` as many times as given."""

    def __init__(self, names, stuck):
        self.names = set(names)
        self.stuck = dict(stuck)
        self.calls = []

    def __call__(self, *args, check=True):
        self.calls.append(args)
        if args[0] == "ps":
            return subprocess.CompletedProcess(args, 0, "\n".join(f"{n}\tid-{n}" for n in sorted(self.names)), "")
        assert args[:5] == ("rm", "--force", "--ignore", "--time", "5")
        failed = []
        for name in args[5:]:
            if self.stuck.get(name, 0) > 0:
                self.stuck[name] -= 1
                failed.append(name)
            else:
                self.names.discard(name)
        if failed:
            return subprocess.CompletedProcess(args, 125, "", f"Error: cleaning up container {failed[0]}: busy")
        return subprocess.CompletedProcess(args, 0, "", "")


def test_all_removed_at_the_first_try(bench, monkeypatch):
    fake = FakePodman(["a", "b"], {})
    monkeypatch.setattr(bench, "podman", fake)
    bench.remove_containers(["a", "b"])
    assert fake.names == set()
    assert len(fake.calls) == 1


def test_a_failed_removal_retries_only_what_is_left(bench, monkeypatch):
    fake = FakePodman(["a", "b", "other"], {"b": 2})
    monkeypatch.setattr(bench, "podman", fake)
    bench.remove_containers(["a", "b"])
    assert fake.names == {"other"}
    removals = [call[5:] for call in fake.calls if call[0] == "rm"]
    assert removals == [("a", "b"), ("b",), ("b",)]


def test_a_container_that_never_goes_fails_with_podmans_words(bench, monkeypatch):
    fake = FakePodman(["a", "b"], {"b": 99})
    monkeypatch.setattr(bench, "podman", fake)
    with pytest.raises(bench.BenchError, match=r"could not remove b:\nError: cleaning up container b: busy"):
        bench.remove_containers(["a", "b"])
    assert fake.names == {"b"}
    assert sum(call[0] == "rm" for call in fake.calls) == 4


def test_nothing_to_remove_calls_no_podman(bench, monkeypatch):
    fake = FakePodman([], {})
    monkeypatch.setattr(bench, "podman", fake)
    bench.remove_containers([])
    assert fake.calls == []


class FakeRun:
    """`podman run` that fails with the given errors in turn, then starts; `rm` and `network reload` succeed; `ps`
    lists the given running containers with their published ports."""

    def __init__(self, errors, running=""):
        self.errors = list(errors)
        self.running = running
        self.calls = []
        self.reloaded = []

    def __call__(self, *args, check=True):
        self.calls.append(args[0])
        if args[0] == "run" and self.errors:
            return subprocess.CompletedProcess(args, 126, "", self.errors.pop(0))
        if args[0] == "ps":
            return subprocess.CompletedProcess(args, 0, self.running, "")
        if args[:2] == ("network", "reload"):
            self.reloaded.append(args[2:])
        return subprocess.CompletedProcess(args, 0, "", "")


TAKEN = "Error: cannot listen on the TCP port: listen tcp4 127.0.0.1:40321: bind: address already in use"


def test_a_port_taken_meanwhile_starts_the_node_again(bench, monkeypatch):
    fake = FakeRun([TAKEN, TAKEN])
    monkeypatch.setattr(bench, "podman", fake)
    bench.run_publishing("n1", ["run", "--name", "n1"])
    assert fake.calls == ["run", "ps", "rm", "run", "ps", "rm", "run"]
    assert fake.reloaded == []


RUNNING = (
    "mirror\t127.0.0.1:4032->8080/tcp\n"
    "n7\t127.0.0.1:40321->22/tcp\n"
    "n8\t127.0.0.1:403210->22/tcp\n"
    "quiet\t\n"
    "n9\t0.0.0.0:40321->22/tcp, 127.0.0.1:5000->5000/tcp\n"
)


def test_the_node_holding_the_port_gets_its_forwarding_rules_back(bench, monkeypatch):
    # The loser's failed start deleted the holder's masquerade marks (netavark's
    # rules are the same for one host port); only the holders are reloaded.
    fake = FakeRun([TAKEN], RUNNING)
    monkeypatch.setattr(bench, "podman", fake)
    bench.run_publishing("n1", ["run", "--name", "n1"])
    assert fake.reloaded == [("n7", "n9")]
    assert fake.calls == ["run", "ps", "network", "rm", "run"]


def test_the_holder_gets_its_rules_back_after_the_last_try_too(bench, monkeypatch):
    fake = FakeRun([TAKEN] * 2, RUNNING)
    monkeypatch.setattr(bench, "podman", fake)
    with pytest.raises(bench.BenchError, match="address already in use"):
        bench.run_publishing("n1", ["run", "--name", "n1"], tries=2)
    assert fake.reloaded == [("n7", "n9"), ("n7", "n9")]


def test_a_port_taken_every_time_fails_with_podmans_words(bench, monkeypatch):
    fake = FakeRun([TAKEN] * 4)
    monkeypatch.setattr(bench, "podman", fake)
    with pytest.raises(bench.BenchError, match=r"could not start n1 \(rc=126\):\n.*address already in use"):
        bench.run_publishing("n1", ["run", "--name", "n1"])
    assert fake.calls.count("run") == 4


def test_another_failure_is_not_retried(bench, monkeypatch):
    fake = FakeRun(["Error: short-name resolution enforced"])
    monkeypatch.setattr(bench, "podman", fake)
    with pytest.raises(bench.BenchError, match="short-name resolution enforced"):
        bench.run_publishing("n1", ["run", "--name", "n1"])
    assert fake.calls == ["run"]
