"""profiling/model/libraries.py: whose kernel it is, by its name as ncu demangles it and by the files its
instructions name; on the names seen on the GPU machine (the shared device notes) and on real recordings."""

from __future__ import annotations

import json
import re

import pytest

from memlens.model.instruction_table import InstructionRecord
from memlens.model.libraries import CUBLAS, library_of, qualified_name
from memlens.model.results import KernelResult, RunResults, load_results
from memlens.readers import read_lines, read_report
from tests.conftest import FIXTURES
from tests.support.packed import unpacked

H100_PROGRAMS = FIXTURES / "nvidia_h100_80gb_hbm3" / "programs"
H200_PROGRAMS = FIXTURES / "nvidia_h200" / "programs"

NAMED = {
    # cuBLAS / cuBLASLt, as ncu_report and ncu's CSV write them
    "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT": "cuBLAS",
    "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize128x128x8_stage3_warpsize2x2x1_ffma_aligna4_alignc4_execute_kernel"
    "_cublas": "cuBLAS",
    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel"
    "__5x_cublas": "cuBLAS",
    "sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x32": "cuBLAS",
    "void cutlass::Kernel2<cutlass_80_simt_sgemm_128x32_8x5_nn_align1>(T1::Params)": "cuBLAS",
    "void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_64x64_32x6_tn_align4>(T1::Params)": "cuBLAS",
    "void cublasLt::splitKreduce_kernel<(int)32, (int)16, int, float, float, float, float, (bool)1, (bool)0>"
    "(cublasLt::cublasSplitKParams<T6>, const T4 *, const T5 *, T5 *, const T6 *, const T6 *, const T7 *, "
    "const T4 *, T7 *, void *, long, T6 *, int *)": "cuBLAS",
    "ampere_sgemm_128x64_nn": "cuBLAS",
    "void gemv2T_kernel_val<int, int, float, float, float, float, 128, 16, 4, 4, false, false, "
    "cublasGemvParamsEx<int, cublasGemvTensorStridedBatched<const float>, cublasGemvTensorStridedBatched<const "
    "float>, cublasGemvTensorStridedBatched<float>, float>>(T13, T6, T6)": "cuBLAS",
    "void gemvx::kernel<int, int, float, float, float, float, false, true, true, false, 7, false, "
    "cublasGemvParamsEx<int, cublasGemvTensorStridedBatched<const float>, cublasGemvTensorStridedBatched<const "
    "float>, cublasGemvTensorStridedBatched<float>, float>>(T13)": "cuBLAS",
    "void gemmk1_kernel<int, float, 256, 5, false, false, false, false, cublasGemvTensorStridedBatched<const float>, "
    "cublasGemvTensorStridedBatched<const float>, cublasGemvTensorStridedBatched<float>, float, 0>"
    "(cublasGemmk1Params<T2, T9, T10, T11, T12, biasType<T9::value_type, T12>::type>)": "cuBLAS",
    "void splitKreduce_kernel<32, 16, int, float, float, float, float, true, false, false>(x)": "cuBLAS",
    "void internal::gemvx::kernel<int, int, float, float, float, float, false, true, true, false, 7>(x)": "cuBLAS",
    "void gemv2N_kernel<int, int, float, float, float, float, 128, 32, 4, 4, false, false>(x)": "cuBLAS",
    "void gemmSN_NN_kernel<float, 256, 4, 2, 8, 3, 4, false>(x)": "cuBLAS",
    # cuDNN
    "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_3_64x64x64_4x1x1_kernel0_0": "cuDNN",
    "sm90_xmma_fprop_implicit_gemm_f16f16_f16f32_f32_nhwckrsc_nhwc_tilesize128x128x32_cudnn": "cuDNN",
    "void cudnn::bn_fw_tr_1C11_kernel_NCHW<float, float, 512, true, 1>(cudnnTensorStruct)": "cuDNN",
    # CUTLASS of the user's instantiation, or of the CUTLASS library
    "void cutlass::device_kernel<cutlass3x_sm90_tensorop_gemm_f16_f16_f32_f16_f16_128x128x64_1x1x1_0_tnn_align8>"
    "(T1::Params)": "CUTLASS",
    "void cutlass::Kernel<cutlass::gemm::kernel::Gemm<float, 128>>(T1::Params)": "CUTLASS",
    "cutlass3x_sm90_tensorop_gemm_f16": "CUTLASS",
    # attention
    "void flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128, 128, 4, false, false, cutlass::half_t>, "
    "false, false, false, false, true, true, false>(Flash_fwd_params)": "FlashAttention",
    "void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64>, false>(Flash_fwd_params)": "FlashAttention",
    "flash_fwd_splitkv_kernel": "FlashAttention",
    "fmha_cutlassF_f32_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel<float, cutlass::arch::Sm80, "
    "true, 64, 64, 64, true, true>::Params)": "xFormers",
    # CCCL, NCCL
    "void cub::CUB_200200_900_NS::DeviceSegmentedReduceKernel<cub::CUB_200200_900_NS::DeviceReducePolicy<float, "
    "float, cub::CUB_200200_900_NS::Sum>::Policy600, const float *, float *, int *, int, "
    "cub::CUB_200200_900_NS::Sum, float>(T2, T3, T4, T4, int, T6, T7)": "CUB",
    "void at_cuda_detail::cub::DeviceRadixSortOnesweepKernel<int>(int)": "CUB",
    "void thrust::THRUST_200500_900_NS::cuda_cub::core::_kernel_agent<int>(int)": "Thrust",
    "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096UL>)": "NCCL",
    "ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)": "NCCL",
    # PyTorch's ATen, its anonymous-namespace softmax as both demanglers write it
    "void <unnamed>::softmax_warp_forward<float, float, float, 10, 0, 0>(T2 *, const T1 *, int, int, int, "
    "const bool *, int, bool)": "PyTorch",
    "void (anonymous namespace)::softmax_warp_forward<float, float, float, (int)10, (bool)0, (bool)0>(T2 *, "
    "const T1 *, int, int, int, const bool *, int, bool)": "PyTorch",
    "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, "
    "at::native::(anonymous namespace)::SoftMaxForwardEpilogue>(T3 *, const T1 *, int)": "PyTorch",
    "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
    "std::array<char *, 3>>(int, T2, T3)": "PyTorch",
    "void at::elementwise_kernel<128, 2>(int, T3)": "PyTorch",
    # generated: CuPy's own kernels, Inductor's Triton
    "cupy_multiply__float_float_float": "CuPy",
    "cupy_sum": "CuPy",
    "triton_poi_fused_add_0": "Inductor",
    "triton_red_fused_sum_1": "Inductor",
    "triton_per_fused__softmax_0": "Inductor",
    "triton_tem_fused_mm_0": "Inductor",
}

