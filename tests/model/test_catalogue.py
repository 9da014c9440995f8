"""profiling/model/catalogue.py: every metric under its key with its unit, and the names memlens asks ncu for."""

from __future__ import annotations

import pytest

from memlens.model.catalogue import (
    BY_NCU_NAME,
    CATALOGUE,
    DERIVED_METRICS,
    DEVICE_ATTRIBUTES,
    NCU_ALIASES,
    PER_INSTRUCTION_METRICS,
    PER_PC_METRICS,
    RAW_METRICS,
    derive_all,
    lookup,
    ncu_metric_names,
)
from memlens.model.results import KernelResult

# --- keys, units and ncu names -----------------------------------------------------------------------


def test_every_raw_metric_has_an_ncu_name_the_readers_look_up() -> None:
    assert {m.ncu for m in RAW_METRICS} == set(BY_NCU_NAME)
    assert all(m.key in CATALOGUE for m in RAW_METRICS)


def test_every_figure_comes_back_under_its_key_with_the_catalogues_unit() -> None:
    # per-instruction: 4 shared sides x 4 sums, 7 kinds of shared access x 2 sums, 3 global sides x 3 sums,
    # remote shared, local ld and st; derived from them: an n-way and an excess per access a shared side, an
    # n-way a kind, 3 ratios a global side. Tensor cores (issue 45): 21 paths' operations and peaks a cycle,
    # ncu's sections' DRAM rate; per precision (5 + int8), their total and rate, and total_flops
    # and the GPU's SM count, a device attribute (time at stake, issue 48)
    assert (len(RAW_METRICS), len(DERIVED_METRICS), len(PER_INSTRUCTION_METRICS)) == (
        43 + 2 * 21 + 1 + 1,
        19 + 8 + 7 + 9 + 6 + 8 + 1,
        42,
    )
    assert len(CATALOGUE) == 87 + 58 + 42  # no key used twice
    kernel = KernelResult("k", raw={m.key: 2.0 for m in RAW_METRICS})
    for key, metric in CATALOGUE.items():
        assert metric.key == key and lookup(key) is metric
        measured = kernel.metric(key)
        assert (measured.key, measured.unit) == (key, metric.unit)
    units = {key: CATALOGUE[key].unit for key in ("duration", "dram_bandwidth", "local_bytes", "exact_shared_ld_ways")}
    assert units == {
        "duration": "ns",
        "dram_bandwidth": "byte/second",
        "local_bytes": "byte",
        "exact_shared_ld_ways": "wavefront/ideal",
    }


def test_an_ncu_name_is_the_one_asked_for_then_its_aliases() -> None:
    loads = CATALOGUE["shared_ld_instructions"]
    assert loads.ncu_names == (
        "smsp__inst_executed_op_shared_ld.sum",
        "smsp__sass_inst_executed_op_shared_ld.sum",
        "sass__inst_executed_shared_loads",
    )
    assert len(NCU_ALIASES) == 4 and all(alias in NCU_ALIASES[alias].ncu_names[1:] for alias in NCU_ALIASES)
    assert all(BY_NCU_NAME[m.ncu] is m and m.ncu_names[0] == m.ncu for m in RAW_METRICS)
    assert all(m.ncu is None and m.ncu_names == () for m in (*DERIVED_METRICS, *PER_INSTRUCTION_METRICS))


def test_lookup_suggests_the_closest_keys() -> None:
    assert lookup("local_bytes") is CATALOGUE["local_bytes"]
    with pytest.raises(KeyError, match=r"unknown metric 'local_byte' \(did you mean local_bytes, local_st_bytes"):
        lookup("local_byte")
    with pytest.raises(KeyError, match=r"^\"unknown metric 'zzz'\"$"):
        lookup("zzz")


def test_derived_figures_follow_their_formulas() -> None:
    raw = {
        "duration": 2000.0,
        "dram_read_bytes": 1e6,
        "dram_write_bytes": 1e6,
        "local_ld_sectors": 3.0,
        "local_st_sectors": 1.0,
        "shared_wavefronts": 3300.0,
        "shared_wavefronts_ideal": 100.0,
    }
    derived = derive_all(raw)
    assert len(derived) == 58 and set(derived) == {m.key for m in DERIVED_METRICS}
    assert derived["dram_bandwidth"] == pytest.approx(2e6 / 2e-6)  # (read + write) / (duration * 1e-9)
    assert (derived["dram_bytes"], derived["local_bytes"], derived["local_ld_bytes"]) == (2e6, 128.0, 96.0)
    assert derived["exact_excess_wavefronts"] == 3200.0
    assert derived["flops"] is None and derived["shared_ld_ways"] is None  # their inputs are missing
    assert derive_all({**raw, "duration": 0.0})["dram_bandwidth"] is None  # no division by zero


