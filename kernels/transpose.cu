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
// After them, four kernels with 64x64 tiles that approach the copy bandwidth (see there).

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

// ---------------------------------------------------------------------------------------------
// Toward copy bandwidth: a 64 x 64 fp32 tile per block, all of a thread's global loads issued
// before the first use; every warp-wide global access covers whole 128-byte lines. The grid
// walks the matrix down before across: blockIdx.x is the tile's row, blockIdx.y its column,
// grid (ceil(rows / 64), ceil(cols / 64)). The blocks running at once then hold a band of input
// columns (256-byte pieces of many rows) and write a band of whole output rows, so the writes
// stream through DRAM as a copy's do: on an H200 this order took the 64x64 tile from 94% to 97%
// of a copy of the same bytes (tests/benchmarks/RESULTS.md). Blocks whose tile lies wholly
// inside the matrix take a path with no bounds checks (FULL); edge blocks check each element.

#define TILE64 64
#define ROWS64 16          // scalar kernels: block (32, 16), 8 elements a thread
#define THREADS_VEC4 256   // float4 kernels: block (256), a 4 x 4 micro-tile a thread
#define SM_THREADS 2048    // an SM's thread limit: the launch bounds cap registers at 32 a thread

// The launch bounds, declared once; the definitions below inherit them.
#define TRANSPOSE64(name, threads)                                                        \
    extern "C" __global__ void __launch_bounds__(threads, SM_THREADS / (threads)) name( \
        const float* __restrict__ in, float* __restrict__ out, int rows, int cols)
TRANSPOSE64(transpose_tile64_padded, 32 * ROWS64);
TRANSPOSE64(transpose_tile64_swizzled, 32 * ROWS64);
TRANSPOSE64(transpose_vec4_padded, THREADS_VEC4);
TRANSPOSE64(transpose_vec4_swizzled, THREADS_VEC4);

// The first input row and column of this block's tile (down before across, as above).
__device__ __forceinline__ int tile_row0() { return blockIdx.x * TILE64; }
__device__ __forceinline__ int tile_col0() { return blockIdx.y * TILE64; }
__device__ __forceinline__ bool full_tile(int rows, int cols) {
    return tile_row0() + TILE64 <= rows && tile_col0() + TILE64 <= cols;
}

// ---- Scalar: block (32, 16); thread (tx, ty) moves tile elements [ty + 16j][tx] and
// [ty + 16j][tx + 32], j = 0..3 (two 128-byte rows a warp per pass). Stores read a tile column:
//   transpose_tile64_padded    tile[64][65]      column reads span 32 banks
//   transpose_tile64_swizzled  tile[64][64], [r][c] at [r][c ^ (r % 32)] (the article's
//                              formula, 4-byte chunks, 128-byte lines): likewise
// Keying each 128-byte half-row by r % 32 (not the whole row by r % 64) leaves c's bit 5 alone,
// so a thread's two elements of a row stay 128 bytes apart and its 8 shared addresses need 4
// XOR results, not 8: ptxas then issues all 8 loads before the first shared store.

// Stored column of element [r][c] of a float [][64] tile, swizzled: the article's
// x_swz = y ^ x with 32 4-byte chunks a 128-byte line, each line keyed by the row
// (profiling/swizzle.py, swizzle(r, c, 64, 4, 4, 128)).
__device__ __forceinline__ int swizzled_col64(int r, int c) {
    return c ^ (r & 31);
}

template <bool SWIZZLE>
__device__ __forceinline__ int tile64_col(int r, int c) {
    return SWIZZLE ? swizzled_col64(r, c) : c;
}

template <int STRIDE, bool SWIZZLE, bool FULL>
__device__ __forceinline__ void tile64_pass(float (&tile)[TILE64][STRIDE], const float* __restrict__ in,
                                            float* __restrict__ out, int rows, int cols) {
    constexpr int PASSES = TILE64 / ROWS64;  // 4 row passes, two elements each
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row0 = tile_row0(), col0 = tile_col0();
    float v[2 * PASSES];
#pragma unroll
    for (int j = 0; j < PASSES; ++j) {
        const int row = row0 + ty + j * ROWS64;
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int col = col0 + tx + h * TILE;
            v[2 * j + h] = (FULL || (row < rows && col < cols)) ? __ldg(in + (size_t)row * cols + col) : 0.0f;
        }
    }
#pragma unroll
    for (int j = 0; j < PASSES; ++j) {
        const int r = ty + j * ROWS64;
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            tile[r][tile64_col<SWIZZLE>(r, tx + h * TILE)] = v[2 * j + h];
        }
    }
    __syncthreads();
