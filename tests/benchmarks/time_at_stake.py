"""Time at stake against the time fixes saved: for each fix recorded before and after (the built-in suite's and
tests/fixtures/programs/stake_probe.cu's), the "before" kernel's time at stake and the share of its time the fix
saved, on each GPU's recording. The bound holds where the stake is at least the saving, within the timing noise
of the two durations (one ncu launch each, each within model/noise.TIMING_FLOOR); it is tight where it is at most
1.5x the saving or 15 points above it (issue 48); a last column allows the saving the same noise upwards.
Where tests/fixtures/<gpu>/copy/bench.json holds the GPU's measured copy (tests/fixtures/record_copy.sh), the
stakes take DRAM bytes at it (the DRAM ceiling the run's bench.json gives `memlens lines` and the report),
each recording of the GPU sharing it; else at the peak. Prints a table (Markdown) for docs/time-at-stake.md.

    python tests/benchmarks/time_at_stake.py
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from memlens.bench.results import BenchResults, copy_ceiling, load_bench  # noqa: E402
from memlens.model.kernel_lines import kernel_lines  # noqa: E402
from memlens.model.noise import TIMING_FLOOR  # noqa: E402
from memlens.model.results import KernelResult  # noqa: E402
from memlens.model.time_at_stake import DramCeiling, kernel_floor, kernel_stake, lines_stake  # noqa: E402
from memlens.readers import read_lines  # noqa: E402

FIXTURES = REPO / "tests" / "fixtures"
COPY = "the measured copy bandwidth"
GPUS = {"nvidia_h100_80gb_hbm3": "H100", "nvidia_h200": "H200"}


@dataclass(frozen=True)
class Fix:
    recording: str  # under tests/fixtures/<gpu>/
    before: str  # the kernel's label
    after: str
    finding: str  # "lines": the before kernel's lines together; "kernel": its headroom (a rewrite)
    what: str


FIXES = (
    Fix("suite.results.json", "transpose/conflict", "transpose/padded", "lines", "32-way fp32 transpose, padded"),
    Fix("suite.results.json", "fp16_transpose/dense", "fp16_transpose/xor_row", "lines", "ldmatrix 4-way, swizzled"),
    Fix("suite.results.json", "running_mean/local", "running_mean/register", "lines", "local array -> registers"),
    Fix("suite.results.json", "matmul/naive", "matmul/tiled", "kernel", "naive matmul -> tiled"),
    Fix("stake/stake_probe.results.json", "colsum<0>", "colsum<1>", "lines", "16-way 8-byte column, padded"),
    Fix("stake/stake_probe.results.json", "atom<8>", "atom<1>", "lines", "8-way shared atomics, spread"),
    Fix("stake/stake_probe.results.json", "fma<2>", "fma<1>", "lines", "2-way read in FMA-bound loop"),
    Fix("stake/stake_probe.results.json", "window<1>", "window<0>", "lines", "local array -> registers"),
    Fix("stake/stake_probe.results.json", "gather<1>", "gather<0>", "lines", "uncoalesced column read"),
)


@dataclass(frozen=True)
class Checked:
    gpu: str
    fix: Fix
    saving: float
    stake: float
    ceiling: str  # the DRAM the before kernel's floor took: "peak", "the measured copy bandwidth, 4,217 GB/s"

    @property
    def noise(self) -> float:
        """How far the saving may be off: after / before, each duration within TIMING_FLOOR."""
        return (1.0 - self.saving) * 2 * TIMING_FLOOR

    @property
    def holds(self) -> bool:
        return self.stake >= self.saving - self.noise

    @property
    def tight(self) -> bool:
        return within_band(self.stake, self.saving)

    @property
    def tight_within_noise(self) -> bool:
        """Tight against the saving as far up as its noise goes (as `holds` allows it as far down)."""
        return within_band(self.stake, self.saving + self.noise)


def within_band(stake: float, saving: float) -> bool:
    """Issue 48's band: a stake at most 1.5x the saving, or at most 15 points above it."""
    return stake <= max(1.5 * saving, saving + 0.15)


def _kernel(kernels: list[KernelResult], name: str) -> KernelResult:
    found = [k for k in kernels if k.label == name or k.kernel.startswith(f"void {name}(")]
    if len(found) != 1:
        raise LookupError(f"{len(found)} kernels named {name}")
    return found[0]


def measured_copy(folder: str) -> BenchResults | None:
    """The GPU's measured copy (tests/fixtures/<gpu>/copy/bench.json), None where it was not recorded."""
    path = FIXTURES / folder / "copy" / "bench.json"
    return load_bench(path) if path.exists() else None


def ceiling_of(folder: str, recording: str) -> DramCeiling | None:
    """The DRAM ceiling of one recording: its GPU's measured copy, raised to its fastest kernel's DRAM throughput."""
    bench = measured_copy(folder)
    results = read_lines(str(FIXTURES / folder / recording))
    ceiling = copy_ceiling(bench, results)
    if bench is not None and ceiling is None:
        raise LookupError(f"{folder}/copy/bench.json was timed on {bench.info.gpu_name}, not {results.info.gpu_name}")
    return ceiling


def checked() -> list[Checked]:
    out = []
    for folder, gpu in GPUS.items():
        for fix in FIXES:
            path = FIXTURES / folder / fix.recording
            if not path.exists():
                continue
            results = read_lines(str(path))
            kernels = list(results.kernels)
            ceiling = ceiling_of(folder, fix.recording)
            before, after = _kernel(kernels, fix.before), _kernel(kernels, fix.after)
            saving = 1.0 - (after.value("duration") or 0.0) / (before.value("duration") or 1.0)
            if fix.finding == "kernel":
                stake = kernel_stake(before, ceiling)
            else:
                entry = kernel_lines(results, [before], REPO, ceiling)[0]
                stake = lines_stake(before, entry.lines, results.info.compute_capability, ceiling)
            if stake is None:
                raise LookupError(f"no time at stake for {fix.before} on {gpu}")
            out.append(Checked(gpu, fix, saving, stake.fraction, kernel_floor(before, ceiling).dram_at))
    return out


def main() -> int:
    print(
        "| GPU | fix | before -> after | saved (noise) | time at stake | DRAM ceiling | bound holds "
        "| within 1.5x or +15 points | the same, the saving's noise allowed |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for c in checked():
        print(
            f"| {c.gpu} | {c.fix.what} | {c.fix.before} -> {c.fix.after} | {100 * c.saving:.1f}% "
            f"(±{100 * c.noise:.1f}) | {100 * c.stake:.1f}% | {c.ceiling.replace(COPY, 'copy')} "
            f"| {'yes' if c.holds else 'NO'} | {'yes' if c.tight else 'no'} "
            f"| {'yes' if c.tight_within_noise else 'no'} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
