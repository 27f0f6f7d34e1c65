"""perftest_bw.run with ib_write_bw mocked by data: the Debian 12 bench's real no-device failure and a real results
table (tests/fixtures/perftest); the --help texts are short excerpts."""

from __future__ import annotations

from pathlib import Path

import pytest

from ansible_collections.gpuops.bringup.plugins.modules import perftest_bw

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "perftest"
RESULT = (FIXTURES / "perftest-273-write-bw-post-list-gbits.txt").read_text()
NO_DEVICE = (FIXTURES / "debian12-no-device.stderr").read_text()


class Tool:
    def __init__(self, answers):
        self.answers = answers
        self.calls = []

    def __call__(self, args, ok_rc=(0,)):
        self.calls.append(args)
        return self.answers["--help" if args == ["--help"] else "run"]


def params(**changes):
    return {"device": "mlx5_0", "server": None, "port": 18515, "duration": 5, "size": 65536, "gid_index": None,
            "gpu": None, "require_gpudirect": False, **changes}  # fmt: skip


def test_no_device_is_returned_not_failed():
    result = perftest_bw.run(Tool({"run": (1, "", NO_DEVICE)}), params(server="10.0.0.1"))
    assert result["ok"] is False and result["exit_code"] == 1
    assert result["messages"][-1] == "Unable to find the Infiniband/RoCE device"
    assert result["cmd"][-1] == "10.0.0.1"


@pytest.mark.parametrize(("help_text", "gpudirect"), [("--report_gbits", False), ("--use_cuda=<id>", True)])
def test_gpudirect_only_where_perftest_has_cuda(help_text, gpudirect):
    tool = Tool({"--help": (0, help_text, ""), "run": (0, RESULT, "")})
    result = perftest_bw.run(tool, params(gpu=0))
    assert result["ok"] is True and result["average_gbps"] == 0.48
    assert result["gpudirect"] is gpudirect and result["cuda_support"] is gpudirect
    assert ("--use_cuda=0" in tool.calls[-1]) is gpudirect


def test_the_output_is_kept_as_printed_and_bounded():
    assert perftest_bw.run(Tool({"run": (0, RESULT, "")}), params())["output"] == RESULT
    huge = "x" * 20000 + RESULT
    assert perftest_bw.run(Tool({"run": (0, huge, "")}), params())["output"] == huge[-perftest_bw.OUTPUT_LIMIT :]
    assert perftest_bw.run(Tool({"run": (1, "", NO_DEVICE)}), params())["output"] == ""


def test_without_a_gpu_perftest_is_not_asked_about_cuda():
    tool = Tool({"run": (0, RESULT, "")})
    result = perftest_bw.run(tool, params())
    assert result["gpudirect"] is False and result["cuda_support"] is None
    assert tool.calls == [result["cmd"][1:]]


def test_required_gpudirect_without_cuda_runs_nothing_and_says_why():
    tool = Tool({"--help": (0, "--report_gbits", ""), "run": (0, RESULT, "")})
    result = perftest_bw.run(tool, params(gpu=0, require_gpudirect=True))
    assert tool.calls == [["--help"]]
    assert result["ok"] is False and result["exit_code"] is None and result["cmd"] == []
    assert result["messages"] == [
        "this perftest was built without CUDA (ib_write_bw --help offers no --use_cuda): it cannot use GPU memory"
    ]


def test_required_gpudirect_with_cuda_runs_on_gpu_memory():
    tool = Tool({"--help": (0, "--use_cuda=<id>", ""), "run": (0, RESULT, "")})
    result = perftest_bw.run(tool, params(gpu=1, require_gpudirect=True))
    assert result["ok"] is True and result["gpudirect"] is True
    assert "--use_cuda=1" in tool.calls[-1]


class Rails:
    """ib_write_bw per device: each device's answers in turn (the last repeats); records the calls."""

    def __init__(self, answers):
        self.answers = {device: list(replies) for device, replies in answers.items()}
        self.calls = []

    def __call__(self, args, ok_rc=(0,)):
        self.calls.append(args)
        if args == ["--help"]:
            return self.answers["--help"]
        replies = self.answers[args[args.index("-d") + 1]]
        return replies.pop(0) if len(replies) > 1 else replies[0]


