"""The GPUs of this host, as nvidia-smi lists them, and the `--gpus all|0,1,...` option.

A GPU is named by nvidia-smi's index (its PCI bus order), and handed to a child process as
CUDA_VISIBLE_DEVICES=<UUID>: the UUID names the same GPU whatever order CUDA enumerates devices in
(CUDA's default order, fastest first, need not be nvidia-smi's), and the child sees it as device 0.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from memlens.errors import ConfigError, ProfilerError
from memlens.io.processes import CommandFailed, run_command

if TYPE_CHECKING:  # a suite run checks --gpus before ncu starts, and imports the results after
    from memlens.model.results import RunResults

SMI_QUERY = ["nvidia-smi", "--query-gpu=index,name,uuid,pci.bus_id", "--format=csv,noheader"]
SMI_TIMEOUT_S = 30.0
ALL = "all"


@dataclass(frozen=True)
class Gpu:
    index: int  # nvidia-smi's index
    name: str  # e.g. NVIDIA H200
    uuid: str  # e.g. GPU-6f0c...
    pci_bus_id: str  # e.g. 00000000:19:00.0

    def __str__(self) -> str:
        return f"GPU {self.index} ({self.name})"

    def environment(self, base: dict[str, str] | None = None) -> dict[str, str]:
        """The environment of a process that must run on this GPU alone."""
        return {**(os.environ if base is None else base), "CUDA_VISIBLE_DEVICES": self.uuid}

    def tag(self, results: RunResults) -> RunResults:
        """`results` with every kernel and variant outcome marked as run on this GPU."""
        kernels = tuple(
            replace(k, gpu_index=self.index, gpu_name=self.name, gpu_uuid=self.uuid) for k in results.kernels
        )
        outcomes = tuple(
            replace(o, gpu_index=self.index, gpu_name=self.name, gpu_uuid=self.uuid) for o in results.outcomes
        )
        return replace(results, kernels=kernels, outcomes=outcomes)


def parse_gpu_list(text: str) -> tuple[Gpu, ...]:
    """nvidia-smi's `index, name, uuid, pci.bus_id` CSV lines (no header) as Gpu records."""
    gpus = []
    for line in text.splitlines():
        parts = [part.strip() for part in line.split(",")]
        if len(parts) != 4 or not parts[0].isdigit():
            continue
        gpus.append(Gpu(int(parts[0]), parts[1], parts[2], parts[3]))
    return tuple(gpus)


def list_gpus(asked_by: str = "--gpus") -> tuple[Gpu, ...]:
    """This host's GPUs; ProfilerError (exit 3) where nvidia-smi cannot list them, its message starting
    with what asked (an option, or a cluster worker)."""
    try:
        done = run_command(SMI_QUERY, timeout=SMI_TIMEOUT_S)
    except CommandFailed as exc:
        raise ProfilerError(f"{asked_by}: cannot list this machine's GPUs ({exc})") from None
    gpus = parse_gpu_list(done.stdout) if done.ok else ()
    if not gpus:
        why = done.failure() if not done.ok else "no output"
        raise ProfilerError(f"{asked_by}: nvidia-smi lists no GPU ({why})")
    return gpus


def parse_gpus_option(text: str) -> tuple[int, ...] | None:
    """`--gpus` as GPU indices in the order given, None for `all`; ConfigError (exit 2) where malformed."""
    if text.strip() == ALL:
        return None
    items = [item.strip() for item in text.split(",")]
    if not items or not all(item.isdigit() for item in items):
        raise ConfigError(f"--gpus {text!r}: expected 'all' or GPU indices such as 0,1")
    indices = tuple(int(item) for item in items)
    if len(set(indices)) != len(indices):
        raise ConfigError(f"--gpus {text!r}: a GPU is named twice")
    return indices


def choose_gpus(text: str, available: tuple[Gpu, ...]) -> tuple[Gpu, ...]:
    """The GPUs `--gpus text` names among `available`; ConfigError naming an unknown index."""
    indices = parse_gpus_option(text)
    if indices is None:
        return available
    by_index = {gpu.index: gpu for gpu in available}
    unknown = [i for i in indices if i not in by_index]
    if unknown:
        have = ", ".join(str(gpu.index) for gpu in available)
        raise ConfigError(f"--gpus {text}: no GPU {unknown[0]} on this machine (its GPUs: {have})")
    return tuple(by_index[i] for i in indices)


def chosen_gpus(text: str | None) -> tuple[Gpu, ...] | None:
    """The GPUs `--gpus text` names (None without --gpus), checked before anything starts: a malformed
    value or an index this machine lacks is a usage error (exit 2)."""
    if text is None:
        return None
    parse_gpus_option(text)
    return choose_gpus(text, list_gpus())
