"""Every kernel of the suite compiles for sm_90 on a machine with no GPU: the .cu files with
nvcc and with NVRTC (memlens.static.toolchain), the Numba kernels with numba.cuda.compile_ptx; and
ptxas's report agrees with what each variant declares (shared tile sizes, local memory)."""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

import pytest
from numba import cuda

from memlens.errors import ProfilerError
from memlens.static import toolchain
from memlens.suite import CudaKernel, NumbaKernel, Variant, load_suite

# One worker compiles every kernel once per compiler: under pytest-xdist each worker would do it again.
pytestmark = pytest.mark.xdist_group("kernels_compile")

KERNELS = Path(__file__).resolve().parents[2] / "kernels"
SUITE = load_suite(KERNELS)
CUDA_VARIANTS = [v for v in SUITE.variants() if any(isinstance(k, CudaKernel) for k in v.kernels)]
NUMBA_VARIANTS = [v for v in SUITE.variants() if any(isinstance(k, NumbaKernel) for k in v.kernels)]

SPILLS = {"running_mean_spill"}  # capped by __launch_bounds__: ptxas spills, the PTX has no .local
SHARED_BYTES = {  # static shared memory per block, from each kernel's tile declarations
    "transpose_conflict": 32 * 32 * 4,
    "transpose_padded": 32 * 33 * 4,
    "transpose_swizzled": 32 * 32 * 4,
    "transpose_tile64_padded": 64 * 65 * 4,
    "transpose_tile64_swizzled": 64 * 64 * 4,
    "transpose_vec4_padded": 64 * 68 * 4,
    "transpose_vec4_swizzled": 64 * 64 * 4,
    "running_mean_register": 0,
    "running_mean_local": 0,
    "running_mean_spill": 0,
    "matmul_pmpp<16>": 2 * 16 * 16 * 4,
    # two fp16 tiles S and U a block: 64-byte rows, 128-byte rows, 80-byte rows, swizzled 64-byte rows
    "fp16_transpose_dense": 2 * 32 * 64,
    "fp16_transpose_pitch128": 2 * 32 * 128,
    "fp16_transpose_padded": 2 * 32 * 80,
    "fp16_transpose_xor_row": 2 * 32 * 64,
    "fp16_transpose_xor_128b": 2 * 32 * 64,
    # two 64 x 64 fp16 tiles SA and SB a block: 128-byte rows, 144-byte rows, swizzled 128-byte rows
    "tensor_matmul_conflict": 2 * 64 * 128,
    "tensor_matmul_padded": 2 * 64 * 144,
    "tensor_matmul_swizzled": 2 * 64 * 128,
}


def _names_by_source() -> dict[Path, list[CudaKernel]]:
    found: dict[Path, list[CudaKernel]] = defaultdict(list)
    for variant in CUDA_VARIANTS:
        for kernel in variant.kernels:
            if isinstance(kernel, CudaKernel):
                found[Path(kernel.source)].append(kernel)
    return found


@pytest.fixture(scope="module", params=["nvcc", "nvrtc"])
def compiled(request: pytest.FixtureRequest) -> dict[Path, toolchain.CompiledCuda]:
    if request.param == "nvcc" and toolchain.find_nvcc() is None:
        pytest.skip(
            "no nvcc on PATH, in $CUDA_HOME, $CUDA_PATH, /usr/local/cuda or a pip wheel "
            "(nvidia-cuda-nvcc-cu12 12.9 ships ptxas but no nvcc)"
        )
    if request.param == "nvrtc" and toolchain.nvrtc_version() is None:
        pytest.skip("NVRTC cannot be loaded: pip install nvidia-cuda-nvrtc-cu12")
    compile_with = toolchain.compile_nvcc if request.param == "nvcc" else toolchain.compile_nvrtc
    result = {}
    for source, kernels in _names_by_source().items():
        options = kernels[0].options
        result[source] = compile_with(source, "sm_90", options, [k.name for k in kernels])
    return result


def _entry_ptx(ptx: str, symbol: str) -> str:
    """The PTX of one entry function, up to the next one."""
    start = ptx.index(f".entry {symbol}(")
    end = ptx.find(".entry ", start + 1)
    return ptx[start : end if end > 0 else len(ptx)]