def rails_params(**changes):
    rails = [{"device": "mlx5_0", "port": 18515}, {"device": "mlx5_1", "port": 18516}]
    return params(**{"device": None, "server": "10.0.0.2", "connect_wait": 5, "rails": rails, **changes})


def test_every_rail_runs_on_its_own_device_and_port():
    tool = Rails({"mlx5_0": [(0, RESULT, "")], "mlx5_1": [(0, RESULT, "")]})
    result = perftest_bw.run_rails(tool, rails_params(), sleep=lambda s: None)
    assert result["ok"] is True
    assert [(r["device"], r["port"], r["average_gbps"]) for r in result["rails"]] == [
        ("mlx5_0", 18515, 0.48), ("mlx5_1", 18516, 0.48)]  # fmt: skip
    assert sorted(c[c.index("-p") + 1] for c in tool.calls) == ["18515", "18516"]


def test_a_client_rail_waits_for_its_server_then_gives_up():
    refused = (1, "", "Couldn't connect to 10.0.0.2:18516\nUnable to init the socket connection\n")
    tool = Rails({"mlx5_0": [(0, RESULT, "")], "mlx5_1": [refused, refused, (0, RESULT, "")]})
    now = iter(range(100))
    result = perftest_bw.run_rails(tool, rails_params(), sleep=lambda s: None, clock=lambda: next(now))
    assert result["ok"] is True and len([c for c in tool.calls if "mlx5_1" in c]) == 3
    tool = Rails({"mlx5_0": [(0, RESULT, "")], "mlx5_1": [refused]})
    now = iter(range(100))
    result = perftest_bw.run_rails(tool, rails_params(connect_wait=3), sleep=lambda s: None, clock=lambda: next(now))
    assert result["ok"] is False
    assert result["rails"][1]["messages"][0] == "Couldn't connect to 10.0.0.2:18516"


def test_the_cuda_support_is_asked_once_for_every_rail_that_wants_a_gpu():
    cuda_help = (0, " --use_cuda=<cuda device id> Use CUDA specific device for GPUDirect RDMA testing\n", "")
    tool = Rails({"--help": cuda_help, "mlx5_0": [(0, RESULT, "")], "mlx5_1": [(0, RESULT, "")]})
    rails = [{"device": "mlx5_0", "port": 18515, "gpu": 0}, {"device": "mlx5_1", "port": 18516}]
    result = perftest_bw.run_rails(tool, rails_params(rails=rails), sleep=lambda s: None)
    assert tool.calls.count(["--help"]) == 1
    assert [(r["device"], r["gpudirect"], r["cuda_support"]) for r in result["rails"]] == [
        ("mlx5_0", True, True), ("mlx5_1", False, None)]  # fmt: skip
    assert "--use_cuda=0" in next(c for c in tool.calls if "mlx5_0" in c)
    tool = Rails({"mlx5_0": [(0, RESULT, "")], "mlx5_1": [(0, RESULT, "")]})
    perftest_bw.run_rails(tool, rails_params(), sleep=lambda s: None)
    assert ["--help"] not in tool.calls


def test_a_server_rail_does_not_retry():
    tool = Rails({"mlx5_0": [(1, "", NO_DEVICE)], "mlx5_1": [(0, RESULT, "")]})
    result = perftest_bw.run_rails(tool, rails_params(server=None), sleep=lambda s: None)
    assert result["ok"] is False and len(tool.calls) == 2


@pytest.mark.parametrize(
    ("rails", "problem"),
    [
        ([{"device": "mlx5_0; reboot", "port": 18515}], "rails[0].device is 'mlx5_0; reboot'"),
        ([{"device": "mlx5_0", "port": 80}], "rails[0].port is 80: a TCP port from 1024 to 65535"),
        ([{"device": "mlx5_0", "port": "18515"}], "rails[0].port is '18515'"),
        ([{"device": "mlx5_0", "port": 18515, "gpu": -1}], "rails[0].gpu is -1"),
        ([{"device": "mlx5_0", "port": 18515}, {"device": "mlx5_1", "port": 18515}], "rails use a TCP port twice"),
    ],
)
def test_bad_rails_are_refused(rails, problem):
    assert any(p.startswith(problem) for p in perftest_bw.rails_problems(rails))
    assert perftest_bw.rails_problems([{"device": "mlx5_0", "port": 18515, "gpu": 0}]) == []
