// fp16 tensor-core matmul c = a b: a (m x k) and b (k x n) fp16 row-major, c (m x n) fp32, fp32
// accumulation; m, n and k multiples of 64 (whole tiles: the kernels check no bounds). Operands go
// through shared tiles and ldmatrix (sm_75) into mma.sync.m16n8k16 (sm_80), both as inline PTX.
// Compiled at run time by CuPy (NVRTC, -lineinfo).
//
// One block of 128 threads (4 warps, 2 x 2) per 64 x 64 tile of c; a warp computes 32 x 32 of it
// (2 x 4 mma tiles of 16 x 8). Per 64-wide step of k, two 64 x 64 fp16 shared tiles, SA (a's rows
// 64 by, k 64 across) and SB (b's k rows, 64 columns): a tile row is 128 bytes = 8 chunks of 16
// bytes, off(r, c) the byte offset of chunk c (halves 8c..8c+7) of row r in a layout.
//   1. fill     thread t, i = 0..3: row r = 16 i + t / 8, chunk c = t % 8: a 16-byte global load
//               (LDG.128), then a 16-byte store to SA + off(r, c), the same for SB  SASS STS.128
//               (plain stores, not cp.async: their quarter-warp phases are documented, while
//               cp.async's shared writes follow a rule fitted to measurements, bank_model.py)
//   2. 4 steps of 16 along k, per warp: ldmatrix.x4 of a's fragments, lane l: SA + off(32 wm + 16 mi
//               + l % 16, 2 s + l / 16) for mi = 0, 1; ldmatrix.x4.trans of b's, lane l: SB + off(16 s
//               + l % 16, 4 wn + 2 nj + l / 16) for nj = 0, 1; then 8 mma.sync    SASS LDSM.16.M88.4,
//               LDSM.16.MT88.4, HMMA.16816.F32
// The layouts (kernels/tensor_matmul.py computes each instruction's wavefronts from them):
//   LAYOUT_CONFLICT  r * 128 + 16c                 __half [64][64]: a matrix's 8 rows in one bank group
//   LAYOUT_PADDED    r * 144 + 16c                 __half [64][72]: rows padded by 16 bytes
//   LAYOUT_SWIZZLED  r * 128 + 16 (c ^ (r % 8))    the article's formula, 16-byte chunks, 128-byte lines

#define BM 64
#define BN 64
#define BK 64
#define THREADS 128
#define LAYOUT_CONFLICT 0
#define LAYOUT_PADDED 1
#define LAYOUT_SWIZZLED 2

typedef unsigned short half_bits;  // an fp16 value as its bits: only the tensor cores read them

template <int LAYOUT>
struct Tile;

template <>
struct Tile<LAYOUT_CONFLICT> {
    static constexpr int BYTES = 64 * 128;
    static __device__ __forceinline__ unsigned off(int r, int c) { return r * 128 + 16 * c; }
};

template <>
struct Tile<LAYOUT_PADDED> {
    static constexpr int BYTES = 64 * 144;
    static __device__ __forceinline__ unsigned off(int r, int c) { return r * 144 + 16 * c; }
};

template <>
struct Tile<LAYOUT_SWIZZLED> {
    static constexpr int BYTES = 64 * 128;
    static __device__ __forceinline__ unsigned off(int r, int c) { return r * 128 + 16 * (c ^ (r & 7)); }
};

__device__ __forceinline__ void store_shared_16(unsigned address, uint4 v) {
    asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};\n" ::"r"(address), "r"(v.x), "r"(v.y), "r"(v.z),
                 "r"(v.w)
                 : "memory");
}