#pragma unroll
    for (int j = 0; j < PASSES; ++j) {
        const int r = ty + j * ROWS64;  // a tile column: an output row
        const int out_row = col0 + r;
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int c = tx + h * TILE;  // a tile row: an output column
            const int out_col = row0 + c;
            if (FULL || (out_row < cols && out_col < rows)) {
                out[(size_t)out_row * rows + out_col] = tile[c][tile64_col<SWIZZLE>(c, r)];
            }
        }
    }
}

template <int STRIDE, bool SWIZZLE>
__device__ __forceinline__ void transpose_tile64(float (&tile)[TILE64][STRIDE], const float* __restrict__ in,
                                                 float* __restrict__ out, int rows, int cols) {
    if (full_tile(rows, cols)) {
        tile64_pass<STRIDE, SWIZZLE, true>(tile, in, out, rows, cols);
    } else {
        tile64_pass<STRIDE, SWIZZLE, false>(tile, in, out, rows, cols);
    }
}

extern "C" __global__ void transpose_tile64_padded(const float* __restrict__ in, float* __restrict__ out,
                                                   int rows, int cols) {
    __shared__ float tile[TILE64][TILE64 + 1];
    transpose_tile64<TILE64 + 1, false>(tile, in, out, rows, cols);
}

extern "C" __global__ void transpose_tile64_swizzled(const float* __restrict__ in, float* __restrict__ out,
                                                     int rows, int cols) {
    __shared__ float tile[TILE64][TILE64];
    transpose_tile64<TILE64, true>(tile, in, out, rows, cols);
}

// ---- 16-byte vectors: block 256 (1-D), grid as above. A thread loads a 4 x 4 micro-tile as four float4 rows
// (input rows 4mr..4mr+3, columns 4mc..4mc+3), transposes it in registers and stores four
// float4 into the TRANSPOSED tile: row y = input column, chunk k (16 bytes) = input rows
// 4k..4k+3. It then reads 4 float4 along rows of that tile and stores them to `out` (a warp:
// two 256-byte output rows). Every shared access is 16 bytes, served a quarter-warp (8 lanes,
// 128 bytes) at a time; within a quarter-warp the 8 chunks must fall in 8 different 16-byte
// bank groups (slots, address / 16 % 8):
//   transpose_vec4_padded    tile[64][68]: one 16-byte chunk of padding a row, slot (y + k) % 8
//   transpose_vec4_swizzled  tile[64][64], chunk k of row y at k ^ (y % 8) (the article's formula,
//                            16-byte chunks, 128-byte swizzle lines): slot (k ^ y) % 8
// Lanes map to micro-tiles so that a quarter-warp covers 2 adjacent micro-columns x 4 adjacent
// micro-rows (an even mc, 4 aligned mr): its 8 stores go to rows y = 4mc + j, whose y % 8 take
// two values 4 apart, and chunks mr, whose mr % 4 take all four values, so both (y + mr) % 8
// and (mr ^ y) % 8 take all 8 slots; a warp's loads cover 4 input rows x 128 bytes. (Lanes
// mapped row-major, 16 micro-columns a half-warp, would conflict in both layouts.)
// The float4 path needs rows and cols multiples of 4 (16-byte aligned rows) besides a full
// tile; other blocks move single floats through the same tile.

#define VEC 4

// Stored chunk of 16-byte chunk `chunk` (0..15) of row `row` of a float [][64] tile: the
// article's x_chunk_swz = y_chunk ^ x_chunk with 8 chunks a 128-byte line, each line keyed by
// the row (profiling/swizzle.py, swizzle(row, x, 64, 4, 16, 128)).
__device__ __forceinline__ int swizzled_chunk(int row, int chunk) {
    return chunk ^ (row & 7);
}

// Chunk `chunk` of tile row `row` as a float4 (indexing float4s, so that the compiler knows
// each access is 16-byte aligned and emits one 16-byte shared access).
template <int STRIDE, bool SWIZZLE>
__device__ __forceinline__ float4& tile_chunk(float (&tile)[TILE64][STRIDE], int row, int chunk) {
    static_assert(STRIDE % VEC == 0, "rows of whole 16-byte chunks");
    float4* chunks = reinterpret_cast<float4*>(&tile[0][0]);
    return chunks[row * (STRIDE / VEC) + (SWIZZLE ? swizzled_chunk(row, chunk) : chunk)];
}

