"""Run results for the report tests, built from the figures of tests/fixtures/probe (an H200,
4096x4096 fp32 transposes and a local-memory running mean at n = 2^20). No tests here."""

from __future__ import annotations

from dataclasses import replace

from memlens.model.ncu_settings import NcuSettings
from memlens.model.results import Expect, KernelResult, RunInfo, RunResults, VariantOutcome

FAST_REASON = "not collected: run without --fast (--fast skips the instrumented pass)"

_COMMON = {
    "dram_read_bytes": 67_113_728.0,
    "dram_write_bytes": 46_854_912.0,
    "shared_ld_instructions": 524_288.0,
    "shared_st_instructions": 524_288.0,
    "local_ld_instructions": 0.0,
    "local_st_instructions": 0.0,
    "local_ld_sectors": 0.0,
    "local_st_sectors": 0.0,
    "registers_per_thread": 28.0,
    "dynamic_shared_per_block": 0.0,
    "grid_size": 16_384.0,
    "block_size": 256.0,
}
CONFLICT = {
    **_COMMON,
    "duration": 85_440.0,
    "dram_pct_of_peak": 27.74,
    "shared_ld_wavefronts": 16_905_672.0,
    "shared_st_wavefronts": 562_491.0,
    "hw_ld_bank_conflicts": 16_381_384.0,
    "hw_st_bank_conflicts": 38_203.0,
    "shared_wavefronts": 17_301_504.0,
    "shared_wavefronts_ideal": 1_048_576.0,
    "static_shared_per_block": 4_096.0,
}
PADDED = {
    **_COMMON,
    "duration": 33_824.0,
    "dram_pct_of_peak": 68.94,
    "shared_ld_wavefronts": 546_099.0,
    "shared_st_wavefronts": 542_708.0,
    "hw_ld_bank_conflicts": 21_811.0,
    "hw_st_bank_conflicts": 18_420.0,
    "shared_wavefronts": 1_048_576.0,
    "shared_wavefronts_ideal": 1_048_576.0,
    "static_shared_per_block": 4_224.0,
}
LOCAL = {
    "duration": 531_840.0,
    "dram_read_bytes": 45_689_600.0,
    "dram_write_bytes": 157_806_080.0,
    "dram_pct_of_peak": 7.95,
    "shared_ld_instructions": 0.0,
    "shared_st_instructions": 0.0,
    "shared_ld_wavefronts": 0.0,
    "shared_st_wavefronts": 0.0,
    "hw_ld_bank_conflicts": 0.0,
    "hw_st_bank_conflicts": 0.0,
    "shared_wavefronts": 0.0,
    "shared_wavefronts_ideal": 0.0,
    "local_ld_instructions": 1_048_576.0,
    "local_st_instructions": 1_048_576.0,
    "local_ld_sectors": 33_554_432.0,
    "local_st_sectors": 33_554_432.0,
    "registers_per_thread": 32.0,
    "static_shared_per_block": 0.0,
    "dynamic_shared_per_block": 0.0,
    "grid_size": 4_096.0,
    "block_size": 256.0,
}
REGISTERS = {
    **LOCAL,
    "duration": 144_000.0,
    "local_ld_instructions": 0.0,
    "local_st_instructions": 0.0,
    "local_ld_sectors": 0.0,
    "local_st_sectors": 0.0,
    "registers_per_thread": 40.0,
}

INFO = RunInfo(
    gpu_name="NVIDIA H200",
    compute_capability="9.0",
    driver_version="580.159.04",
    ncu_version="2025.3.1.0",
    ncu_settings=NcuSettings("none", "all"),
    memlens_command="memlens profile kernels",
    started_at="2026-11-21T23:00:00",
    memlens_version="0.1.0",
    suite="kernels",
)


def kernel(name: str, family: str | None, variant: str | None, raw: dict, launch_id: int = 0) -> KernelResult:
    return KernelResult(name, family, variant, launch_id, dict(raw))


def fast(result: KernelResult) -> KernelResult:
    """The kernel as a --fast run records it: no instrumented wavefronts."""
    raw = {**result.raw, "shared_wavefronts": None, "shared_wavefronts_ideal": None}
    return replace(result, raw=raw, missing={"shared_wavefronts": FAST_REASON, "shared_wavefronts_ideal": FAST_REASON})


def outcome(
    family: str,
    variant: str,
    conflicts: bool | None,
    local: bool | None,
    note: str = "",
    status: str = "ok",
    message: str = "",
    baseline: bool = False,
    demonstrates: str = "",
) -> VariantOutcome:
    return VariantOutcome(
        family,
        variant,
        status,
        message,
        demonstrates or f"what {variant} shows",
        Expect(conflicts, local, note),
        baseline,
    )


def suite_run(info: RunInfo = INFO, **changes: dict) -> RunResults:
    """transpose (conflict baseline, padded) and running_mean (registers baseline, local)."""
    kernels = [
        kernel("void transpose<0>(float *, const float *, int)", "transpose", "conflict", CONFLICT, 1),
        kernel("void transpose<1>(float *, const float *, int)", "transpose", "padded", PADDED, 2),
        kernel("running_mean_registers", "running_mean", "registers", REGISTERS, 3),
        kernel("running_mean_local", "running_mean", "local", LOCAL, 4),
    ]
    kernels = [replace(k, raw={**k.raw, **changes.get(k.variant or "", {})}) for k in kernels]
    outcomes = (
        outcome("transpose", "conflict", True, False, "shared loads: 32-way conflict", baseline=True),
        outcome("transpose", "padded", False, False, "no bank conflicts (padding)"),
        outcome("running_mean", "registers", False, False, baseline=True),
        outcome("running_mean", "local", False, True, "local memory: a 128-byte window per thread"),
    )
    return RunResults(info, tuple(kernels), outcomes)