USERS = (
    "add_kernel",  # a Triton kernel of the user's
    "matmul_cp_async",
    "void transpose<float, 32, 32, 0>(float *, const float *)",
    "transpose_conflict(float *, const float *, int)",
    "void my_reduce<cub::CUB_200200_900_NS::Sum, at::Half>(float *)",  # a library's type as an argument only
    "memlens_suite_9945_matmul::matmul_naive[abi:v1,cw51](Array<float, 2, C>)",  # Numba
    "my_ElementwiseKernel",  # CuPy: a kernel the user named
    "gemv_kernel(const float *, const float *, float *, int)",  # a tutorial's matrix-vector product
    "void gemv_tiled<128>(const float *, float *)",
    "void onnxruntime::cuda::softmax_warp_forward<float>(float *)",  # the same name in another namespace
)


@pytest.mark.parametrize(("name", "library"), NAMED.items(), ids=lambda text: text[:40])
def test_a_library_kernel_is_named_by_its_demangled_name(name, library):
    found = library_of(name)
    assert found is not None and found.name == library


@pytest.mark.parametrize("name", USERS)
def test_the_users_kernels_are_no_librarys(name):
    assert library_of(name) is None


def test_the_advice_says_whose_code_and_what_the_user_controls():
    assert CUBLAS.advice == (
        "cuBLAS's kernel: its code is not yours; what you control is the call -- shapes, dtype, layout, batching"
    )
    assert not CUBLAS.line_advice and "lineinfo" not in CUBLAS.advice
    inductor = library_of("triton_poi_fused_add_0")
    assert inductor is not None and inductor.line_advice  # the user's program: advice about lines stays
    assert inductor.advice.startswith("Inductor's generated kernel: your program as torch.compile generated it")
    xformers = library_of("fmha_cutlassF_f32_aligned_64x64_rf_sm80(Params)")
    assert xformers is not None and xformers.advice.startswith("xFormers' kernel: its code is not yours")


