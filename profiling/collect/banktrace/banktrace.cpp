// memlens banks: the host side, an injection library of the CUDA Sanitizer API. Loaded by LD_PRELOAD (a static
// initializer subscribes, as NVIDIA's compute-sanitizer-samples do) or by CUDA_INJECTION64_PATH (the driver
// calls InitializeInjection); either way it subscribes once, since a process may hold one subscriber only.
//
// A kernel's first MEMLENS_BANKS_LAUNCHES launches are traced: its module is patched at the first of them (every
// shared-memory access, ldmatrix/stmatrix and cp.async then calls banktrace_patch.cu's functions) and unpatched
// when a kernel of it that is done launches again, so that a program's later launches run its own code at full
// speed; a module of no traced kernel is never patched. Each traced launch gets a cleared MemlensBanksTrace
// (banktrace.h); at its end the stream is synchronized and the records of the first MEMLENS_BANKS_WARPS
// executions of each instruction are written as one JSON line to MEMLENS_BANKS_OUT/trace.<pid>.jsonl, flushed,
// so that a program that crashes later keeps what was recorded. memlens (collect/bank_trace.py) turns the lines
// into banks.json.
//
// Environment: MEMLENS_BANKS_PATCH (the patch fatbin), MEMLENS_BANKS_OUT (a folder), MEMLENS_BANKS_WARPS
// (default 4), MEMLENS_BANKS_LAUNCHES (launches traced a kernel, default 1; 0: every launch, each module patched
// as it loads), MEMLENS_BANKS_SLOTS (instructions a launch, a power of two, default 2048), MEMLENS_BANKS_EVERY
// (0: the recorded executions alone, no bank model on every execution).
#include <sanitizer.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "banktrace.h"

