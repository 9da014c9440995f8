// The layout memlens's device patch (banktrace_patch.cu) writes and its host library (banktrace.cpp) reads:
// one Trace a launch, in device memory the host allocates with sanitizerAlloc. Every array has a fixed size
// or is a separate allocation whose length the header carries: no trailing array is indexed past its end.
#pragma once
#include <stdint.h>

#define MEMLENS_BANKS_LANES 32u
#define MEMLENS_BANKS_EMPTY_PC 0ull  // an empty slot of the instruction table
#define MEMLENS_BANKS_NO_RECORD 0xffffffffu

// what a record is (the patch it came from)
enum MemlensBanksKind : uint32_t {
    MEMLENS_BANKS_SHARED = 1,  // SANITIZER_INSTRUCTION_SHARED_MEMORY_ACCESS: flags say load, store, atomic
    MEMLENS_BANKS_MATRIX = 2,  // SANITIZER_INSTRUCTION_MATRIX_MEMORY_ACCESS: ldmatrix (read), stmatrix (write)
    MEMLENS_BANKS_MEMCPY_ASYNC = 3,  // SANITIZER_INSTRUCTION_MEMCPY_ASYNC: cp.async, global source to shared
};

// One warp-level execution of one instruction: the lanes that executed it and each one's offset in the
// shared window (and, for cp.async, its global source address).
struct MemlensBanksRecord {
    uint64_t pc;  // absolute; the host subtracts the function's first PC
    uint32_t kind;  // MemlensBanksKind
    uint32_t size;  // bytes a lane (a matrix row: 16)
    uint32_t flags;  // Sanitizer_DeviceMemoryFlags
    uint32_t matrices;  // ldmatrix/stmatrix: how many 8x8 matrices; 0 otherwise
    uint32_t active;  // the lanes that executed it (a bit a lane)
    uint32_t written;  // the lanes whose offset was written (a bit a lane)
    uint32_t block[3];  // blockIdx
    uint32_t warp;  // the warp's index in its block
    uint32_t offset[MEMLENS_BANKS_LANES];
    uint64_t source[MEMLENS_BANKS_LANES];
};

// An instruction of the launch, how many of its executions were claimed (records slot * warps + n), and the
// bank model's figures summed over every one of its warp-level executions (banktrace_model.h).
struct MemlensBanksSlot {
    unsigned long long pc;  // MEMLENS_BANKS_EMPTY_PC where free
    unsigned int claimed;
    unsigned int pad;
    unsigned long long executions;
    unsigned long long wavefronts;
    unsigned long long ideal;
};

struct MemlensBanksTrace {
    MemlensBanksSlot* slots;  // slot_count of them
    MemlensBanksRecord* records;  // slot_count * warps of them
    uint32_t slot_count;  // a power of two
    uint32_t warps;  // executions recorded per instruction (--warps)
    uint32_t full;  // set when an instruction found no free slot
    uint32_t every;  // serve every execution by the bank model (its figures in the slots); 0: the records alone
};
