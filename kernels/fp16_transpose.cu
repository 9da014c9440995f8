// fp16 transpose out = a.T of an n x n matrix (n a multiple of 32) through the shared-memory
// instructions of Ampere and Hopper: cp.async (sm_80), ldmatrix (sm_75) and stmatrix (sm_90).
// Compiled at run time by CuPy (NVRTC, -lineinfo); needs compute capability 9.0 for stmatrix.
//
// One block of 128 threads (4 warps) per 32 x 32 tile; a tile row is 64 bytes = 4 chunks of
// 16 bytes. Two shared buffers S and U per block share one layout: off(r, c) = byte offset of
// 16-byte chunk c (halves 8c..8c+7) of tile row r. Per tile, each instruction once per warp:
//   1. cp.async 16 B  thread t copies input tile row r = t / 4, chunk c = t % 4 into S + off(r, c)
//                     (a quarter-warp: 2 rows)                                    SASS LDGSTS
//   2. ldmatrix.x4.trans  lane l of warp w gives S + off(l, w): matrix m = l / 8 is S rows
//                     8m..8m+7, chunk w; register m of thread t then holds T[8w + t/4][8m + 2(t%4) ..+1]
//                     where T = S^T                                               SASS LDSM.16.MT88.4
//   3. stmatrix.x4    lane l gives U + off(8w + l % 8, l / 8): matrix m is U rows 8w..8w+7, chunk m;
//                     register m lands at U[8w + t/4][8m + 2(t%4) ..+1], so U = T   SASS STSM.16.M88.4
//   4. 16-byte load   thread t reads U + off(r, c) = T[r][8c..8c+7] = a[row0 + 8c .. +7][col0 + r] and
//                     stores it to out[col0 + r][row0 + 8c ..]                    SASS LDS.128
// The layouts (profiling/bank_model.py computes each instruction's wavefronts from them):
//   LAYOUT_DENSE     r * 64 + 16c
//   LAYOUT_PITCH128  r * 128 + 16c               rows padded to 128 bytes
//   LAYOUT_PADDED    r * 80 + 16c                __half [32][40]
//   LAYOUT_XOR_ROW   r * 64 + 16 ((c ^ r) & 3)   the article's formula, a 64-byte swizzle line (one row)
//   LAYOUT_XOR_128B  chunk i = 4r + c, line = i / 8, stored at 8 line + ((i % 8) ^ (line % 8)):
//                    the article's formula over 128-byte lines (two rows: the bytes one phase serves)

#define TILE 32
#define THREADS 128
#define LAYOUT_DENSE 0
#define LAYOUT_PITCH128 1
#define LAYOUT_PADDED 2
#define LAYOUT_XOR_ROW 3
#define LAYOUT_XOR_128B 4

typedef unsigned short half_bits;  // an fp16 value as its bits: the kernel only moves them

template <int LAYOUT>
struct Layout;

template <>
struct Layout<LAYOUT_DENSE> {
    static constexpr int BYTES = TILE * 64;
    static __device__ __forceinline__ unsigned off(int r, int c) { return r * 64 + 16 * c; }
};

template <>
struct Layout<LAYOUT_PITCH128> {
    static constexpr int BYTES = TILE * 128;
    static __device__ __forceinline__ unsigned off(int r, int c) { return r * 128 + 16 * c; }
};

template <>
struct Layout<LAYOUT_PADDED> {
    static constexpr int BYTES = TILE * 80;
    static __device__ __forceinline__ unsigned off(int r, int c) { return r * 80 + 16 * c; }
};

template <>
struct Layout<LAYOUT_XOR_ROW> {
    static constexpr int BYTES = TILE * 64;
    static __device__ __forceinline__ unsigned off(int r, int c) { return r * 64 + 16 * ((c ^ r) & 3); }
};

template <>
struct Layout<LAYOUT_XOR_128B> {
    static constexpr int BYTES = TILE * 64;
    static __device__ __forceinline__ unsigned off(int r, int c) {
        const int i = 4 * r + c, line = i >> 3;
        return 16 * ((line << 3) | ((i & 7) ^ (line & 7)));
    }
};

