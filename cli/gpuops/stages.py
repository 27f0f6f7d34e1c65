"""The stages of playbooks/site.yml as the command knows them: their order, the tag that picks each out of site.yml,
and the name of the play that runs each (what ansible-runner's events carry)."""

from __future__ import annotations

# (tag, what an operator reads, the stage's play), in site.yml's order. The NVIDIA Container Toolkit runs inside the
# Kubernetes node stage's play (once containerd is there): in site.yml it is part of that stage.
STAGES = (
    ("baseline", "OS baseline", "Stage 1: OS baseline"),
    ("driver", "NVIDIA driver", "Stage 2: NVIDIA driver"),
    ("cuda_toolkit", "CUDA toolkit", "Stage 2: CUDA toolkit"),
    ("rdma_fabric", "RDMA fabric", "Stage 3: RDMA fabric"),
    ("k8s_node", "Kubernetes node", "Stage 4: Kubernetes node"),
    ("nccl_tests", "NCCL tests", "Acceptance: NCCL tests"),
    ("acceptance", "Acceptance", "Stage 5: acceptance"),
)
TAGS = tuple(tag for tag, _title, _play in STAGES)
TITLES = {tag: title for tag, title, _play in STAGES}
BY_PLAY = {play: tag for tag, _title, play in STAGES}


class StageError(ValueError):
    """A stage name the command does not know."""


def selected(names):
    """The stages of names (tags, in any order, each once) in site.yml's order; all of them when names is empty."""
    unknown = [n for n in names or () if n not in TAGS]
    if unknown:
        raise StageError(f"unknown stage {unknown[0]!r}: the stages are {', '.join(TAGS)}")
    chosen = set(names or TAGS)
    return [tag for tag in TAGS if tag in chosen]


def from_stage(stage, among):
    """The stages of among from stage on (site.yml's order): what a resumed node still has to run."""
    order = [tag for tag in TAGS if tag in among]
    return order[order.index(stage) :] if stage in order else order


def tags(stages):
    """The --tags value that runs these stages of site.yml."""
    return ",".join(stages)