namespace {

struct ContextState {
    MemlensBanksTrace host{};  // the header as the device sees it; copied before each launch (outlives the copy)
    void* header = nullptr;  // device copies: header, slots, records
    void* slots = nullptr;
    void* records = nullptr;
    size_t slots_bytes = 0;
    size_t records_bytes = 0;
    bool ready = false;
};

struct ModuleState {
    std::string cubin_bytes;  // kept from its load until its first patch writes them to cubin_file
    std::string cubin_file;  // the file its cubin was written to (for source lines), "" where none
    bool patched = false;
    bool reported = false;  // its "module" event written (at its first patch)
    uint32_t in_flight = 0;  // traced launches begun and not ended: never unpatched under them
};

struct Tracer {
    Sanitizer_SubscriberHandle subscriber{};
    std::mutex lock;
    FILE* out = nullptr;
    std::string patch;
    std::string folder;
    std::map<CUmodule, ModuleState> modules;
    uint32_t cubins = 0;  // cubins written so far: each file a number of its own
    uint32_t warps = 4;
    uint32_t launches = 1;  // 0: every launch
    uint32_t slots = 2048;
    uint32_t every = 1;
    uint64_t unpatched = 0;  // times a module was unpatched so far (each launch line says)
    std::map<CUfunction, uint32_t> traced;  // kernel -> its launches traced so far
    std::set<CUcontext> patched_contexts;
    std::map<CUcontext, std::unique_ptr<ContextState>> contexts;
};

thread_local bool tracing_launch = false;  // between a traced launch's begin and end callbacks (one thread)

Tracer* tracer = nullptr;

std::string json_string(const char* text) {
    std::string quoted = "\"";
    for (const char* c = text ? text : ""; *c; ++c) {
        unsigned char ch = static_cast<unsigned char>(*c);
        if (ch == '"' || ch == '\\') {
            quoted += '\\';
            quoted += static_cast<char>(ch);
        } else if (ch < 0x20) {
            char escaped[8];
            snprintf(escaped, sizeof escaped, "\\u%04x", ch);
            quoted += escaped;
        } else {
            quoted += static_cast<char>(ch);
        }
    }
    return quoted + "\"";
}

const char* result_words(SanitizerResult result) {
    if (result == SANITIZER_SUCCESS) return "SANITIZER_SUCCESS";  // memlens reads success by this name
    const char* words = nullptr;
    if (sanitizerGetResultString(result, &words) != SANITIZER_SUCCESS || words == nullptr) return "unknown";
    return words;
}

void emit(const std::string& line) {  // tracer->lock held
    if (tracer->out == nullptr) return;
    fputs(line.c_str(), tracer->out);
    fputc('\n', tracer->out);
    fflush(tracer->out);
}

void error(const char* what, SanitizerResult result) {
    emit(std::string("{\"event\": \"error\", \"what\": ") + json_string(what) + ", \"result\": " +
         json_string(result_words(result)) + "}");
}

// The module's binary, written beside the trace: memlens maps each instruction's offset to its source line
// with nvdisasm. A file name, or "" where there is no binary or it cannot be written.
std::string write_cubin(const std::string& bytes) {
    if (bytes.empty()) return "";
    std::string name = "module." + std::to_string(getpid()) + "." + std::to_string(tracer->cubins++) + ".cubin";
    FILE* file = fopen((tracer->folder + "/" + name).c_str(), "wb");
    if (file == nullptr) return "";
    bool whole = fwrite(bytes.data(), 1, bytes.size(), file) == bytes.size();
    whole = fclose(file) == 0 && whole;
    return whole ? name : "";
}

bool add_patches(CUcontext context) {
    if (!tracer->patched_contexts.insert(context).second) return true;
    SanitizerResult added = sanitizerAddPatchesFromFile(tracer->patch.c_str(), context);
    if (added == SANITIZER_SUCCESS) return true;
    tracer->patched_contexts.erase(context);
    error("sanitizerAddPatchesFromFile", added);
    return false;
}

// Every shared-memory, matrix and cp.async instruction of the module made to call the patch; its first time
// writes its cubin and a "module" event with each kind's result.
void patch_module(CUmodule module, ModuleState& state) {
    struct Kind {
        const char* name;
        Sanitizer_InstructionId id;
        const char* callback;
    };
    const Kind kinds[] = {
        {"shared", SANITIZER_INSTRUCTION_SHARED_MEMORY_ACCESS, "memlens_shared"},
        {"matrix", SANITIZER_INSTRUCTION_MATRIX_MEMORY_ACCESS, "memlens_matrix"},
        {"memcpy_async", SANITIZER_INSTRUCTION_MEMCPY_ASYNC, "memlens_memcpy_async"},
    };
    std::string results;
    for (const Kind& kind : kinds) {
        SanitizerResult result = sanitizerPatchInstructions(kind.id, module, kind.callback);
        results += std::string(results.empty() ? "" : ", ") + json_string(kind.name) + ": " +
                   json_string(result_words(result));
    }
    SanitizerResult patched = sanitizerPatchModule(module);
    state.patched = patched == SANITIZER_SUCCESS;
    if (!state.patched) error("sanitizerPatchModule", patched);
    if (state.reported) return;
    state.reported = true;
    state.cubin_file = write_cubin(state.cubin_bytes);
    size_t bytes = state.cubin_bytes.size();
    std::string().swap(state.cubin_bytes);
    emit("{\"event\": \"module\", \"cubin_bytes\": " + std::to_string(bytes) + ", \"patched\": {" + results +
         "}, \"module\": " + json_string(result_words(patched)) + ", \"cubin\": " +
         json_string(state.cubin_file.c_str()) + "}");
}

void module_loaded(const Sanitizer_ResourceModuleData* data) {
    ModuleState& state = tracer->modules[data->module];
    state = ModuleState();  // a handle reused after an unload is a new module
    if (data->pCubin != nullptr && data->cubinSize != 0)
        state.cubin_bytes.assign(static_cast<const char*>(data->pCubin), data->cubinSize);
    if (!add_patches(data->context)) return;
    if (tracer->launches == 0) patch_module(data->module, state);
}

ContextState* context_state(CUcontext context) {
    std::unique_ptr<ContextState>& state = tracer->contexts[context];
    if (state) return state->ready ? state.get() : nullptr;
    state.reset(new ContextState());
    state->slots_bytes = sizeof(MemlensBanksSlot) * tracer->slots;
    state->records_bytes = sizeof(MemlensBanksRecord) * tracer->slots * tracer->warps;
    SanitizerResult a = sanitizerAlloc(context, &state->header, sizeof(MemlensBanksTrace));
    SanitizerResult b = sanitizerAlloc(context, &state->slots, state->slots_bytes);
    SanitizerResult c = sanitizerAlloc(context, &state->records, state->records_bytes);
    if (a != SANITIZER_SUCCESS || b != SANITIZER_SUCCESS || c != SANITIZER_SUCCESS) {
        error("sanitizerAlloc", a != SANITIZER_SUCCESS ? a : (b != SANITIZER_SUCCESS ? b : c));
        return nullptr;
    }
    state->host.slots = static_cast<MemlensBanksSlot*>(state->slots);
    state->host.records = static_cast<MemlensBanksRecord*>(state->records);
    state->host.slot_count = tracer->slots;
    state->host.warps = tracer->warps;
    state->host.every = tracer->every;
    state->ready = true;
    return state.get();
}

// A kernel done with (its launches traced) runs its module's own code: the module is unpatched, once no traced
// launch of it is running. A kernel not done gets its module patched and the launch a cleared trace.
void launch_begin(const Sanitizer_LaunchData* launch) {
    tracing_launch = false;
    ModuleState& module = tracer->modules[launch->module];
    uint32_t& traced = tracer->traced[launch->function];
    if (tracer->launches != 0 && traced >= tracer->launches) {
        if (module.patched && module.in_flight == 0) {
            sanitizerStreamSynchronize(launch->hStream);  // its earlier launches ran the patched code
            SanitizerResult unpatched = sanitizerUnpatchModule(launch->module);
            if (unpatched == SANITIZER_SUCCESS) {
                module.patched = false;
                ++tracer->unpatched;
            } else {
                error("sanitizerUnpatchModule", unpatched);
            }
        }
        return;
    }
    ContextState* state = context_state(launch->context);
    if (state == nullptr) return;  // the patch finds no trace (null userdata) and records nothing
    if (!module.patched) {
        if (!add_patches(launch->context)) return;
        patch_module(launch->module, module);
        if (!module.patched) return;
    }
    ++traced;
    ++module.in_flight;
    tracing_launch = true;
    state->host.full = 0;
    sanitizerMemset(state->slots, 0, state->slots_bytes, launch->hStream);
    sanitizerMemset(state->records, 0, state->records_bytes, launch->hStream);
    sanitizerMemcpyHostToDeviceAsync(state->header, &state->host, sizeof(MemlensBanksTrace), launch->hStream);
    SanitizerResult set = sanitizerSetLaunchCallbackData(launch->hLaunch, launch->function, launch->hStream,
                                                         state->header);
    if (set != SANITIZER_SUCCESS) error("sanitizerSetLaunchCallbackData", set);
}

std::string record_json(const MemlensBanksRecord& r, uint64_t function_pc) {
    std::string line = "{\"pc_offset\": " + std::to_string(r.pc - function_pc) + ", \"kind\": " +
                       std::to_string(r.kind) + ", \"size\": " + std::to_string(r.size) + ", \"flags\": " +
                       std::to_string(r.flags) + ", \"matrices\": " + std::to_string(r.matrices) +
                       ", \"active\": " + std::to_string(r.active) + ", \"block\": [" + std::to_string(r.block[0]) +
                       ", " + std::to_string(r.block[1]) + ", " + std::to_string(r.block[2]) +
                       "], \"warp\": " + std::to_string(r.warp) + ", \"offsets\": [";
    for (uint32_t lane = 0; lane < MEMLENS_BANKS_LANES; ++lane) {
        bool on = (r.written >> lane) & 1u;
        line += (lane ? ", " : "") + (on ? std::to_string(r.offset[lane]) : std::string("null"));
    }
    line += "]";
    if (r.kind == MEMLENS_BANKS_MEMCPY_ASYNC) {
        line += ", \"sources\": [";
        for (uint32_t lane = 0; lane < MEMLENS_BANKS_LANES; ++lane) {
            bool on = (r.written >> lane) & 1u;
            line += (lane ? ", " : "") + (on ? std::to_string(r.source[lane]) : std::string("null"));
        }
        line += "]";
    }
    return line + "}";
}

void launch_end(const Sanitizer_LaunchData* launch) {
    if (!tracing_launch) return;
    tracing_launch = false;
    ModuleState& module = tracer->modules[launch->module];
    if (module.in_flight > 0) --module.in_flight;
    auto found = tracer->contexts.find(launch->context);
    if (found == tracer->contexts.end() || !found->second || !found->second->ready) return;
    ContextState* state = found->second.get();
    SanitizerResult synced = sanitizerStreamSynchronize(launch->hStream);
    if (synced != SANITIZER_SUCCESS) {
        error("sanitizerStreamSynchronize", synced);
        return;
    }
    MemlensBanksTrace header{};
    std::vector<MemlensBanksSlot> slots(tracer->slots);
    sanitizerMemcpyDeviceToHost(&header, state->header, sizeof header, launch->hStream);
    sanitizerMemcpyDeviceToHost(slots.data(), state->slots, state->slots_bytes, launch->hStream);
    uint64_t function_pc = 0, function_size = 0;
    sanitizerGetFunctionPcAndSize(launch->module, launch->functionName, &function_pc, &function_size);
    std::string line = "{\"event\": \"launch\", \"kernel\": " + json_string(launch->functionName) +
                       ", \"cubin\": " + json_string(module.cubin_file.c_str()) +
                       ", \"grid\": [" + std::to_string(launch->gridDim_x) + ", " + std::to_string(launch->gridDim_y) +
                       ", " + std::to_string(launch->gridDim_z) + "], \"block\": [" + std::to_string(launch->blockDim_x) +
                       ", " + std::to_string(launch->blockDim_y) + ", " + std::to_string(launch->blockDim_z) +
                       "], \"function_size\": " + std::to_string(function_size) +
                       ", \"full\": " + std::to_string(header.full) + ", \"unpatched\": " +
                       std::to_string(tracer->unpatched) + ", \"records\": [";
    bool first = true;
    MemlensBanksRecord record{};
    for (uint32_t s = 0; s < tracer->slots; ++s) {
        if (slots[s].pc == MEMLENS_BANKS_EMPTY_PC) continue;
        uint32_t taken = slots[s].claimed < tracer->warps ? slots[s].claimed : tracer->warps;
        for (uint32_t n = 0; n < taken; ++n) {
            char* source = static_cast<char*>(state->records) + sizeof(MemlensBanksRecord) * (size_t(s) * tracer->warps + n);
            if (sanitizerMemcpyDeviceToHost(&record, source, sizeof record, launch->hStream) != SANITIZER_SUCCESS) continue;
            if (record.written == 0) continue;
            line += (first ? "" : ", ") + record_json(record, function_pc);
            first = false;
        }
    }
    line += "], \"totals\": [";  // the bank model over every execution, instruction by instruction
    first = true;
    for (uint32_t s = 0; s < tracer->slots; ++s) {
        if (slots[s].pc == MEMLENS_BANKS_EMPTY_PC || slots[s].executions == 0) continue;
        line += std::string(first ? "" : ", ") + "{\"pc_offset\": " + std::to_string(slots[s].pc - function_pc) +
                ", \"executions\": " + std::to_string(slots[s].executions) + ", \"wavefronts\": " +
                std::to_string(slots[s].wavefronts) + ", \"ideal\": " + std::to_string(slots[s].ideal) + "}";
        first = false;
    }
    emit(line + "]}");
}

thread_local bool inside_callback = false;  // the Sanitizer's own launches and copies call back on this thread

void callback(void*, Sanitizer_CallbackDomain domain, Sanitizer_CallbackId cbid, const void* data) {
    if (inside_callback) return;
    struct Inside {
        Inside() { inside_callback = true; }
        ~Inside() { inside_callback = false; }
    } inside;
    std::lock_guard<std::mutex> guard(tracer->lock);
    if (domain == SANITIZER_CB_DOMAIN_RESOURCE && cbid == SANITIZER_CBID_RESOURCE_MODULE_LOADED) {
        module_loaded(static_cast<const Sanitizer_ResourceModuleData*>(data));
    } else if (domain == SANITIZER_CB_DOMAIN_LAUNCH && cbid == SANITIZER_CBID_LAUNCH_BEGIN) {
        launch_begin(static_cast<const Sanitizer_LaunchData*>(data));
    } else if (domain == SANITIZER_CB_DOMAIN_LAUNCH && cbid == SANITIZER_CBID_LAUNCH_END) {
        launch_end(static_cast<const Sanitizer_LaunchData*>(data));
    }
}

uint32_t env_count(const char* name, uint32_t fallback) {
    const char* text = getenv(name);
    if (text == nullptr || *text == '\0') return fallback;
    char* end = nullptr;
    unsigned long value = strtoul(text, &end, 10);
    return (end && *end == '\0' && value > 0 && value < (1ul << 24)) ? static_cast<uint32_t>(value) : fallback;
}

int start() {
    static std::once_flag once;
    static int status = 0;
    std::call_once(once, [] {
        const char* patch = getenv("MEMLENS_BANKS_PATCH");
        const char* folder = getenv("MEMLENS_BANKS_OUT");
        if (patch == nullptr || folder == nullptr) {
            status = 1;  // loaded outside memlens: do nothing
            return;
        }
        tracer = new Tracer();  // lives as long as the process: callbacks may come during exit
        tracer->patch = patch;
        tracer->folder = folder;
        tracer->warps = env_count("MEMLENS_BANKS_WARPS", 4);
        const char* launches = getenv("MEMLENS_BANKS_LAUNCHES");
        tracer->launches = (launches != nullptr && strcmp(launches, "0") == 0) ? 0 : env_count("MEMLENS_BANKS_LAUNCHES", 1);
        const char* every = getenv("MEMLENS_BANKS_EVERY");
        tracer->every = (every != nullptr && strcmp(every, "0") == 0) ? 0 : 1;
        uint32_t slots = env_count("MEMLENS_BANKS_SLOTS", 2048);
        tracer->slots = 1;
        while (tracer->slots < slots) tracer->slots <<= 1;
        std::string path = std::string(folder) + "/trace." + std::to_string(getpid()) + ".jsonl";
        tracer->out = fopen(path.c_str(), "a");
        if (tracer->out == nullptr) {
            status = 1;
            return;
        }
        SanitizerResult subscribed = sanitizerSubscribe(&tracer->subscriber, callback, nullptr);
        if (subscribed != SANITIZER_SUCCESS) {
            error("sanitizerSubscribe (another Sanitizer tool in this process?)", subscribed);
            status = 1;
            return;
        }
        sanitizerEnableDomain(1, tracer->subscriber, SANITIZER_CB_DOMAIN_RESOURCE);
        sanitizerEnableDomain(1, tracer->subscriber, SANITIZER_CB_DOMAIN_LAUNCH);
        emit("{\"event\": \"start\", \"pid\": " + std::to_string(getpid()) + ", \"warps\": " +
             std::to_string(tracer->warps) + ", \"launches\": " + std::to_string(tracer->launches) +
             ", \"slots\": " + std::to_string(tracer->slots) +
             ", \"every\": " + std::to_string(tracer->every) + "}");
    });
    return status;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int InitializeInjection() {
    start();
    return 0;  // never fail the program's CUDA initialisation because of the trace
}

// LD_PRELOAD: subscribe before the program's first CUDA call.
static int memlens_banks_started = start();