template <int STRIDE, bool SWIZZLE, bool FAST>
__device__ __forceinline__ void vec4_pass(float (&tile)[TILE64][STRIDE], const float* __restrict__ in,
                                          float* __restrict__ out, int rows, int cols) {
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int mc = 8 * (warp & 1) + 2 * (lane >> 3) + (lane & 1);  // micro-column 0..15
    const int mr = 4 * (warp >> 1) + ((lane & 7) >> 1);             // micro-row 0..15
    const int row0 = tile_row0(), col0 = tile_col0();
    const int col = col0 + VEC * mc;
    float4 v[VEC];
#pragma unroll
    for (int i = 0; i < VEC; ++i) {
        const int row = row0 + VEC * mr + i;
        const float* src = in + (size_t)row * cols + col;
        if (FAST) {
            v[i] = __ldg(reinterpret_cast<const float4*>(src));
        } else {
            const bool inside = row < rows;
            v[i].x = (inside && col + 0 < cols) ? __ldg(src + 0) : 0.0f;
            v[i].y = (inside && col + 1 < cols) ? __ldg(src + 1) : 0.0f;
            v[i].z = (inside && col + 2 < cols) ? __ldg(src + 2) : 0.0f;
            v[i].w = (inside && col + 3 < cols) ? __ldg(src + 3) : 0.0f;
        }
    }
    // Input column col + j, rows 4mr..4mr+3: chunk mr of transposed row VEC * mc + j.
    tile_chunk<STRIDE, SWIZZLE>(tile, VEC * mc + 0, mr) = make_float4(v[0].x, v[1].x, v[2].x, v[3].x);
    tile_chunk<STRIDE, SWIZZLE>(tile, VEC * mc + 1, mr) = make_float4(v[0].y, v[1].y, v[2].y, v[3].y);
    tile_chunk<STRIDE, SWIZZLE>(tile, VEC * mc + 2, mr) = make_float4(v[0].z, v[1].z, v[2].z, v[3].z);
    tile_chunk<STRIDE, SWIZZLE>(tile, VEC * mc + 3, mr) = make_float4(v[0].w, v[1].w, v[2].w, v[3].w);
    __syncthreads();
    constexpr int CHUNKS = TILE64 / VEC;           // 16 chunks a tile row
    constexpr int ROWS_A_PASS = THREADS_VEC4 / CHUNKS;  // 16 rows
    const int chunk = tid % CHUNKS;
    const int out_col = row0 + VEC * chunk;
#pragma unroll
    for (int p = 0; p < TILE64 / ROWS_A_PASS; ++p) {
        const int y = p * ROWS_A_PASS + tid / CHUNKS;
        const int out_row = col0 + y;
        const float4 w = tile_chunk<STRIDE, SWIZZLE>(tile, y, chunk);
        float* dst = out + (size_t)out_row * rows + out_col;
        if (FAST) {
            *reinterpret_cast<float4*>(dst) = w;
        } else if (out_row < cols) {
            if (out_col + 0 < rows) dst[0] = w.x;
            if (out_col + 1 < rows) dst[1] = w.y;
            if (out_col + 2 < rows) dst[2] = w.z;
            if (out_col + 3 < rows) dst[3] = w.w;
        }
    }
}

template <int STRIDE, bool SWIZZLE>
__device__ __forceinline__ void transpose_vec4(float (&tile)[TILE64][STRIDE], const float* __restrict__ in,
                                               float* __restrict__ out, int rows, int cols) {
    const bool aligned = rows % VEC == 0 && cols % VEC == 0 && (((size_t)in | (size_t)out) & 15) == 0;
    if (aligned && full_tile(rows, cols)) {
        vec4_pass<STRIDE, SWIZZLE, true>(tile, in, out, rows, cols);
    } else {
        vec4_pass<STRIDE, SWIZZLE, false>(tile, in, out, rows, cols);
    }
}

extern "C" __global__ void transpose_vec4_padded(const float* __restrict__ in, float* __restrict__ out,
                                                 int rows, int cols) {
    __shared__ __align__(16) float tile[TILE64][TILE64 + VEC];
    transpose_vec4<TILE64 + VEC, false>(tile, in, out, rows, cols);
}

extern "C" __global__ void transpose_vec4_swizzled(const float* __restrict__ in, float* __restrict__ out,
                                                   int rows, int cols) {
    __shared__ __align__(16) float tile[TILE64][TILE64];
    transpose_vec4<TILE64, true>(tile, in, out, rows, cols);
}