template <int LAYOUT>
__device__ __forceinline__ void transpose_tile(unsigned char* S, unsigned char* U, const half_bits* __restrict__ in,
                                               half_bits* __restrict__ out, int n) {
    typedef Layout<LAYOUT> L;
    const int t = threadIdx.x, lane = t & 31, warp = t >> 5;
    const int r = t >> 2, c = t & 3;
    const int row0 = blockIdx.y * TILE, col0 = blockIdx.x * TILE;
    const unsigned s = (unsigned)__cvta_generic_to_shared(S);
    const unsigned u = (unsigned)__cvta_generic_to_shared(U);

    // 1. global -> S, 16 bytes a thread, bypassing registers
    const half_bits* src = in + (size_t)(row0 + r) * n + col0 + 8 * c;
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s + L::off(r, c)), "l"(src) : "memory");
    asm volatile("cp.async.commit_group;\n" ::: "memory");
    asm volatile("cp.async.wait_group 0;\n" ::: "memory");
    __syncthreads();

    // 2. S -> registers, four 8x8 matrices transposed
    unsigned x0, x1, x2, x3;
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(x0), "=r"(x1), "=r"(x2), "=r"(x3)
                 : "r"(s + L::off(lane, warp))
                 : "memory");

    // 3. registers -> U
    asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(
                     u + L::off(8 * warp + (lane & 7), lane >> 3)),
                 "r"(x0), "r"(x1), "r"(x2), "r"(x3)
                 : "memory");
    __syncthreads();

    // 4. U -> global, 16 bytes a thread, tile origins swapped
    const uint4 v = *reinterpret_cast<const uint4*>(U + L::off(r, c));
    *reinterpret_cast<uint4*>(out + (size_t)(col0 + r) * n + row0 + 8 * c) = v;
}

// One kernel a layout: S and U, the two tiles, in static shared memory.
extern "C" __global__ void __launch_bounds__(THREADS) fp16_transpose_dense(const half_bits* __restrict__ in,
                                                                    half_bits* __restrict__ out, int n) {
    __shared__ __align__(128) unsigned char S[Layout<LAYOUT_DENSE>::BYTES];
    __shared__ __align__(128) unsigned char U[Layout<LAYOUT_DENSE>::BYTES];
    transpose_tile<LAYOUT_DENSE>(S, U, in, out, n);
}

extern "C" __global__ void __launch_bounds__(THREADS) fp16_transpose_pitch128(const half_bits* __restrict__ in,
                                                                    half_bits* __restrict__ out, int n) {
    __shared__ __align__(128) unsigned char S[Layout<LAYOUT_PITCH128>::BYTES];
    __shared__ __align__(128) unsigned char U[Layout<LAYOUT_PITCH128>::BYTES];
    transpose_tile<LAYOUT_PITCH128>(S, U, in, out, n);
}

extern "C" __global__ void __launch_bounds__(THREADS) fp16_transpose_padded(const half_bits* __restrict__ in,
                                                                    half_bits* __restrict__ out, int n) {
    __shared__ __align__(128) unsigned char S[Layout<LAYOUT_PADDED>::BYTES];
    __shared__ __align__(128) unsigned char U[Layout<LAYOUT_PADDED>::BYTES];
    transpose_tile<LAYOUT_PADDED>(S, U, in, out, n);
}

extern "C" __global__ void __launch_bounds__(THREADS) fp16_transpose_xor_row(const half_bits* __restrict__ in,
                                                                    half_bits* __restrict__ out, int n) {
    __shared__ __align__(128) unsigned char S[Layout<LAYOUT_XOR_ROW>::BYTES];
    __shared__ __align__(128) unsigned char U[Layout<LAYOUT_XOR_ROW>::BYTES];
    transpose_tile<LAYOUT_XOR_ROW>(S, U, in, out, n);
}

extern "C" __global__ void __launch_bounds__(THREADS) fp16_transpose_xor_128b(const half_bits* __restrict__ in,
                                                                    half_bits* __restrict__ out, int n) {
    __shared__ __align__(128) unsigned char S[Layout<LAYOUT_XOR_128B>::BYTES];
    __shared__ __align__(128) unsigned char U[Layout<LAYOUT_XOR_128B>::BYTES];
    transpose_tile<LAYOUT_XOR_128B>(S, U, in, out, n);
}
