// Matrix transpose through a 32x32 fp32 shared-memory tile, in three tile layouts
// (after the shared-memory swizzling article). `in` is rows x cols, row-major; `out` is
// cols x rows. Launch: block (32, 8), grid (ceil(cols / 32), ceil(rows / 32)); each thread
// moves 4 elements in and 4 out. Any rows, cols: elements outside the matrix are skipped.
//
// Loading, a warp writes one tile row (conflict-free in every layout); storing, it reads one
// tile column, which is where the layouts differ:
//   transpose_conflict  tile[32][32]      a column lies in one bank: 32-way conflict
//   transpose_padded    tile[32][33]      row stride 33 words: a column spans 32 banks
//   transpose_swizzled  tile[32][32], element [r][c] stored at [r][c ^ r]: likewise

#define TILE 32
#define BLOCK_ROWS 8

// Stored column of tile element [r][c]: as is, or XOR-swizzled.
template <bool SWIZZLE>
__device__ __forceinline__ int tile_col(int r, int c) {
    return SWIZZLE ? (c ^ r) : c;
}

template <int STRIDE, bool SWIZZLE>
__device__ __forceinline__ void transpose_via(float (&tile)[TILE][STRIDE], const float* __restrict__ in,
                                              float* __restrict__ out, int rows, int cols) {
    const int tx = threadIdx.x;
    const int col = blockIdx.x * TILE + tx;
    for (int j = 0; j < TILE; j += BLOCK_ROWS) {
        const int r = threadIdx.y + j;
        const int row = blockIdx.y * TILE + r;
        if (row < rows && col < cols) {
            tile[r][tile_col<SWIZZLE>(r, tx)] = in[(size_t)row * cols + col];
        }
    }
    __syncthreads();
    const int out_col = blockIdx.y * TILE + tx;  // an input row
    for (int j = 0; j < TILE; j += BLOCK_ROWS) {
        const int r = threadIdx.y + j;
        const int out_row = blockIdx.x * TILE + r;  // an input column
        if (out_row < cols && out_col < rows) {
            out[(size_t)out_row * rows + out_col] = tile[tx][tile_col<SWIZZLE>(tx, r)];
        }
    }
}

extern "C" __global__ void transpose_conflict(const float* __restrict__ in, float* __restrict__ out,
                                              int rows, int cols) {
    __shared__ float tile[TILE][TILE];
    transpose_via<TILE, false>(tile, in, out, rows, cols);
}

extern "C" __global__ void transpose_padded(const float* __restrict__ in, float* __restrict__ out,
                                            int rows, int cols) {
    __shared__ float tile[TILE][TILE + 1];
    transpose_via<TILE + 1, false>(tile, in, out, rows, cols);
}

extern "C" __global__ void transpose_swizzled(const float* __restrict__ in, float* __restrict__ out,
                                              int rows, int cols) {
    __shared__ float tile[TILE][TILE];
    transpose_via<TILE, true>(tile, in, out, rows, cols);
}
