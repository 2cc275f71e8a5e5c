// GPU self-test of libkgym_cupti.so (needs a GPU; not run in CI).
//
//   KGYM_CUPTI_OUT=/tmp/selftest.kgym ./kgym_cupti_selftest
//
// Launches known work and checks, through the kgym_gpu parser, that the recorder saw it as launched:
//   timing calls 0..4: a short kernel on stream A (the one CUDA events are recorded on) and a longer one on
//     stream B (side stream) -> the CUPTI span covers both, the events only A;
//   timing call 5: nothing launched -> an empty call that is still present;
//   timing call 6: kernels overlapping on A and B -> busy < sum of durations;
//   correctness call 0: a device-to-device memcpy and a memset;
//   a kernel outside any begin/end -> untagged; a kernel launched by another thread during a tagged call ->
//     untagged (CUPTI's external correlation is per thread).
// Exit status 0 when every expectation holds; the table on stdout shows the numbers.
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <thread>

#include "gpu/cupti_format.h"
#include "gpu/kgym_cupti.h"

extern "C" int kgym_selftest_check(const char* path, const double* event_us, const double* host_us,
                                   int num_side_stream_calls);

#define CK(call)                                                                                 \
  do {                                                                                           \
    cudaError_t e_ = (call);                                                                     \
    if (e_ != cudaSuccess) {                                                                     \
      fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      exit(2);                                                                                   \
    }                                                                                            \
  } while (0)

__global__ void spin_kernel(float* out, long long cycles) {
  long long t0 = clock64();
  while (clock64() - t0 < cycles) {
  }
  if (threadIdx.x == 0) out[blockIdx.x] = 1.0f;
}

__global__ void empty_kernel() {}

__global__ void other_kernel(float* out, long long cycles) {
  long long t0 = clock64();
  while (clock64() - t0 < cycles) {
  }
  if (threadIdx.x == 0) out[blockIdx.x] = 2.0f;
}

static double HostUs() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

int main() {
  const char* out = getenv("KGYM_CUPTI_OUT");
  if (out == nullptr) {
    setenv("KGYM_CUPTI_OUT", "/tmp/kgym_cupti_selftest.kgym", 1);
    out = getenv("KGYM_CUPTI_OUT");
  }
  // KGYM_SELFTEST_OVERHEAD_ONLY=1: measure host launch cost without initialising the recorder (baseline).
  const bool overhead_only = getenv("KGYM_SELFTEST_OVERHEAD_ONLY") != nullptr;
  if (!overhead_only) {
    int rc = kgym_cupti_init();  // idempotent when already loaded through CUDA_INJECTION64_PATH
    if (rc != 0) {
      fprintf(stderr, "kgym_cupti_init failed: %d\n", rc);
      return 2;
    }
  }
  float* buf = nullptr;
  float* buf2 = nullptr;
  CK(cudaMalloc(&buf, 1 << 20));
  CK(cudaMalloc(&buf2, 1 << 20));
  cudaStream_t a, b;
  CK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
  cudaEvent_t start, stop;
  CK(cudaEventCreate(&start));
  CK(cudaEventCreate(&stop));

  const long long kShort = 100000;  // ~50 us at ~2 GHz
  const long long kLong = 600000;   // ~300 us

  // Warm up every kernel (lazy module loading serialises a kernel's first launch), untagged.
  spin_kernel<<<1, 32, 0, a>>>(buf, 1000);
  other_kernel<<<1, 32, 0, b>>>(buf, 1000);
  empty_kernel<<<1, 32, 0, a>>>();
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());

  // Host cost of a launch, with or without the recorder (compare two runs).
  const int kLaunches = 20000;
  double l0 = HostUs();
  for (int i = 0; i < kLaunches; ++i) empty_kernel<<<1, 32, 0, a>>>();
  double launch_us = (HostUs() - l0) / kLaunches;
  CK(cudaDeviceSynchronize());
  printf("host launch cost: %.3f us per empty kernel (%s)\n", launch_us,
         overhead_only ? "recorder not initialised" : "recorder active");
  if (overhead_only) return 0;

  const int kSideCalls = 5;
  double event_us[kSideCalls], host_us[kSideCalls];
  for (int i = 0; i < kSideCalls; ++i) {
    double h0 = HostUs();
    kgym_cupti_begin(kgym_make_tag(KGYM_PHASE_TIMING, i));
    CK(cudaEventRecord(start, a));
    spin_kernel<<<1, 32, 0, a>>>(buf, kShort);
    spin_kernel<<<1, 32, 0, b>>>(buf + 64, kLong);
    CK(cudaGetLastError());
    CK(cudaEventRecord(stop, a));
    kgym_cupti_end();
    CK(cudaDeviceSynchronize());
    host_us[i] = HostUs() - h0;
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, start, stop));
    event_us[i] = ms * 1e3;
  }

  // Call 5: empty.
  kgym_cupti_begin(kgym_make_tag(KGYM_PHASE_TIMING, 5));
  kgym_cupti_end();

  // Call 6: overlapping candidate and non-candidate kernels on two streams.
  kgym_cupti_begin(kgym_make_tag(KGYM_PHASE_TIMING, 6));
  spin_kernel<<<1, 32, 0, a>>>(buf, kLong);
  other_kernel<<<1, 32, 0, b>>>(buf + 64, kLong);
  CK(cudaGetLastError());
  kgym_cupti_end();
  CK(cudaDeviceSynchronize());

  // Correctness call 0: memory operations.
  kgym_cupti_begin(kgym_make_tag(KGYM_PHASE_CORRECTNESS, 0));
  CK(cudaMemsetAsync(buf2, 0, 1 << 20, a));
  CK(cudaMemcpyAsync(buf2, buf, 1 << 20, cudaMemcpyDeviceToDevice, a));
  kgym_cupti_end();
  CK(cudaDeviceSynchronize());

  // Another thread launches during a tagged call: its kernel is untagged.
  kgym_cupti_begin(kgym_make_tag(KGYM_PHASE_CORRECTNESS, 1));
  std::thread t([&] {
    other_kernel<<<1, 32, 0, b>>>(buf + 128, kShort);
    CK(cudaGetLastError());
  });
  t.join();
  kgym_cupti_end();
  CK(cudaDeviceSynchronize());

  int64_t seq = kgym_cupti_flush();
  if (seq < 1) {
    fprintf(stderr, "kgym_cupti_flush failed: %lld\n", (long long)seq);
    return 2;
  }
  int failures = kgym_selftest_check(out, event_us, host_us, kSideCalls);
  printf("%s: %d failed expectation(s)\n", failures == 0 ? "PASS" : "FAIL", failures);
  return failures == 0 ? 0 : 1;
}
