// memlens banks: the device side. The CUDA Sanitizer API calls these functions for each thread that executes
// a patched shared-memory instruction. The lowest active lane claims a record for the warp (the first `warps`
// executions of each instruction, the instruction found by its PC in an open-addressing table), tells the
// other lanes which, and each lane writes its own offset. Built with
//   nvcc -arch=sm_XX --compile-as-tools-patch -fatbin -I<compute-sanitizer>/include banktrace_patch.cu
#include <sanitizer_patching.h>

#include "banktrace.h"
#include "banktrace_model.h"

static __device__ __forceinline__ uint32_t lane_id() {
    uint32_t lane;
    asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));
    return lane;
}

// The instruction's slot (its figures) in *slot_index, and the record this execution gets, if any.
static __device__ __forceinline__ uint32_t claim(MemlensBanksTrace* trace, uint64_t pc, uint32_t* slot_index) {
    uint32_t mask = trace->slot_count - 1;
    uint32_t start = (uint32_t)(pc >> 4) & mask;
    *slot_index = MEMLENS_BANKS_NO_RECORD;
    for (uint32_t probe = 0; probe < trace->slot_count; ++probe) {
        uint32_t at = (start + probe) & mask;
        MemlensBanksSlot* slot = &trace->slots[at];
        volatile MemlensBanksSlot* seen_slot = slot;
        unsigned long long seen = seen_slot->pc;  // a plain read first: a hot loop's warps take no atomic
        if (seen == MEMLENS_BANKS_EMPTY_PC) seen = atomicCAS(&slot->pc, MEMLENS_BANKS_EMPTY_PC, (unsigned long long)pc);
        if (seen != MEMLENS_BANKS_EMPTY_PC && seen != pc) continue;  // another instruction's slot
        *slot_index = at;
        if (seen_slot->claimed >= trace->warps) return MEMLENS_BANKS_NO_RECORD;
        uint32_t n = atomicAdd(&slot->claimed, 1u);
        if (n >= trace->warps) return MEMLENS_BANKS_NO_RECORD;
        return at * trace->warps + n;
    }
    trace->full = 1;
    return MEMLENS_BANKS_NO_RECORD;
}

static __device__ __forceinline__ void record(void* userdata, uint64_t pc, uint32_t kind, uint32_t offset,
                                              uint64_t source, uint32_t size, uint32_t flags, uint32_t matrices) {
    MemlensBanksTrace* trace = (MemlensBanksTrace*)userdata;
    if (trace == nullptr) return;
    uint32_t active = __activemask();
    uint32_t lane = lane_id();
    uint32_t leader = __ffs(active) - 1;
    uint32_t index = MEMLENS_BANKS_NO_RECORD, slot_index = MEMLENS_BANKS_NO_RECORD;
    if (lane == leader) index = claim(trace, pc, &slot_index);
    index = __shfl_sync(active, index, leader);
    slot_index = __shfl_sync(active, slot_index, leader);
    if (slot_index == MEMLENS_BANKS_NO_RECORD) return;  // the table is full: this instruction is not counted
    if (index != MEMLENS_BANKS_NO_RECORD) {
        MemlensBanksRecord* r = &trace->records[index];
        r->offset[lane] = offset;
        r->source[lane] = source;
        atomicOr(&r->written, 1u << lane);
        if (lane == leader) {
            uint32_t threads = blockDim.x * blockDim.y;
            uint32_t thread = threadIdx.x + blockDim.x * threadIdx.y + threads * threadIdx.z;
            r->pc = pc;
            r->kind = kind;
            r->size = size;
            r->flags = flags;
            r->matrices = matrices;
            r->active = active;
            r->block[0] = blockIdx.x;
            r->block[1] = blockIdx.y;
            r->block[2] = blockIdx.z;
            r->warp = thread / MEMLENS_BANKS_LANES;
        }
    }
    // every execution: the warp's offsets to its leader, which serves them as the bank model does
    if (!trace->every) return;
    uint32_t offsets[MEMLENS_BANKS_LANES];
    for (uint32_t other = 0; other < MEMLENS_BANKS_LANES; ++other) {
        if ((active >> other) & 1u) offsets[other] = __shfl_sync(active, offset, other);
    }
    if (lane != leader) return;
    uint32_t served = active;
    if (kind == MEMLENS_BANKS_MATRIX && matrices > 0 && matrices < 4) served &= (1u << (8u * matrices)) - 1u;
    uint32_t wavefronts = 0, ideal = 0;
    memlens_banks_serve(offsets, served, size, memlens_banks_group(size, kind == MEMLENS_BANKS_MATRIX), &wavefronts,
                        &ideal);
    MemlensBanksSlot* slot = &trace->slots[slot_index];
    atomicAdd(&slot->executions, 1ull);
    atomicAdd(&slot->wavefronts, (unsigned long long)wavefronts);
    atomicAdd(&slot->ideal, (unsigned long long)ideal);
}

extern "C" __device__ __noinline__ SanitizerPatchResult memlens_shared(void* userdata, uint64_t pc, void* ptr,
                                                                       uint32_t size, uint32_t flags,
                                                                       const void* data) {
    record(userdata, pc, MEMLENS_BANKS_SHARED, (uint32_t)(uintptr_t)ptr, 0, size, flags, 0);
    return SANITIZER_PATCH_SUCCESS;
}

extern "C" __device__ __noinline__ SanitizerPatchResult memlens_matrix(void* userdata, uint64_t pc, uint32_t address,
                                                                       uint32_t size, uint32_t flags, uint32_t count,
                                                                       const void* value) {
    record(userdata, pc, MEMLENS_BANKS_MATRIX, address, 0, size, flags, count);
    return SANITIZER_PATCH_SUCCESS;
}

extern "C" __device__ __noinline__ SanitizerPatchResult memlens_memcpy_async(void* userdata, uint64_t pc, void* src,
                                                                             uint32_t dst, uint32_t size,
                                                                             uint32_t zfill) {
    record(userdata, pc, MEMLENS_BANKS_MEMCPY_ASYNC, dst, (uint64_t)(uintptr_t)src, size, 2u, 0);
    return SANITIZER_PATCH_SUCCESS;
}
