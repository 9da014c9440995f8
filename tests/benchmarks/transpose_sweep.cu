// Design sweep for the fast transposes (transpose_sweep.py): one scalar fp32 tiled transpose,
// templated over its tile shape, block shape, block order and cache hints, and a tiled copy with
// the same global access pattern as a control. Full tiles only (rows % TR == 0, cols % TC == 0).
//
//   TR x TC  tile (input rows x input columns); block 32 x BY; each thread moves TR*TC/(32*BY)
//   MODE     0: tile[TR][TC] swizzled at [r][c ^ (r % 32)]; 1: tile[TR][TC + 1] padded;
//            2: no shared memory, `out` = `in` copied tile by tile (the control)
//   ORDER    0: blockIdx.x walks input columns; 1: blockIdx.x walks input rows
//   HINT     0: __ldg and plain stores; 1: __ldcs / __stcs (streaming); 2: loads hint a 256-byte
//            L2 prefetch (ld.global.nc.L2::256B)
//   MINB     __launch_bounds__ minimum blocks an SM

template <int HINT>
__device__ __forceinline__ float load(const float* p) {
    if (HINT == 1) return __ldcs(p);
    if (HINT == 2) {
        float v;
        asm("ld.global.nc.L2::256B.f32 %0, [%1];" : "=f"(v) : "l"(p));
        return v;
    }
    return __ldg(p);
}

template <int HINT>
__device__ __forceinline__ void store(float* p, float v) {
    if (HINT == 1) {
        __stcs(p, v);
    } else {
        *p = v;
    }
}

template <int TR, int TC, int BY, int MODE, int ORDER, int HINT, int MINB>
__global__ void __launch_bounds__(32 * BY, MINB)
    sweep(const float* __restrict__ in, float* __restrict__ out, int rows, int cols) {
    extern __shared__ float tile[];
    constexpr int STRIDE = MODE == 1 ? TC + 1 : TC;
    constexpr int LOAD_ROWS = TR / BY, LOAD_COLS = TC / 32;
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int tile_col = ORDER ? blockIdx.y : blockIdx.x;
    const int tile_row = ORDER ? blockIdx.x : blockIdx.y;
    const int row0 = tile_row * TR, col0 = tile_col * TC;
    float v[LOAD_ROWS * LOAD_COLS];
#pragma unroll
    for (int j = 0; j < LOAD_ROWS; ++j)
#pragma unroll
        for (int h = 0; h < LOAD_COLS; ++h)
            v[j * LOAD_COLS + h] = load<HINT>(in + (size_t)(row0 + ty + j * BY) * cols + col0 + tx + 32 * h);
    if (MODE == 2) {
#pragma unroll
        for (int j = 0; j < LOAD_ROWS; ++j)
#pragma unroll
            for (int h = 0; h < LOAD_COLS; ++h)
                store<HINT>(out + (size_t)(row0 + ty + j * BY) * cols + col0 + tx + 32 * h, v[j * LOAD_COLS + h]);
        return;
    }
#pragma unroll
    for (int j = 0; j < LOAD_ROWS; ++j)
#pragma unroll
        for (int h = 0; h < LOAD_COLS; ++h) {
            const int r = ty + j * BY, c = tx + 32 * h;
            tile[r * STRIDE + (MODE == 0 ? c ^ (r & 31) : c)] = v[j * LOAD_COLS + h];
        }
    __syncthreads();
    constexpr int STORE_ROWS = TC / BY, STORE_COLS = TR / 32;
#pragma unroll
    for (int j = 0; j < STORE_ROWS; ++j)
#pragma unroll
        for (int h = 0; h < STORE_COLS; ++h) {
            const int c = ty + j * BY;   // tile column: output row col0 + c
            const int r = tx + 32 * h;   // tile row: output column row0 + r
            store<HINT>(out + (size_t)(col0 + c) * rows + row0 + r, tile[r * STRIDE + (MODE == 0 ? c ^ (r & 31) : c)]);
        }
}
