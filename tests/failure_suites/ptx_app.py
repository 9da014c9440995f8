"""Launch one tiny kernel through the CUDA driver API with ctypes alone, no Python package: an
unprivileged user whose python has no CuPy can run it under ncu. record_failures.sh uses it to
record what ncu says to a user who may not read the performance counters (ERR_NVGPUCTRPERM)."""

from __future__ import annotations

import ctypes
import sys

PTX = b"""
.version 7.0
.target sm_50
.address_size 64
.visible .entry store7(.param .u64 out)
{
    .reg .b64 %rd<2>;
    .reg .b32 %r<2>;
    ld.param.u64 %rd1, [out];
    cvta.to.global.u64 %rd1, %rd1;
    mov.u32 %r1, 7;
    st.global.u32 [%rd1], %r1;
    ret;
}
"""


def main() -> int:
    cuda = ctypes.CDLL("libcuda.so.1")

    def check(result: int, what: str) -> None:
        if result != 0:
            raise SystemExit(f"ptx_app: {what} failed with CUDA error {result}")

    check(cuda.cuInit(0), "cuInit")
    device = ctypes.c_int()
    check(cuda.cuDeviceGet(ctypes.byref(device), 0), "cuDeviceGet")
    context = ctypes.c_void_p()
    check(cuda.cuDevicePrimaryCtxRetain(ctypes.byref(context), device), "cuDevicePrimaryCtxRetain")
    check(cuda.cuCtxSetCurrent(context), "cuCtxSetCurrent")
    module = ctypes.c_void_p()
    check(cuda.cuModuleLoadData(ctypes.byref(module), ctypes.c_char_p(PTX)), "cuModuleLoadData")
    function = ctypes.c_void_p()
    check(cuda.cuModuleGetFunction(ctypes.byref(function), module, b"store7"), "cuModuleGetFunction")
    out = ctypes.c_uint64()
    check(cuda.cuMemAlloc_v2(ctypes.byref(out), ctypes.c_size_t(4)), "cuMemAlloc")
    argument = ctypes.c_uint64(out.value)
    params = (ctypes.c_void_p * 1)(ctypes.cast(ctypes.byref(argument), ctypes.c_void_p))
    one = ctypes.c_uint(1)
    check(
        cuda.cuLaunchKernel(function, one, one, one, one, one, one, ctypes.c_uint(0), None, params, None),
        "cuLaunchKernel",
    )
    check(cuda.cuCtxSynchronize(), "cuCtxSynchronize")
    value = ctypes.c_uint32()
    check(cuda.cuMemcpyDtoH_v2(ctypes.byref(value), out, ctypes.c_size_t(4)), "cuMemcpyDtoH")
    print(f"ptx_app: kernel wrote {value.value}")
    return 0 if value.value == 7 else 1


if __name__ == "__main__":
    sys.exit(main())
