// Running mean over a window of W = 32 floats: out[i] = (x[i] + ... + x[i + W - 1]) / W for
// i < n; `x` holds n + W - 1 floats. One thread per output keeps its window in an array
// float window[W] (after the CUDA local-memory article). Launch: 1-D, any block size.
//
//   running_mean_register  window[j] with j known at compile time (unrolled loops): the
//                          array becomes registers
//   running_mean_local     window[(j + n) % W]: the slot depends on n, a run-time value, so
//                          the array cannot be registers and lives in local memory
//   running_mean_spill     R = 8 consecutive outputs a thread from one window of W + R - 1
//                          floats indexed at compile time, as in running_mean_register; it
//                          needs ~56 registers, but __launch_bounds__(256, 8) caps it at 32
//                          (65,536 registers / (256 x 8) threads): ptxas spills to local memory.
//                          Launch: 1-D, blocks of at most 256 threads, one thread per R outputs.
//
// All three add the same values in the same order (x[i], x[i + 1], ...): bitwise-equal results.

#define W 32u
#define R 8u             // outputs a thread of running_mean_spill
#define SPILL_BLOCK 256  // its __launch_bounds__: 8 blocks of 256 threads an SM

extern "C" __global__ void running_mean_register(const float* __restrict__ x, float* __restrict__ out,
                                                 unsigned int n) {
    const unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float window[W];
#pragma unroll
    for (unsigned int j = 0; j < W; ++j) window[j] = x[i + j];
    float sum = 0.0f;
#pragma unroll
    for (unsigned int j = 0; j < W; ++j) sum += window[j];
    out[i] = sum * (1.0f / W);  // W is a power of two: exact
}

extern "C" __global__ void running_mean_local(const float* __restrict__ x, float* __restrict__ out,
                                              unsigned int n) {
    const unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float window[W];
#pragma unroll
    for (unsigned int j = 0; j < W; ++j) window[(j + n) % W] = x[i + j];
    float sum = 0.0f;
#pragma unroll
    for (unsigned int j = 0; j < W; ++j) sum += window[(j + n) % W];
    out[i] = sum * (1.0f / W);
}

extern "C" __global__ void __launch_bounds__(SPILL_BLOCK, 8)
    running_mean_spill(const float* __restrict__ x, float* __restrict__ out, unsigned int n) {
    const unsigned int first = (blockIdx.x * blockDim.x + threadIdx.x) * R;
    if (first >= n) return;
    const unsigned int last = n + W - 2;  // the last index of x: the last thread's loads stay inside
    float window[W + R - 1];
#pragma unroll
    for (unsigned int j = 0; j < W + R - 1; ++j) window[j] = x[min(first + j, last)];
#pragma unroll
    for (unsigned int k = 0; k < R; ++k) {
        float sum = 0.0f;
#pragma unroll
        for (unsigned int j = 0; j < W; ++j) sum += window[k + j];
        if (first + k < n) out[first + k] = sum * (1.0f / W);
    }
}