template <int LAYOUT>
__device__ __forceinline__ void matmul_tile(unsigned char* SA, unsigned char* SB, const half_bits* __restrict__ a,
                                            const half_bits* __restrict__ b, float* __restrict__ c, int m, int k,
                                            int n) {
    typedef Tile<LAYOUT> L;
    const int t = threadIdx.x, lane = t & 31, warp = t >> 5;
    const int wm = warp >> 1, wn = warp & 1;  // the warp's 32 x 32 of the block's 64 x 64
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    const unsigned sa = (unsigned)__cvta_generic_to_shared(SA);
    const unsigned sb = (unsigned)__cvta_generic_to_shared(SB);
    float acc[2][4][4];
#pragma unroll
    for (int mi = 0; mi < 2; ++mi)
#pragma unroll
        for (int ni = 0; ni < 4; ++ni)
#pragma unroll
            for (int e = 0; e < 4; ++e) acc[mi][ni][e] = 0.0f;

    for (int k0 = 0; k0 < k; k0 += BK) {
        // 1. global -> SA, SB: a quarter-warp moves one 128-byte tile row
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            const int r = 16 * i + (t >> 3), ch = t & 7;
            const uint4 va = *reinterpret_cast<const uint4*>(a + (size_t)(row0 + r) * k + k0 + 8 * ch);
            const uint4 vb = *reinterpret_cast<const uint4*>(b + (size_t)(k0 + r) * n + col0 + 8 * ch);
            store_shared_16(sa + L::off(r, ch), va);
            store_shared_16(sb + L::off(r, ch), vb);
        }
        __syncthreads();

        // 2. four steps of 16 along k: fragments through ldmatrix, products on the tensor cores
#pragma unroll
        for (int s = 0; s < BK / 16; ++s) {
            unsigned af[2][4], bf[2][4];
#pragma unroll
            for (int mi = 0; mi < 2; ++mi)
                asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                             : "=r"(af[mi][0]), "=r"(af[mi][1]), "=r"(af[mi][2]), "=r"(af[mi][3])
                             : "r"(sa + L::off(32 * wm + 16 * mi + (lane & 15), 2 * s + (lane >> 4)))
                             : "memory");
#pragma unroll
            for (int nj = 0; nj < 2; ++nj)
                asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                             : "=r"(bf[nj][0]), "=r"(bf[nj][1]), "=r"(bf[nj][2]), "=r"(bf[nj][3])
                             : "r"(sb + L::off(16 * s + (lane & 15), 4 * wn + 2 * nj + (lane >> 4)))
                             : "memory");
#pragma unroll
            for (int mi = 0; mi < 2; ++mi)
#pragma unroll
                for (int ni = 0; ni < 4; ++ni) {
                    float* d = acc[mi][ni];
                    // n tile ni: b's matrices 0, 1 (k 0-7, 8-15) of bf[ni / 2] for even ni, 2, 3 for odd
                    const unsigned b0 = bf[ni >> 1][2 * (ni & 1)], b1 = bf[ni >> 1][2 * (ni & 1) + 1];
                    asm volatile(
                        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
                        "{%8, %9}, {%0, %1, %2, %3};\n"
                        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                        : "r"(af[mi][0]), "r"(af[mi][1]), "r"(af[mi][2]), "r"(af[mi][3]), "r"(b0), "r"(b1));
                }
        }
        __syncthreads();
    }

    // 3. registers -> c: thread t holds rows t / 4 and t / 4 + 8, columns 2 (t % 4) ..+1 of each mma tile
#pragma unroll
    for (int mi = 0; mi < 2; ++mi)
#pragma unroll
        for (int ni = 0; ni < 4; ++ni) {
            const int row = row0 + 32 * wm + 16 * mi + (lane >> 2), col = col0 + 32 * wn + 8 * ni + 2 * (lane & 3);
            *reinterpret_cast<float2*>(c + (size_t)row * n + col) = make_float2(acc[mi][ni][0], acc[mi][ni][1]);
            *reinterpret_cast<float2*>(c + (size_t)(row + 8) * n + col) = make_float2(acc[mi][ni][2], acc[mi][ni][3]);
        }
}

// One kernel a layout: SA and SB in static shared memory, 128-byte aligned (bank 0 at offset 0).
extern "C" __global__ void __launch_bounds__(THREADS)
    tensor_matmul_conflict(const half_bits* __restrict__ a, const half_bits* __restrict__ b, float* __restrict__ c,
                           int m, int k, int n) {
    __shared__ __align__(128) unsigned char SA[Tile<LAYOUT_CONFLICT>::BYTES];
    __shared__ __align__(128) unsigned char SB[Tile<LAYOUT_CONFLICT>::BYTES];
    matmul_tile<LAYOUT_CONFLICT>(SA, SB, a, b, c, m, k, n);
}

extern "C" __global__ void __launch_bounds__(THREADS)
    tensor_matmul_padded(const half_bits* __restrict__ a, const half_bits* __restrict__ b, float* __restrict__ c,
                         int m, int k, int n) {
    __shared__ __align__(128) unsigned char SA[Tile<LAYOUT_PADDED>::BYTES];
    __shared__ __align__(128) unsigned char SB[Tile<LAYOUT_PADDED>::BYTES];
    matmul_tile<LAYOUT_PADDED>(SA, SB, a, b, c, m, k, n);
}

extern "C" __global__ void __launch_bounds__(THREADS)
    tensor_matmul_swizzled(const half_bits* __restrict__ a, const half_bits* __restrict__ b, float* __restrict__ c,
                           int m, int k, int n) {
    __shared__ __align__(128) unsigned char SA[Tile<LAYOUT_SWIZZLED>::BYTES];
    __shared__ __align__(128) unsigned char SB[Tile<LAYOUT_SWIZZLED>::BYTES];
    matmul_tile<LAYOUT_SWIZZLED>(SA, SB, a, b, c, m, k, n);
}
