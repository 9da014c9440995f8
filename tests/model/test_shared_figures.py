"""The rules behind a kernel's shared-memory figures (profiling/model/shared_figures.py) and the words they
become: exact per-side figures from the per-instruction data whatever the instruction kind, the
hardware counters only as a marked fallback, and a kernel whose only loads are ldmatrix judged as one
(the hardware counter of shared loads reads 0 for LDSM)."""

from __future__ import annotations

from pathlib import Path

from memlens.model import shared_figures
from memlens.model.instruction_kinds import SharedKind
from memlens.model.instruction_table import InstructionRecord, shared_kind_totals
from memlens.model.kernel_lines import KernelLines
from memlens.model.results import KernelResult
from memlens.output.line_listing import kernel_notes, unrecorded_local
from memlens.reports.verdicts import judge

EXECUTIONS = 262_144.0  # warp-level executions of each instruction (65,536 tiles x 4 warps)


def ldmatrix_only(exact: bool = True) -> KernelResult:
    """A kernel whose shared loads are all ldmatrix.x4 at a 64-byte pitch (4-way: 16 wavefronts a
    warp against an ideal of 4) and whose stores are conflict-free STS.128 (4 against 4)."""
    raw: dict[str, float | None] = {
        "shared_ld_instructions": 0.0,
        "shared_st_instructions": EXECUTIONS,  # the hardware counts no LDSM
        "shared_ld_wavefronts": 0.0,
        "shared_st_wavefronts": 4 * EXECUTIONS,
        "shared_wavefronts": 20 * EXECUTIONS,
        "shared_wavefronts_ideal": 8 * EXECUTIONS,
        "local_ld_sectors": 0.0,
        "local_st_sectors": 0.0,
    }
    records: tuple[InstructionRecord, ...] = ()
    if exact:
        raw |= {
            "exact_excess_wavefronts_ld": 12 * EXECUTIONS,
            "exact_excess_wavefronts_st": 0.0,
            "exact_excess_wavefronts_mma": 0.0,
            "exact_shared_ld_ways": 4.0,
            "exact_shared_st_ways": 1.0,
            "exact_shared_mma_ways": None,
            "shared_ld_executions": EXECUTIONS,
            "shared_st_executions": EXECUTIONS,
            "shared_mma_executions": 0.0,
        }
        records = (
            InstructionRecord(
                0x100,
                "LDSM.16.MT88.4 R4, [R2]",
                "LDSM.16.MT88.4",
                "shared",
                "ld",
                128,
                executions=EXECUTIONS,
                wavefronts=16 * EXECUTIONS,
                ideal=4 * EXECUTIONS,
            ),
            InstructionRecord(
                0x200,
                "STS.128 [R3], R8",
                "STS.128",
                "shared",
                "st",
                128,
                executions=EXECUTIONS,
                wavefronts=4 * EXECUTIONS,
                ideal=4 * EXECUTIONS,
            ),
        )
    return KernelResult("ldsm_only", "tile", "dense", raw=raw, instructions=records)


def test_the_n_way_and_the_per_load_figure_of_ldmatrix_loads_are_exact() -> None:
    kernel = ldmatrix_only()
    assert shared_figures.n_way(kernel, "ld") == shared_figures.Figure(4.0, True)
    assert shared_figures.excess_per_access(kernel, "ld") == shared_figures.Figure(12.0, True)
    assert shared_figures.accesses(kernel, "st") == shared_figures.Figure(EXECUTIONS, True)
    assert shared_figures.conflicting_sides(kernel) == ["ld"]
    # the exact pass ran and found no tensor-core operand read: no figure, and the reason says so
    assert shared_figures.n_way(kernel, "mma") == shared_figures.Figure(
        None, True, "no shared-memory tensor-core operand reads"
    )


def test_a_kernel_of_ldmatrix_loads_gets_its_verdict_not_a_division_by_zero() -> None:
    shared = next(f for f in judge(ldmatrix_only()).findings if f.topic == "shared")
    assert shared.severity == "bad"
    # the rule the fix must meet is the sentence's detail, shown once under the table (issue 48)
    assert shared.text == "ldmatrix loads: 4-way bank conflicts, 3.15 M excess wavefronts (12 per ldmatrix load)"
    assert any(d.startswith("ldmatrix is served one 8x8 matrix at a time") for d in shared.details)


def test_without_the_exact_pass_the_hardware_figure_is_a_marked_fallback() -> None:
    kernel = ldmatrix_only(exact=False)
    loads = shared_figures.n_way(kernel, "ld")  # the hardware counted no load instruction: nothing to divide
    assert loads.value is None and not loads.exact and "counts no ldmatrix" in (loads.note or "")
    stores = shared_figures.n_way(kernel, "st")  # 4 wavefronts per conflict-free STS.128, by the hardware
    assert stores == shared_figures.Figure(4.0, False, shared_figures.hw_ways_note(kernel, "st")) and stores.fallback
    assert stores.note.startswith(shared_figures.HW_WAYS + " (no exact n-way: ")  # the report's own reason
    count = shared_figures.accesses(kernel, "st")
    assert count.value == EXECUTIONS and count.fallback and count.note == shared_figures.FALLBACK


