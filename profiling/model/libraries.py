"""Whose kernel is it: the libraries whose kernels a program launches (cuBLAS, cuDNN, CUTLASS,
FlashAttention, CUB, Thrust, NCCL, PyTorch's ATen, CuPy) and the code generators whose kernels are the
user's program compiled (PyTorch Inductor), recognised by the kernel's name as ncu demangles it and, where
its per-instruction records name source files, by where those lie.

A library's kernel keeps its figures (a conflict inside cuBLAS is still a fact worth knowing), but its
advice is the library's sentence, never "compile with -lineinfo": its code is not the user's, and what the
user controls is the call. An Inductor kernel is the user's program: the advice about lines stays, and its
lines name the file Inductor generated. The name tables are data (NAME_RULES, PATH_RULES).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from memlens.model.instruction_table import is_library_source
from memlens.model.kernel_names import ANONYMOUS_NAMESPACE, kernel_name
from memlens.model.source_lines import TEMPORARY_SOURCE


@dataclass(frozen=True)
class Library:
    """Who wrote a kernel the user did not: `name` (shown beside the kernel), what the user controls
    instead of its code, and whether it is generated from the user's own program (its lines are the
    user's to read: the advice about line info stays)."""

    name: str
    controls: str  # "the call -- shapes, dtype, layout, batching"
    generated: bool = False
    about: str = ""  # a generated kernel's words: where its code is

    @property
    def advice(self) -> str:
        """What a reader is told of the kernel instead of how to name its source lines."""
        if self.generated:
            return f"{_possessive(self.name)} generated kernel: {self.about}; what you control is {self.controls}"
        return f"{_possessive(self.name)} kernel: its code is not yours; what you control is {self.controls}"

    @property
    def line_advice(self) -> bool:
        """Whether advice about the kernel's source lines (compile with line info) applies to it."""
        return self.generated


def _possessive(name: str) -> str:
    return f"{name}'" if name.endswith("s") else f"{name}'s"


CALL = "the call -- shapes, dtype, layout, batching"
CUBLAS = Library("cuBLAS", CALL)
CUDNN = Library("cuDNN", CALL)
CUTLASS = Library("CUTLASS", "its instantiation and the call -- tile shapes, stages, layouts, alignment, sizes")
ATTENTION_CALL = "the call -- batch, heads, sequence length, head dimension, dtype, masking"
FLASH_ATTENTION = Library("FlashAttention", ATTENTION_CALL)
# fmha_cutlass*: the memory-efficient attention of xFormers, which PyTorch bundles as an SDPA backend
XFORMERS = Library("xFormers", ATTENTION_CALL)
CUB = Library("CUB", "the call -- item counts, types, the operator, the segments")
THRUST = Library("Thrust", "the call -- sizes, types, the functor")
NCCL = Library("NCCL", "the call -- message sizes, the collective, the ranks' layout, NCCL's settings")
PYTORCH = Library("PyTorch", "the call -- shapes, dtype, memory layout (contiguity, strides), what torch.compile fuses")
# CuPy's own kernels (ufuncs such as cupy_multiply, reductions such as cupy_sum, routines) are CuPy's code
# generated from a template for the call's dtypes; the user wrote the call, not the CUDA, and cannot give
# them line info. A kernel the user wrote through CuPy (RawKernel, RawModule, an ElementwiseKernel or
# ReductionKernel of their own) carries the name the user gave it, is not recognised here and stays the user's.
CUPY = Library("CuPy", "the call -- shapes, dtypes, memory layout, and fusing (cupy.fuse, or a kernel of your own)")
INDUCTOR = Library(
    "Inductor",
    "the model code it was generated from and torch.compile's options",
    generated=True,
    about="your program as torch.compile generated it, in the file its lines name (Inductor's cache, "
    "TORCHINDUCTOR_CACHE_DIR)",
)

