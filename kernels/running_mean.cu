// Running mean over a window of W = 32 floats: out[i] = (x[i] + ... + x[i + W - 1]) / W for
// i < n; `x` holds n + W - 1 floats. One thread per output keeps its window in an array
// float window[W] (after the CUDA local-memory article). Launch: 1-D, any block size.
//
//   running_mean_register  window[j] with j known at compile time (unrolled loops): the
//                          array becomes registers
//   running_mean_local     window[(j + n) % W]: the slot depends on n, a run-time value, so
//                          the array cannot be registers and lives in local memory
//
// Both add the same values in the same order (x[i], x[i + 1], ...): bitwise-equal results.

#define W 32u

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
