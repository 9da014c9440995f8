"""The per-instruction table (memlens.model.instruction_table) on recordings of kernels written for one figure
each (tests/fixtures/programs/memory_kinds.cu, triton_attention_app.py; recorded on an H100 and an H200 by
tests/fixtures/record_kinds.sh). Every figure below was worked out on paper first: the kernel's comment says how.
Each measured loop runs 512 blocks x 8 warps x 16 accesses = 65,536 warp-level executions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import memlens
from memlens.cli import main
from memlens.model.instruction_table import (
    ACCESS_SIZE_BITS,
    RUNTIME_ARRAY,
    SPILL,
    access_width_bits,
    kind_totals,
    local_memory_causes,
)
from memlens.readers import read_report

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
KINDS = FIXTURES / "nvidia_h100_80gb_hbm3" / "kinds"
MEMORY_KINDS = KINDS / "memory_kinds.ncu-rep"
ATTENTION = KINDS / "triton_attention.ncu-rep"
RUNS = 65_536


GPUS = ("nvidia_h100_80gb_hbm3", "nvidia_h200")  # the same recordings on both: the same figures on paper


@pytest.fixture(scope="module", params=GPUS)
def kinds(request):
    path = FIXTURES / request.param / "kinds" / "memory_kinds.ncu-rep"
    return {k.kernel.split("(")[0]: k for k in read_report(path, instructions=True).kernels}


@pytest.mark.parametrize(
    ("kernel", "side", "ways", "per_access"),
    [
        ("atomics_one_bank", "atom", 32.0, 31.0),  # 32 lanes on 32 words of one bank
        ("atomics_spread", "atom", 1.0, 0.0),  # 32 lanes on 32 banks
        ("atomics_same_address", "atom", 1.0, 0.0),  # one word: no conflict
        ("shared_8byte_2way", "ld", 2.0, 2.0),  # half-warp phases, lanes k and k + 8 on one bank pair: 4 over 2
        ("shared_1byte_16way", "ld", 16.0, 15.0),  # 64-byte stride: banks 0 and 16, 16 words each
        ("shared_3way", "ld", 3.0, 2.0),  # word (lane % 3) * 32 + lane / 3: three lanes a bank
    ],
)
def test_shared_kinds_have_their_paper_n_way_and_excess_per_access(kinds, kernel, side, ways, per_access):
    figures = kinds[kernel]
    assert figures.value(f"exact_shared_{side}_ways") == ways
    assert figures.value(f"shared_{side}_executions") == RUNS
    assert figures.value(f"excess_wavefronts_per_shared_{side}") == per_access
    assert figures.value(f"exact_excess_wavefronts_{side}") == per_access * RUNS


def test_shared_atomics_are_not_blended_with_the_kernels_plain_stores(kinds):
    atomics = kinds["atomics_one_bank"]
    assert atomics.value("exact_excess_wavefronts_atom") == 2_031_616  # 31 x 65,536
    assert atomics.value("exact_excess_wavefronts_st") == 0 and atomics.value("shared_st_executions") == 16_384
    assert atomics.value("exact_shared_st_ways") == 1.0


def test_remote_shared_memory_is_named_with_its_executions(kinds, capsys):
    dsmem = kinds["dsmem_partner_read"]
    assert dsmem.value("remote_shared_executions") == RUNS  # 16 distinct partner words a thread
    assert dsmem.value("exact_excess_wavefronts") == 0
    assert main(["lines", str(MEMORY_KINDS), "-k", "dsmem", "--top", "0"]) == 0
    out = capsys.readouterr().out
    assert (
        "memory_kinds.cu:108  distributed shared memory accesses 65,536 executions (ncu records no bank figures"
        " for remote shared memory)  [LD.E]"
    ) in out
    assert "not executed" not in out


def test_local_memory_causes_come_from_the_sass(kinds):
    assert local_memory_causes(kinds["spill_launch_bounds"].instructions) == (SPILL,)
    assert local_memory_causes(kinds["struct_array_runtime_index"].instructions) == (RUNTIME_ARRAY,)
    assert local_memory_causes(kinds["global_coalesced"].instructions) == ()


def test_the_report_names_both_local_memory_causes_and_the_remote_traffic(tmp_path):
    out = tmp_path / "kinds.md"
    assert main(["report", str(MEMORY_KINDS), "--format", "md", "-o", str(out)]) == 0
    text = out.read_text()
    assert "register spill (from the SASS: loads and stores at fixed stack offsets" in text
    assert "array indexed at run time (from the SASS: local addresses computed at run time" in text
    assert "distributed shared memory: 65.5 K warp-level accesses of a cluster partner's shared memory" in text
    assert "cause unknown" not in text
    assert "shared atomics: 32-way bank conflicts, 2.03 M excess wavefronts (31 per shared atomic)" in text
    assert text.count("uncoalesced") == 1  # the strided kernel's loads, and nothing else
    assert "global loads uncoalesced: 32.0 sectors per access, 8.00x the ideal 4.00 of the same accesses" in text


@pytest.mark.parametrize(
    ("kernel", "ratio", "per_access"),
    [
        ("global_coalesced", 1.0, 4.0),
        ("global_strided", 8.0, 32.0),
    ],
)
def test_global_loads_sectors_per_access_against_their_ideal(kinds, kernel, ratio, per_access):
    figures = kinds[kernel]
    assert figures.value("exact_global_ld_coalescing") == ratio
    assert figures.value("exact_global_ld_sectors_per_access") == per_access
    assert figures.value("exact_global_ld_ideal_sectors_per_access") == 4.0  # 32 lanes x 4 consecutive bytes
    assert figures.value("exact_global_st_coalescing") == 1.0


def test_global_atomics_and_reductions_count_as_atomics(kinds):
    atomics = kinds["global_atomics"]
    assert atomics.value("global_atom_executions") == 8_192  # an ATOM and a RED, 4,096 warps each
    assert atomics.value("exact_global_atom_coalescing") == 1.0
    assert atomics.value("global_ld_executions") == 0


def test_an_inlined_atomic_counts_on_the_line_that_calls_it(kinds):
    (atom,) = [r for r in kinds["global_atomics"].instructions if r.opcode.startswith("ATOMG")]
    assert (Path(atom.file).name, atom.line) == ("memory_kinds.cu", 166)
    assert atom.inlined_from is not None and atom.inlined_from.endswith("device_atomic_functions.hpp:112")


@pytest.mark.parametrize("gpu", GPUS)
def test_the_attention_kernel_loading_through_cp_async_is_coalesced(tmp_path, gpu):
    attention = FIXTURES / gpu / "kinds" / "triton_attention.ncu-rep"
    (kernel,) = read_report(attention, instructions=True).kernels
    assert kernel.value("exact_global_ld_coalescing") == 1.0  # every LDG and LDGSTS at its ideal
    cp_async = next(k for k in kind_totals(kernel.instructions) if k.kind.name == "cp.async global reads")
    assert cp_async.sectors == cp_async.sectors_ideal and cp_async.executions
    out = tmp_path / "attention.md"
    assert main(["report", str(attention), "--format", "md", "-o", str(out)]) == 0
    assert "uncoalesced" not in out.read_text()


def test_a_plain_sourcecounters_report_gives_the_same_figures():
    ours = read_report(MEMORY_KINDS).kernels
    plain = read_report(KINDS / "memory_kinds_sourcecounters.ncu-rep").kernels
    keys = (
        "exact_excess_wavefronts_atom",
        "exact_shared_ld_ways",
        "remote_shared_executions",
        "exact_global_ld_coalescing",
        "local_ld_executions",
    )
    assert len(ours) == len(plain) == 12
    for mine, theirs in zip(ours, plain, strict=True):
        assert {key: mine.value(key) for key in keys} == {key: theirs.value(key) for key in keys}


# --- one figure in every output ---------------------------------------------------------------------


def _json(capsys, *argv: str) -> dict:
    assert main(list(argv)) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("path", [MEMORY_KINDS, ATTENTION], ids=lambda p: p.stem)
def test_metrics_lines_report_and_dataframe_give_one_figure(path, capsys, tmp_path):
    metrics = _json(capsys, "metrics", str(path), "--json")["kernels"]
    lines = _json(capsys, "lines", str(path), "--json", "--top", "0")["kernels"]
    report_file = tmp_path / "r.json"
    assert main(["report", str(path), "--format", "json", "-o", str(report_file)]) == 0
    capsys.readouterr()
    report = json.loads(report_file.read_text())["runs"][0]
    rows = {row["kernels"][0]: row for row in report.get("others", []) + report.get("variants", [])}
    frame = memlens.load(path).dataframe()
    compared = 0
    for kernel, by_line in zip(metrics, lines, strict=True):
        for side in ("ld", "st", "atom", "mma"):
            exact = kernel["metrics"][f"exact_excess_wavefronts_{side}"]["value"]
            summed = sum(line[f"shared_{side}"]["excess_wavefronts"] for line in by_line["lines"])
            assert summed == exact, (kernel["kernel"], side)
            ways = kernel["metrics"][f"exact_shared_{side}_ways"]["value"]
            waves = sum(line[f"shared_{side}"]["wavefronts"] for line in by_line["lines"])
            ideal = sum(line[f"shared_{side}"]["ideal"] for line in by_line["lines"])
            assert ways == (waves / ideal if ideal else None)
            compared += 1
        row = rows[kernel["kernel"]]
        assert row["cells"]["exact_excess_wavefronts"]["value"] == sum(
            kernel["metrics"][f"exact_excess_wavefronts_{side}"]["value"] for side in ("ld", "st", "atom", "mma")
        )
        atom = "exact_excess_wavefronts_atom (wavefront)"
        in_frame = frame.loc[frame["launch_id"] == kernel["launch_id"], atom].tolist()
        assert in_frame == [kernel["metrics"]["exact_excess_wavefronts_atom"]["value"]]
    assert compared == 4 * len(metrics) and compared >= 4


# --- properties over every recording -----------------------------------------------------------------

RECORDINGS = sorted(p for p in FIXTURES.rglob("*.ncu-rep") if p.stat().st_size < 4_000_000)


@pytest.mark.parametrize("path", RECORDINGS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_every_n_way_is_within_its_bounds_and_excess_is_n_way_minus_one_times_ideal(path):
    try:
        results = read_report(path, instructions=True)
    except Exception:  # a recording of a failure (tests/fixtures/failures) is not a report of kernels
        pytest.skip("not a readable report of kernels")
    checked = 0
    for kernel in results.kernels:
        for figures in kind_totals(kernel.instructions):
            if figures.ways is None or not figures.executions:
                continue
            assert 1.0 <= figures.ways <= 32.0, (kernel.kernel, figures.kind.name, figures.ways)
            ideal_per_access = figures.ideal / figures.executions
            assert figures.excess_per_access == pytest.approx((figures.ways - 1) * ideal_per_access)
            checked += 1
    assert checked or not any(r.executions for k in results.kernels for r in k.instructions)


# --- aggregates are ratios of sums -----------------------------------------------------------------


def test_a_kernel_launched_twice_keeps_its_n_way_in_the_report(tmp_path):
    # plain ncu, two launches of transpose_conflict at 22.33-way each: the variant is 22.33-way, not 44.7
    out = tmp_path / "plain.md"
    assert main(["report", str(FIXTURES / "nvidia_h200" / "plain_ncu.ncu-rep"), "--format", "md", "-o", str(out)]) == 0
    text = out.read_text()
    assert "22.3-way bank conflicts, 5.76 K excess wavefronts (21.3 per shared load)" in text
    assert "44.7" not in text


def test_five_conflict_free_launches_aggregate_to_one_way():
    from memlens.model.over_launches import aggregate
    from memlens.model.results import KernelResult

    raw = {
        "exact_shared_ld_wavefronts": 4096.0,
        "exact_shared_ld_ideal": 4096.0,
        "exact_excess_wavefronts_ld": 0.0,
        "shared_ld_executions": 1024.0,
    }
    launches = [KernelResult("k", launch_id=i, raw=dict(raw)) for i in range(5)]
    combined = aggregate(launches)
    assert combined.value("exact_shared_ld_ways") == 1.0
    assert combined.value("exact_shared_ld_wavefronts") == 5 * 4096.0
    # an older results.json stored the ratio itself: it is never summed over launches
    old = [KernelResult("k", launch_id=i, raw={"exact_shared_ld_ways": 1.0}) for i in range(5)]
    assert aggregate(old).value("exact_shared_ld_ways") is None
    assert old[0].value("exact_shared_ld_ways") == 1.0


def test_the_line_gate_counts_every_shared_side_as_lines_does(kinds):
    from memlens.model.line_compare import LineFigures
    from memlens.model.source_lines import SourceMap, roll_up

    lines = roll_up(kinds["atomics_one_bank"].instructions, SourceMap(Path.cwd()))
    atomic_line = next(line for line in lines if line.line == 28)
    figures = LineFigures.of(atomic_line)
    assert figures.excess == atomic_line.excess == 2_031_616
    assert figures.value("line_excess_wavefronts") == 2_031_616 and figures.excess_wavefronts_atom == 2_031_616


def test_a_library_kernels_local_memory_is_not_the_users_to_change():
    from memlens.model.instruction_table import InstructionRecord
    from memlens.model.results import KernelResult
    from memlens.reports.verdicts import sass_cause_text

    spill = InstructionRecord(0x10, "LDL.LU R4, [R1+0x8]", "LDL.LU", "local", "ld", 32, executions=64.0)
    cublas = KernelResult("sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x32", instructions=(spill,))
    assert cublas.library is not None and cublas.library.name == "cuBLAS"
    assert sass_cause_text(cublas).endswith("; inside cuBLAS: not yours to change")
    assert sass_cause_text(cublas).startswith("register spill (from the SASS")
    mine = KernelResult("my_kernel(float *)", instructions=(spill,))
    assert mine.library is None and "not yours" not in sass_cause_text(mine)


def test_compare_and_the_line_gate_give_the_figures_metrics_gives(capsys, tmp_path):
    metrics = {k["label"]: k for k in _json(capsys, "metrics", str(MEMORY_KINDS), "--json")["kernels"]}
    compared = _json(capsys, "compare", str(MEMORY_KINDS), str(MEMORY_KINDS), "--json", "--all")
    checked = 0
    for kernel in compared["kernels"]:
        figures = {f["key"]: f for f in kernel["figures"]}
        exact = sum(
            metrics[kernel["label"]]["metrics"][f"exact_excess_wavefronts_{s}"]["value"]
            for s in ("ld", "st", "atom", "mma")
        )
        assert figures["exact_excess_wavefronts"]["head"] == exact
        by_lines = sum(
            line["head"][f"excess_wavefronts_{s}"] or 0.0
            for line in compared["lines"]
            if line["label"] == kernel["label"]
            for s in ("ld", "st", "atom", "mma")
        )
        assert by_lines == exact, kernel["label"]
        checked += 1
    assert checked == 12
    rules = tmp_path / "rules.toml"
    rules.write_text(
        '[[rule]]\nname = "no conflicting line"\nselect = "atomics_*"\nmetric = "line_excess_wavefronts"\nmax = 0\n'
    )
    report = tmp_path / "gate.json"
    assert main(["gate", str(MEMORY_KINDS), "--rules", str(rules), "--json", str(report)]) == 1
    out = capsys.readouterr().out
    assert "memory_kinds.cu:28" in out and "2,031,616" in out  # the atomics' line, with the figure metrics gives


@pytest.mark.parametrize("gpu", GPUS)
def test_access_widths_are_decoded_from_what_ncu_records(gpu):
    """ncu records an 8-bit access as 2 and a 16-bit one as 8 (not bits, unlike 32, 64 and 128): LDG.E.U16
    is 2-byte, LDS.U8 and STS.U8 1-byte."""
    fp16 = read_report(FIXTURES / gpu / "fp16_sourcecounters.ncu-rep", instructions=True).kernels
    wrong = [k for k in fp16 if k.kernel.startswith("memlens_count_wrong")]
    halves = [r for k in wrong for r in k.instructions if r.opcode == "LDG.E.U16"]
    assert halves and {r.width_bits for r in halves} == {16}
    kinds = {
        k.kernel.split("(")[0]: k
        for k in read_report(FIXTURES / gpu / "kinds" / "memory_kinds.ncu-rep", instructions=True).kernels
    }
    bytes_ = kinds["shared_1byte_16way"].instructions
    assert {r.kind.name for r in bytes_ if r.opcode.endswith(".U8")} == {"1-byte shared loads", "1-byte shared stores"}
    assert {r.width_bits for r in kinds["shared_8byte_2way"].instructions if r.opcode == "LDS.64"} == {64}


def test_an_access_size_not_seen_leaves_the_opcodes_width():
    assert access_width_bits(8, 16) == 16 and access_width_bits(2, 8) == 8 and access_width_bits(128, 128) == 128
    assert access_width_bits(16, 16) == 16 and access_width_bits(4, 8) == 8  # S16? S8? not seen: the opcode's
    assert access_width_bits(None, 64) == 64 and access_width_bits(0, 32) == 32  # none recorded; never ran


@pytest.mark.parametrize("gpu", GPUS)
@pytest.mark.parametrize(
    ("variant", "ways"),
    [
        # ldmatrix.x4 rows 64 bytes apart: 4 wavefronts a phase over an ideal of 1 (the side blended it with the
        # conflict-free LDS.128 into 2.5); the cp.async stores 2-way, the stmatrix stores as the ldmatrix loads
        ("dense", {"ldmatrix": 4.0, "shared_loads": 1.0, "stmatrix": 4.0, "cp_async": 2.0}),
        ("pitch128", {"ldmatrix": 8.0, "shared_loads": 2.0, "stmatrix": 8.0, "cp_async": 2.0}),
        ("padded", {"ldmatrix": 1.0, "shared_loads": 2.0, "stmatrix": 1.0, "cp_async": 3.75}),
    ],
)
def test_each_kind_of_shared_access_has_its_own_n_way(gpu, variant, ways):
    kernels = read_report(FIXTURES / gpu / "fp16_sourcecounters.ncu-rep").kernels
    kernel = next(k for k in kernels if k.kernel == f"fp16_transpose_{variant}")
    assert {kind: kernel.value(f"exact_{kind}_ways") for kind in ways} == ways
    for absent in ("shared_stores", "shared_atomics", "tensor_core_reads"):
        assert kernel.value(f"exact_{absent}_ways") is None
    assert kernel.missing_reason("exact_shared_atomics_ways") == "no shared atomics"


def test_a_kernels_atomics_and_stores_each_have_their_n_way(kinds):
    atomics = kinds["atomics_one_bank"]  # 32-way atomics beside the zeroing stores and the reading loads
    assert (atomics.value("exact_shared_atomics_ways"), atomics.value("exact_shared_stores_ways")) == (32.0, 1.0)
    assert (
        atomics.value("exact_shared_atomics_wavefronts") == 32 * RUNS
        and atomics.value("exact_shared_loads_ways") == 1.0
    )


def test_one_sector_a_warp_store_is_one_sector(capsys):
    """A warp's one-lane store (thread 0 writes the block's counter) is 1 sector an access: "1 sectors" before."""
    assert main(["lines", str(MEMORY_KINDS), "-k", "atomics_same_address", "--top", "0"]) == 0
    assert "global stores coalesced (1 sector per access, the ideal)" in capsys.readouterr().out


WIDTHS = sorted(FIXTURES.glob("*/widths/access_widths.ncu-rep"))  # tests/fixtures/record_widths.sh


def recorded_sizes(path: Path) -> dict[tuple[str, int], int]:
    """(opcode, memory_access_size_type) -> the width in bits the opcode's suffix names, of every executed
    instruction of the report that ncu recorded a size for."""
    import ncu_report

    from memlens.model.instruction_kinds import classify

    found = {}
    report = ncu_report.load_report(str(path))
    for r in range(report.num_ranges()):
        for a in range(report.range_by_idx(r).num_actions()):
            action = report.range_by_idx(r).action_by_idx(a)
            metric = action.metric_by_name("memory_access_size_type")
            if metric is None or not metric.num_instances():
                continue
            ids = metric.correlation_ids()
            for i in range(metric.num_instances()):
                size = int(metric.as_uint64(i))
                if size:  # 0: never ran
                    opcode, _, _, width = classify(str(action.sass_by_pc(int(ids.as_uint64(i)))).strip())
                    found[opcode, size] = width
    return found


# every recording with the widths of a test of its own: the widths probe (its signed 8- and 16-bit loads
# included) once recorded, memory_kinds' 1-, 4- and 8-byte accesses, the fp16 suite's 2- and 16-byte ones
SIZED = [
    *WIDTHS,
    *(FIXTURES / gpu / name for gpu in GPUS for name in ("kinds/memory_kinds.ncu-rep", "fp16_sourcecounters.ncu-rep")),
]


@pytest.mark.parametrize("path", SIZED, ids=["/".join(p.parts[-3:]) for p in SIZED])
def test_every_recorded_access_size_decodes_to_its_opcodes_width(path):
    assert_sizes_decode_to_opcode_widths(path)


def assert_sizes_decode_to_opcode_widths(path: Path) -> None:
    """Every value of memory_access_size_type the recording holds is one ACCESS_SIZE_BITS decodes, to the
    width of the opcode's suffix (LDS.S8 and LDS.S16 among them), and the reader gives that width."""
    sizes = recorded_sizes(path)
    assert {opcode.split(".")[0] for opcode, _ in sizes} >= {"LDS", "STS", "LDG", "STG"}
    wrong = {key: width for key, width in sizes.items() if ACCESS_SIZE_BITS.get(key[1]) != width}
    assert not wrong, f"(opcode, ncu's value) -> the opcode's width, not ACCESS_SIZE_BITS': {wrong}"
    for kernel in read_report(path, instructions=True).kernels:
        for record in kernel.instructions:
            if record.executions and record.memory_type:
                assert record.width_bits == [w for (o, _), w in sizes.items() if o == record.opcode][0], record.sass