def test_the_qualified_name_keeps_namespaces_and_the_wrapped_operator():
    assert qualified_name("void cutlass::Kernel2<cutlass_80_simt_sgemm_128x32_8x5_nn_align1>(T1::Params)") == (
        "cutlass::Kernel2",
        "cutlass_80_simt_sgemm_128x32_8x5_nn_align1",
    )
    assert qualified_name("void <unnamed>::softmax_warp_forward<float, float>(T2 *)") == (
        "(anonymous namespace)::softmax_warp_forward",
        "float",
    )
    assert qualified_name("nvjet_sm90_tst_128x64_64x8_1x2_h_bz_NNT") == ("nvjet_sm90_tst_128x64_64x8_1x2_h_bz_NNT", "")


def test_source_files_decide_where_the_name_does_not():
    cutlass = ("/opt/cutlass/include/cutlass/gemm/threadblock/mma_multistage.h",)
    assert library_of("void my_gemm_kernel<GemmTraits>(Params)", cutlass).name == "CUTLASS"
    aten = ("/opt/pytorch/aten/src/ATen/native/cuda/Reduce.cuh", "/opt/pytorch/c10/cuda/CUDAMathCompat.h")
    assert library_of("void reduce_kernel<512, 1>(R)", aten).name == "PyTorch"
    flash = ("/src/flash-attention/csrc/flash_attn/src/flash_fwd_kernel.h", "/opt/cutlass/include/cute/tensor.hpp")
    assert library_of("void compute_attn<Traits>(Params)", flash).name == "FlashAttention"
    cub = ("/usr/local/cuda/include/cub/block/block_reduce.cuh",)
    assert library_of("void reduce_rows(float *)", cub).name == "CUB"
    # a file of the user's beside the library's: the user's kernel, which inlines library code
    assert library_of("void my_gemm_kernel<GemmTraits>(Params)", (*cutlass, "/src/me/gemm.cu")) is None
    # only toolkit headers (an atomic, an intrinsic): no library is named by them
    assert library_of("void count(int *)", ("/usr/local/cuda/include/crt/sm_90_rt.hpp",)) is None


def test_a_librarys_name_on_the_users_own_code_is_the_users():
    mine = ("/src/me/attention/flash.cu",)
    assert library_of("void flash::flash_fwd_kernel<Traits>(Params)", mine) is None
    assert library_of("void flash::flash_fwd_kernel<Traits>(Params)").name == "FlashAttention"
    # CuPy's temporary copy and Inductor's generated module are no one's own code: the name decides
    assert library_of("cupy_multiply__float_float_float", ("/var/tmp/tmpab/" + "0" * 40 + ".cubin.cu",)).name == "CuPy"
    generated = ("/var/tmp/torchinductor_me/ab/cabcdef.py",)
    assert library_of("triton_poi_fused_add_0", generated).name == "Inductor"


def test_a_kernel_result_knows_its_library_from_its_instructions():
    record = InstructionRecord(0x10, "LDS R4, [R2]", "LDS", "shared", "ld", 32, "/x/cutlass/include/cute/a.hpp", 7)
    assert KernelResult("void gemm_kernel<T>(P)", instructions=(record,)).library.name == "CUTLASS"
    assert KernelResult("void gemm_kernel<T>(P)").library is None


