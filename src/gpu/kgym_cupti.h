// libkgym_cupti.so: a CUPTI activity recorder loaded into the process that runs candidate kernels.
//
// Loading: either set CUDA_INJECTION64_PATH=/path/libkgym_cupti.so before CUDA initialises (the driver calls
// InitializeInjection), or load it explicitly (ctypes.CDLL) and call kgym_cupti_init() before the first
// kernel that must be seen. Output goes to KGYM_CUPTI_OUT: "fd:N" (an inherited descriptor, e.g. a pipe or a
// memfd) or a path (created/truncated). Without KGYM_CUPTI_OUT initialisation fails.
//
// What is recorded (format in cupti_format.h): every kernel execution (CONCURRENT_KERNEL, so streams still
// overlap), memcpy and memset, the external-correlation joins that attribute them to tags, begin/end markers,
// errors of CUPTI calls (as ERROR records, never a crash), dropped-record counts and flush markers.
//
// Threading: begin/end act on the calling thread's external-correlation stack (CUPTI semantics): work
// launched by another thread (e.g. the autograd engine's device threads during backward) is untagged.
// All functions may be called from any thread; output writes are serialised internally.
//
// Coexistence: CUPTI allows one activity client per process; do not use torch.profiler (Kineto) while this
// library is active.
#ifndef KGYM_GPU_KGYM_CUPTI_H_
#define KGYM_GPU_KGYM_CUPTI_H_

#include <stdint.h>

#define KGYM_CUPTI_API __attribute__((visibility("default")))

#ifdef __cplusplus
extern "C" {
#endif

// Called by the CUDA driver when loaded through CUDA_INJECTION64_PATH. Returns 1 on success, 0 otherwise.
KGYM_CUPTI_API int InitializeInjection(void);

// Opens the output named by KGYM_CUPTI_OUT, writes the stream header, registers buffers and enables the
// activity kinds. Idempotent: a second call returns the first call's result. 0 on success, <0 on failure
// (-1 no/invalid KGYM_CUPTI_OUT, -2 output not writable, -3 CUPTI refused activity recording).
KGYM_CUPTI_API int kgym_cupti_init(void);

// Like kgym_cupti_init but with the output spec given directly ("fd:N" or a path).
KGYM_CUPTI_API int kgym_cupti_init_output(const char* spec);

// Push `tag` (see cupti_format.h for the encoding) as the calling thread's external correlation id and write
// a BEGIN marker. 0 on success, <0 if not initialised or CUPTI failed (an ERROR record is written).
KGYM_CUPTI_API int kgym_cupti_begin(uint64_t tag);

// Pop the innermost tag of the calling thread and write an END marker with it. 0 on success, <0 on error.
KGYM_CUPTI_API int kgym_cupti_end(void);

// Hand every completed activity buffer to the output (cuptiActivityFlushAll, forced), then write DROPPED
// (if any) and a FLUSH record. Synchronise the device first if the records of launched work must be
// included. Returns the flush sequence number (>= 1) or <0 on error.
KGYM_CUPTI_API int64_t kgym_cupti_flush(void);

// cuptiGetTimestamp(): the clock of the kernel records, in ns. 0 if CUPTI failed.
KGYM_CUPTI_API uint64_t kgym_cupti_gpu_timestamp(void);

// Flush, disable activity recording and close the output. Also run at process exit.
KGYM_CUPTI_API int kgym_cupti_shutdown(void);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // KGYM_GPU_KGYM_CUPTI_H_
