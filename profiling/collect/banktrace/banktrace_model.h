// The bank model of memlens (profiling/theory/bank_model.py), for one warp-level execution, in C++ that the
// device patch runs on every execution (the lowest active lane, after gathering its warp's offsets) and that
// tests/collect/test_bank_trace.py compiles on the host to hold it to the Python model.
//
// Lanes are served `group` at a time (a warp up to 4 bytes a lane, a half-warp for 8, a quarter-warp for 16,
// 8 lanes a matrix for ldmatrix/stmatrix); in a phase, lanes on one 4-byte word share it and a bank's distinct
// words take one wavefront each. A phase asks for at most 32 words (128 bytes), so its ideal is one wavefront.
#pragma once
#include <stdint.h>

#if defined(__CUDACC__)
#define MEMLENS_HD __host__ __device__
#else
#define MEMLENS_HD
#endif

// offsets[lane] is read where bit `lane` of `active` is set
MEMLENS_HD static inline void memlens_banks_serve(const uint32_t* offsets, uint32_t active, uint32_t size,
                                                  uint32_t group, uint32_t* wavefronts, uint32_t* ideal) {
    uint32_t spent = 0, best = 0;
    for (uint32_t start = 0; start < 32; start += group) {
        uint32_t words[32];
        uint32_t count = 0;
        for (uint32_t lane = start; lane < start + group && lane < 32; ++lane) {
            if (!((active >> lane) & 1u)) continue;
            uint32_t first = offsets[lane] / 4, last = (offsets[lane] + (size ? size : 1) - 1) / 4;
            for (uint32_t word = first; word <= last; ++word) {
                bool seen = false;
                for (uint32_t k = 0; k < count; ++k) seen = seen || words[k] == word;
                if (!seen && count < 32) words[count++] = word;
            }
        }
        if (count == 0) continue;
        uint32_t deepest = 0;
        for (uint32_t k = 0; k < count; ++k) {  // the number of this phase's words in word k's bank
            uint32_t same = 0;
            for (uint32_t j = 0; j < count; ++j) same += (words[j] % 32) == (words[k] % 32);
            deepest = same > deepest ? same : deepest;
        }
        spent += deepest;
        best += 1;
    }
    *wavefronts = spent;
    *ideal = best;
}

MEMLENS_HD static inline uint32_t memlens_banks_group(uint32_t size, bool matrix) {
    if (matrix) return 8;
    uint32_t lanes = 128 / (size ? size : 1);
    return lanes > 32 ? 32 : lanes;
}
