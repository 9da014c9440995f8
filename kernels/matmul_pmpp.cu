// Tiled matrix multiplication P = M N after PMPP (Kirk and Hwu), chapter 5, with its boundary
// checks: M is m x k, N is k x n, P is m x n, all fp32 row-major, any m, k, n. Tiles that
// overhang the matrices are zero-filled so every thread reaches both __syncthreads().
// Launch: block (TILE_WIDTH, TILE_WIDTH), grid (ceil(n / TILE_WIDTH), ceil(m / TILE_WIDTH)).

template <int TILE_WIDTH>
__global__ void matmul_pmpp(const float* __restrict__ M, const float* __restrict__ N, float* __restrict__ P,
                            int m, int k, int n) {
    __shared__ float Mds[TILE_WIDTH][TILE_WIDTH];
    __shared__ float Nds[TILE_WIDTH][TILE_WIDTH];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row = blockIdx.y * TILE_WIDTH + ty;
    const int col = blockIdx.x * TILE_WIDTH + tx;
    float value = 0.0f;
    for (int ph = 0; ph < (k + TILE_WIDTH - 1) / TILE_WIDTH; ++ph) {
        const int m_col = ph * TILE_WIDTH + tx;
        const int n_row = ph * TILE_WIDTH + ty;
        Mds[ty][tx] = (row < m && m_col < k) ? M[(size_t)row * k + m_col] : 0.0f;
        Nds[ty][tx] = (n_row < k && col < n) ? N[(size_t)n_row * n + col] : 0.0f;
        __syncthreads();
        for (int i = 0; i < TILE_WIDTH; ++i) value += Mds[ty][i] * Nds[i][tx];
        __syncthreads();
    }
    if (row < m && col < n) P[(size_t)row * n + col] = value;
}

template __global__ void matmul_pmpp<16>(const float* __restrict__, const float* __restrict__, float* __restrict__,
                                         int, int, int);