# --- what memlens asks ncu for -------------------------------------------------------------------------


def test_catalogue_asks_ncu_for_the_costly_counters_with_roofline_only() -> None:
    roofline = ncu_metric_names(fast=True, roofline=True)
    default = ncu_metric_names()
    for free in (
        "dram__bytes.sum.peak_sustained",
        "sm__cycles_elapsed.avg.per_second",
        "smsp__inst_executed_op_global_ld.sum",
        "lts__t_sector_hit_rate.pct",
    ):
        assert free in default and free in roofline
    costly_ones = (
        "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum",
        "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    )
    for costly in costly_ones:
        assert costly in roofline and costly not in default
    assert CATALOGUE["flops"].formula == "flops_fp32 + flops_fp64"


def test_memlens_asks_ncu_for_per_instruction_executions_unless_fast():
    assert "inst_executed" in ncu_metric_names()
    assert "inst_executed" not in ncu_metric_names(fast=True)


def test_the_metrics_list_by_fast_and_roofline() -> None:
    counts = {
        (fast, roofline): len(ncu_metric_names(fast, roofline)) for fast in (False, True) for roofline in (False, True)
    }
    # not --fast: inst_executed and the 6 per-instruction memory metrics (PER_PC_METRICS)
    # --roofline: the FLOP and L1 global-sector counters, and 21 tensor-core paths' operations and peaks (issue 45)
    # every list: the SM count (device__attribute_multiprocessor_count: time at stake, issue 48)
    assert counts == {(False, False): 43, (True, False): 34, (False, True): 54 + 42, (True, True): 45 + 42}
    for fast in (False, True):
        for roofline in (False, True):
            names = ncu_metric_names(fast, roofline)
            assert len(set(names)) == len(names)  # each once
            assert names[-3:] == list(DEVICE_ATTRIBUTES.values())
    instrumented = {m.ncu for m in RAW_METRICS if m.instrumented}
    assert len(instrumented) == 2 and instrumented <= set(ncu_metric_names()) - set(ncu_metric_names(fast=True))
    assert ncu_metric_names()[-10:-3] == list(PER_PC_METRICS) and PER_PC_METRICS[0] == "inst_executed"


def test_each_figure_says_how_it_varies_between_runs():
    """Counts are exact; durations and what moves with them (rates, clocks, % of peak) timed; the rest
    counters with a noise fraction of their own (model/noise.py)."""
    from memlens.model.catalogue import CATALOGUE

    timed = {k for k, m in CATALOGUE.items() if m.variation == "timed"}
    assert timed == {
        "duration",
        "dram_pct_of_peak",
        "dram_bandwidth",
        "flop_rate",
        "sm_clock",
        "dram_clock",
        "peak_flops_fp32",
        "peak_flops_fp64",
        "peak_flops_fp16",
        "peak_dram_bandwidth",
        "tensor_flop_rate",
        "dram_throughput",
    }
    counters = {k: m.noise for k, m in CATALOGUE.items() if m.variation == "counter"}
    assert counters == {
        "dram_read_bytes": 0.05,
        "dram_write_bytes": 0.05,
        "dram_bytes": 0.05,
        "shared_ld_wavefronts": 0.05,
        "shared_st_wavefronts": 0.05,
        "shared_ld_ways": 0.05,
        "shared_st_ways": 0.05,
        "l2_sectors_from_l1": 0.05,
        "l2_bytes": 0.05,
        "arithmetic_intensity": 0.05,
        "arithmetic_intensity_l2": 0.05,
        "hw_ld_bank_conflicts": 0.25,
        "hw_st_bank_conflicts": 0.25,
        "hw_bank_conflicts": 0.25,
        "l1_hit_rate": 0.15,
        "l2_hit_rate": 0.15,
    }
    exact = {k for k, m in CATALOGUE.items() if m.variation == "exact"}
    for key in (
        "exact_excess_wavefronts",
        "local_bytes",
        "registers_per_thread",
        "flops",
        "grid_size",
        "global_load_sectors",
        "peak_ffma_per_cycle",
        "l1_global_bytes",
        "arithmetic_intensity_l1",
        "exact_shared_ld_ways",
        "exact_global_st_coalescing",
        "excess_wavefronts_per_shared_ld",
    ):
        assert key in exact
    assert all(not (m.deterministic and m.timed) for m in CATALOGUE.values())