# --- on real recordings --------------------------------------------------------------------------


def test_the_kernels_of_a_pytorch_program_are_named_on_its_report():
    """torch_triton (H100, record_programs.sh): cuBLAS's nvjet GEMM, ATen's softmax and elementwise
    kernels, and two Triton kernels of the program's own."""
    results = read_lines(str(unpacked(H100_PROGRAMS / "torch_triton.ncu-rep.xz")))
    found = {k.label: k.library.name if k.library else None for k in results.kernels}
    assert found == {
        "torchapp@triton_add": None,
        "torchapp@bf16_matmul": "cuBLAS",
        "torchapp@softmax": "PyTorch",
        "torchapp@transpose_copy": "PyTorch",
        "add/torch": "PyTorch",
        "add/triton": None,
    }


def test_the_kernels_of_a_programs_csv_are_named():
    results = read_report(str(H200_PROGRAMS / "torch_triton.csv"))
    libraries = [k.library.name if k.library else None for k in results.kernels]
    assert libraries.count("cuBLAS") == 1 and libraries.count("PyTorch") == 3 and libraries.count(None) == 2


def test_results_json_writes_the_library_and_reads_older_files_without_it(tmp_path):
    results = read_report(str(H200_PROGRAMS / "torch_triton.csv"))
    data = results.to_json()
    assert [k.get("library") for k in data["kernels"]] == [None, "cuBLAS", "PyTorch", "PyTorch", "PyTorch", None]
    assert "library" not in data["kernels"][0]  # the user's kernel: results.json as before the field
    path = tmp_path / "results.json"
    path.write_text(json.dumps(data))
    again = load_results(path)
    assert again == results and again.kernels[1].library.name == "cuBLAS"
    for kernel in data["kernels"]:  # an older file: no field, the library derived from the name
        kernel.pop("library", None)
    older = RunResults.from_json(data)
    assert [k.library.name if k.library else None for k in older.kernels] == [
        None,
        "cuBLAS",
        "PyTorch",
        "PyTorch",
        "PyTorch",
        None,
    ]


def test_results_json_refuses_a_library_that_is_not_text(tmp_path):
    from memlens.errors import InputError

    data = read_report(str(H200_PROGRAMS / "torch_triton.csv")).to_json()
    data["kernels"][1]["library"] = 5
    with pytest.raises(InputError, match=r"kernels\[1\]\.library must be text or null"):
        RunResults.from_json(data)


RECORDED = [FIXTURES / gpu / "libraries" / "results.json" for gpu in ("nvidia_h100_80gb_hbm3", "nvidia_h200")]


@pytest.mark.parametrize("path", RECORDED, ids=lambda path: path.parts[-3])
def test_the_recorded_library_kernels_are_named_and_never_hinted(path, capsys):
    """tests/fixtures/record_libraries.sh's run of library_kernels_app.py: every range's kernels (of the
    backends that GPU had) named, no library's kernel told to compile with line info."""
    if not path.exists():
        pytest.skip(f"{path.relative_to(FIXTURES)} not recorded yet (bash tests/fixtures/record_libraries.sh)")
    from memlens.cli import main
    from tests.end_to_end.test_library_kernels_gpu import EXPECTED

    results = load_results(path)
    found: dict[str, set[str | None]] = {}
    for kernel in results.kernels:  # the label without " (process 1)": torch.compile's workers are processes too
        label = re.sub(r" \(process \d+\)$", "", kernel.label)
        found.setdefault(label, set()).add(kernel.library.name if kernel.library else None)
    assert {"lib/bf16_gemm", "lib/softmax", "lib/inductor"} <= set(found)
    for label, libraries in found.items():
        assert EXPECTED[label] in libraries, (label, libraries)
    assert main(["lines", str(path), "--json", "--top", "0"]) == 0
    kernels = json.loads(capsys.readouterr().out)["kernels"]
    assert all(k["hint"] is None for k in kernels if k["library"] and k["library"] != "Inductor")