def test_every_cu_kernel_is_found(compiled: dict[Path, toolchain.CompiledCuda]) -> None:
    assert set(_names_by_source()) == set(KERNELS.glob("*.cu"))  # every .cu file of the suite
    assert set(_names_by_source()) == set(KERNELS.glob("*.cu"))  # every .cu file of the suite
    for source, kernels in _names_by_source().items():
        build = compiled[source]
        assert build.arch == "sm_90" and build.cubin[:4] == b"\x7fELF", build.compiler
        for kernel in kernels:
            build.kernel(kernel.name)  # raises if ptxas made no such entry


@pytest.mark.parametrize("variant", CUDA_VARIANTS, ids=lambda v: v.label)
def test_resources_match_the_declared_expectation(
    compiled: dict[Path, toolchain.CompiledCuda], variant: Variant
) -> None:
    assert variant.kernels, variant.label
    for kernel in variant.kernels:
        build = compiled[Path(kernel.source)]
        resources = build.kernel(kernel.name)
        assert resources.shared_bytes == SHARED_BYTES[kernel.name]
        spills = kernel.name in SPILLS
        assert (resources.spill_store_bytes > 0 and resources.spill_load_bytes > 0) == spills, resources
        assert resources.uses_local_memory == variant.expect.local_memory, (kernel.name, resources)
        body = _entry_ptx(build.ptx, build.symbols.get(kernel.name, kernel.name))
        assert ("ld.local" in body) == (variant.expect.local_memory and not spills)
        if variant.expect.local_memory and not spills:
            assert resources.stack_bytes >= 32 * 4  # the whole 32-float window
        if spills:
            assert resources.registers == 32 and "spill" in variant.expect.note  # 65,536 / (256 x 8)


@pytest.mark.parametrize("variant", NUMBA_VARIANTS, ids=lambda v: v.label)
def test_numba_kernels_compile_for_sm90_in_fp32(variant: Variant) -> None:
    assert variant.kernels, variant.label
    for kernel in variant.kernels:
        ptx, _ = cuda.compile_ptx(kernel.function, kernel.signature, cc=(9, 0))
        assert ".target sm_90" in ptx
        assert not re.search(r"\.f64\b", ptx), "fp32 kernel does double-precision arithmetic"
        assert ".local" not in ptx
        assert ("st.shared" in ptx) == (variant.name != "naive")


def test_ptxas_log_parser() -> None:
    log = """ptxas info    : Compiling entry function '_Z1kILi3EEvPf' for 'sm_90'
ptxas info    : Function properties for _Z1kILi3EEvPf
ptxas         .     128 bytes stack frame, 8 bytes spill stores, 4 bytes spill loads
ptxas info    : Used 32 registers, used 1 barriers, 2048 bytes smem, 128 bytes cumulative stack size
ptxas info    : Function properties for helper
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads"""
    (resources,) = toolchain.parse_ptxas_log(log).values()
    assert resources == toolchain.KernelResources("_Z1kILi3EEvPf", 32, 128, 8, 4, 2048)
    assert resources.uses_local_memory


@pytest.mark.parametrize("route", ["nvcc", "nvrtc"])
def test_a_compile_error_is_one_profiler_error(tmp_path: Path, route: str) -> None:
    if route == "nvcc" and toolchain.find_nvcc() is None:
        pytest.skip("no nvcc")
    if route == "nvrtc" and toolchain.nvrtc_version() is None:
        pytest.skip("no NVRTC")
    source = tmp_path / "broken.cu"
    source.write_text('extern "C" __global__ void broken(float* x) { x[0] = undefined_name; }\n')
    compile_with = toolchain.compile_nvcc if route == "nvcc" else toolchain.compile_nvrtc
    with pytest.raises(ProfilerError, match=r"broken\.cu.*undefined_name") as caught:
        compile_with(source)
    assert "\n" not in str(caught.value)


def test_memlens_nvcc_names_nvcc(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tmp_path / "nvcc"
    fake.write_text("#!/bin/sh\n")
    monkeypatch.setenv(toolchain.NVCC_ENV, str(fake))
    assert toolchain.find_nvcc() == fake
    monkeypatch.setenv(toolchain.NVCC_ENV, str(tmp_path / "missing"))
    assert toolchain.find_nvcc() is None
