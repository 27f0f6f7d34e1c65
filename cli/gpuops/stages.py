"""The stages of playbooks/site.yml as the command knows them: their order, the tag that picks each out of site.yml,
and the name of the play that runs each (what ansible-runner's events carry)."""

from __future__ import annotations

# (tag, what an operator reads, the stage's play), in site.yml's order. A stage's tag is its role's and its
# playbook's name. The NVIDIA Container Toolkit runs inside the Kubernetes node stage's play (once containerd is
# there): in site.yml it is part of that stage.
STAGES = (
    ("os_baseline", "OS baseline", "Stage 1: OS baseline"),
    ("nvidia_driver", "NVIDIA driver", "Stage 2: NVIDIA driver"),
    ("cuda_toolkit", "CUDA toolkit", "Stage 2: CUDA toolkit"),
    ("rdma_fabric", "RDMA fabric", "Stage 3: RDMA fabric"),
    ("k8s_node", "Kubernetes node", "Stage 4: Kubernetes node"),
    ("nccl_tests", "NCCL tests", "Acceptance: NCCL tests"),
    ("acceptance", "Acceptance", "Stage 5: acceptance"),
)
TAGS = tuple(tag for tag, _title, _play in STAGES)
TITLES = {tag: title for tag, title, _play in STAGES}
BY_PLAY = {play: tag for tag, _title, play in STAGES}
# The stages' names before each had one name (its role's), deprecated: the command takes them (with a notice), and
# runs recorded with them resume; they go in gpuops.bringup 1.0.0.
ALIASES = {"baseline": "os_baseline", "driver": "nvidia_driver"}
REMOVAL = "1.0.0"


class StageError(ValueError):
    """A stage name the command does not know."""


def canonical(name):
    """The stage's name for name, an old (deprecated) name or the name itself."""
    return ALIASES.get(name, name)


def deprecations(names):
    """A notice for each old stage name among names (each once, in their order)."""
    return [
        f"stage {name!r} is deprecated: its name is now {ALIASES[name]!r} (the old name goes in gpuops.bringup "
        f"{REMOVAL})"
        for name in dict.fromkeys(names or ())
        if name in ALIASES
    ]


def selected(names):
    """The stages of names (tags or old names, in any order, each once) in site.yml's order; all of them when names
    is empty."""
    names = [canonical(n) for n in names or ()]
    unknown = [n for n in names if n not in TAGS]
    if unknown:
        raise StageError(f"unknown stage {unknown[0]!r}: the stages are {', '.join(TAGS)}")
    chosen = set(names or TAGS)
    return [tag for tag in TAGS if tag in chosen]


def from_stage(stage, among):
    """The stages of among from stage on (site.yml's order): what a resumed node still has to run. Old names in
    either (a run recorded before the stages were renamed) are read as the stages' names."""
    among = {canonical(s) for s in among}
    order = [tag for tag in TAGS if tag in among]
    stage = canonical(stage)
    return order[order.index(stage) :] if stage in order else order


def tags(stages):
    """The --tags value that runs these stages of site.yml."""
    return ",".join(stages)