def test_a_report_without_per_instruction_local_counts_says_so() -> None:
    kernel = KernelResult(
        "running_mean_local", raw={"local_ld_instructions": 16_252_928.0, "local_st_instructions": 16_777_216.0}
    )
    said = unrecorded_local(kernel)
    assert said is not None and said.startswith(
        "this report holds no per-instruction local-memory counts, though "
        "the kernel executed 33,030,144 local load and store instructions"
    )
    assert kernel_notes(KernelLines(kernel, (), False), ()) == [said]
    ran_none = KernelResult("k", raw={"local_ld_instructions": 0.0, "local_st_instructions": 0.0})
    assert unrecorded_local(ran_none) is None


# --- the recorded Triton matmuls (H100): cp.async + wgmma, and TMA + wgmma --------------------------

TRITON = Path(__file__).resolve().parents[1] / "fixtures" / "nvidia_h100_80gb_hbm3" / "programs"
TRITON = TRITON / "triton_matmul.ncu-rep"


def test_triton_matmuls_name_cp_async_tensor_core_reads_and_tma() -> None:
    from memlens.readers import read_report
    from memlens.reports.hot_lines import tma_findings

    kernels = {k.label: k for k in read_report(TRITON, instructions=True).kernels}
    cp_async, tma = kernels["matmul/cp_async"], kernels["matmul/tma"]
    # the excess is the cp.async's (LDGSTS), over the executions of every store instruction, not the
    # hardware's 4,096 STS alone (which gave 33 per store)
    assert cp_async.value("exact_excess_wavefronts_st") == 135_168 and cp_async.value("shared_st_executions") == 73_728
    assert cp_async.value("shared_st_instructions") == 4_096
    assert shared_figures.excess_per_access(cp_async, "st") == shared_figures.Figure(135_168 / 73_728, True)
    found = judge(cp_async).findings
    texts = [f.text for f in found]
    # the cp.async kind's own figures, not the store side's blend with its conflict-free STS.128 (1.46-way,
    # 1.83 per store): 24 LDGSTS, 413,696 wavefronts over an ideal of 278,528 in 69,632 executions
    assert texts[0] == "cp.async stores: 1.49-way bank conflicts, 135 K excess wavefronts (1.94 per cp.async store)"
    assert any(d.startswith("16-byte accesses are served a quarter-warp") for d in found[0].details)
    assert "tensor-core operand reads: conflict-free (1-way), over 32.8 K executions" in texts
    assert tma.value("exact_shared_mma_ways") == 1.0 and tma.value("shared_mma_executions") == 32_768
    (said,) = tma_findings([tma])
    assert said.text.startswith("TMA transfers, executions by line: ") and said.severity == "unknown"
    assert "triton_matmul_app.py:37 (8.70 K)" in said.text and "triton_matmul_app.py:38 (8.70 K)" in said.text
    assert "ncu counts no shared-memory wavefronts for the copy engine" in said.text
    assert tma_findings([cp_async]) == ()


def test_a_tensor_core_matmul_is_not_called_free_of_floating_point_work() -> None:
    from memlens.readers import read_report
    from memlens.reports.roofline import verdict

    kernel = next(k for k in read_report(TRITON).kernels if k.label == "matmul/tma")
    assert kernel.value("flops") == 0  # the FLOP counters do not count wgmma
    said = verdict(kernel, None)
    assert said is not None and said.severity == "unknown"
    assert said.text == (
        "roofline: not placed: its floating-point work runs on tensor cores (wgmma), which "
        "memlens's FLOP counters do not count"
    )


def test_each_kind_has_its_n_way_and_shared_loads_and_stores_fall_back_on_the_hardware() -> None:
    exact = ldmatrix_only()  # a results.json written before the kinds' figures: summed from its instructions
    exact = KernelResult(
        "k", raw={**exact.raw, **shared_kind_totals(exact.instructions)}, instructions=exact.instructions
    )
    assert shared_figures.kind_n_way(exact, SharedKind.LDMATRIX) == shared_figures.Figure(4.0, True)
    assert shared_figures.kind_n_way(exact, SharedKind.STORES) == shared_figures.Figure(1.0, True)
    assert shared_figures.kind_n_way(exact, SharedKind.LOADS) == shared_figures.Figure(None, True, "no shared loads")
    fast = ldmatrix_only(exact=False)  # no exact pass: the hardware's wavefronts per store, marked a fallback
    assert shared_figures.kind_n_way(fast, SharedKind.STORES) == shared_figures.Figure(
        4.0, False, shared_figures.hw_ways_note(fast, "st")
    )
    assert shared_figures.kind_n_way(fast, SharedKind.LDMATRIX).value is None