# (pattern, library): the first pattern that matches a kernel's qualified name (return type, template
# arguments and parameters left out; namespaces kept, an anonymous one as "(anonymous namespace)") names
# its library. Order matters: cuDNN's xmma kernels end in "_cudnn" where cuBLAS's do not.
NAME_RULES: tuple[tuple[re.Pattern[str], Library], ...] = tuple(
    (re.compile(pattern), library)
    for pattern, library in (
        (r"^triton_(poi|red|per|tem)_", INDUCTOR),
        (r"(^|::|_)cudnn", CUDNN),
        (r"^(sm\d+_)?xmma_(fprop|dgrad|wgrad)", CUDNN),
        (r"^nvjet_", CUBLAS),
        (r"^sm\d+_xmma_", CUBLAS),
        (r"^(maxwell|kepler|volta|turing|ampere|hopper|ada|blackwell)_", CUBLAS),
        (r"(^|::)cublas", CUBLAS),
        (r"^cutlass_\d+_", CUBLAS),  # CUTLASS instances cuBLAS ships, as cutlass::Kernel2<cutlass_80_...>
        # cuBLAS's own kernel names (a user's "gemv_kernel" is not one of them); most also carry a cublas*
        # parameter type as a template argument, which names cuBLAS below
        (r"^(gemv2[NT]_kernel|gemvNSP_kernel|gemmk1_kernel|gemmSN_[NT][NT]_kernel)|(^|::)gemvx::", CUBLAS),
        (r"(^|::)splitKreduce_kernel$", CUBLAS),
        (r"^(fmha_cutlass|PyTorchMemEffAttention::)", XFORMERS),
        (r"^(flash_fwd|flash_bwd|flash::|pytorch_flash::)", FLASH_ATTENTION),
        (r"^(cutlass|cute)::|^cutlass3x_", CUTLASS),
        (r"^(\w+::)?cub::", CUB),  # PyTorch's own copy is at_cuda_detail::cub::
        (r"^thrust::", THRUST),
        (r"^nccl(Kernel|DevKernel)", NCCL),
        (r"^(at|c10)::", PYTORCH),
        # ATen's kernels in an anonymous namespace of their own (PersistentSoftmax.cuh)
        (r"^\(anonymous namespace\)::(masked_)?softmax_warp_(forward|backward)$", PYTORCH),
        (r"^cupy_", CUPY),
    )
)
# A template argument that names cuBLAS's parameter types (gemv2T_kernel_val<..., cublasGemvParamsEx<...>>)
_CUBLAS_ARGUMENT = re.compile(r"\bcublas[A-Z]\w*")
# Kernels that wrap an operator given as their first template argument: the operator names the library
_WRAPPERS = ("cutlass::Kernel", "cutlass::Kernel2", "cutlass::device_kernel")

# (pattern, library): where a kernel's source files name a library's own code (a build with line info)
PATH_RULES: tuple[tuple[re.Pattern[str], Library], ...] = tuple(
    (re.compile(pattern), library)
    for pattern, library in (
        (r"(^|/)(flash_attn|flash-attention|flash_attention)/", FLASH_ATTENTION),
        (r"(^|/)mem_eff_attention/", XFORMERS),
        (r"(^|/)(aten/src/ATen|ATen/native|c10/cuda)/", PYTORCH),
        (r"(^|/)thrust/", THRUST),
        (r"(^|/)cub/", CUB),
        (r"(^|/)(cutlass|cute)/", CUTLASS),
        (r"(^|/)nccl[^/]*/", NCCL),
    )
)
# A file no one wrote by hand: CuPy's temporary copy of a source, Inductor's generated module
_GENERATED = re.compile(r"(^|/)torchinductor_[^/]*/")

_ANONYMOUS = (ANONYMOUS_NAMESPACE, "<unnamed>", "{anonymous}")


def library_of(name: str, source_files: Iterable[str] = ()) -> Library | None:
    """The library whose kernel `name` is (demangled, as ncu writes it), else None: the user's own.
    `source_files`: the files its per-instruction records name, where it was built with line info. By
    name first; a kernel whose every file is the user's own is the user's, whatever its name (a
    `flash::` kernel of the user's); without a name that tells, files that all lie in library code and
    name one library (a CUTLASS or ATen build with line info) tell."""
    files = list(dict.fromkeys(f.replace("\\", "/") for f in source_files if f))  # each file once
    named = _by_name(name)
    if named is not None and (named.generated or not files or not all(_users(f) for f in files)):
        return named
    if named is None and files and not any(_users(f) for f in files):
        for pattern, library in PATH_RULES:
            if any(pattern.search(f) for f in files):
                return library
    return None


def _users(path: str) -> bool:
    """Whether a source file is the user's own: neither a library's code nor a generated file."""
    if is_library_source(path) or TEMPORARY_SOURCE.search(path) or _GENERATED.search(path):
        return False
    return not any(pattern.search(path) for pattern, _ in PATH_RULES)


def _by_name(name: str) -> Library | None:
    qualified, operator = qualified_name(name)
    candidates = [qualified_name(operator)[0], qualified] if qualified in _WRAPPERS and operator else [qualified]
    for candidate in candidates:
        for pattern, library in NAME_RULES:
            if pattern.search(candidate):
                return library
    return CUBLAS if _CUBLAS_ARGUMENT.search(name) else None


def qualified_name(name: str) -> tuple[str, str]:
    """(the function's qualified name, its first template argument) of a demangled kernel name:
    `void cutlass::Kernel2<cutlass_80_simt_sgemm_128x32_8x5_nn_align1>(T1::Params)` ->
    ("cutlass::Kernel2", "cutlass_80_simt_sgemm_128x32_8x5_nn_align1"); an anonymous namespace, as
    either demangler writes it, is "(anonymous namespace)"."""
    text = kernel_name(name)
    for anonymous in _ANONYMOUS:
        text = text.replace(anonymous, "\0")
    text = re.sub(r"^(?:void|static|__global__)\s+", "", text)
    end = len(text)
    for index, char in enumerate(text):
        if char in "<(" and index > 0:
            end = index
            break
    qualified = text[:end].strip()
    argument = ""
    if text[end : end + 1] == "<":
        depth = 0
        for index in range(end, len(text)):
            depth += {"<": 1, ">": -1}.get(text[index], 0)
            if depth == 1 and text[index] == "," or depth == 0:
                argument = text[end + 1 : index].strip()
                break
    return qualified.replace("\0", ANONYMOUS_NAMESPACE), argument.replace("\0", ANONYMOUS_NAMESPACE)
