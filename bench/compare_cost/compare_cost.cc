// bench/compare_cost: what comparing one large output with the reference's costs the supervisor (CompareValues,
// eval/tensor.h), as in a correctness trial or a kept timed output: the reference's output in a sealed memfd, the
// candidate's in a lent buffer (both mapped, their pages present), float32 values within tolerance but not equal.
// Best of --repeat, and the first run (pages of the reference's mapping touched for the first time). Prints one JSON
// object.
//
//   build/bench/compare_cost/compare_cost --mb 2048 --repeat 5
#include <sys/mman.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstring>
#include <iostream>
#include <random>
#include <string>
#include <thread>

#include "core/parallel_for.h"
#include "eval/tensor.h"
#include "nlohmann/json.hpp"
#include "sandbox/shm.h"

namespace {

double Seconds(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

kgym::Values OneTensor(std::shared_ptr<const kgym::Region> region, int64_t n) {
  kgym::Value v;
  v.is_tensor = true;
  v.tensor.shape = {n};
  v.tensor.region = std::move(region);
  v.tensor.nbytes = static_cast<size_t>(n) * 4;
  return {v};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"compare_cost"};
  double mb = 2048;
  int repeat = 5;
  app.add_option("--mb", mb, "output size (MiB)");
  app.add_option("--repeat", repeat, "timed comparisons");
  CLI11_PARSE(app, argc, argv);
  const int64_t n = static_cast<int64_t>(mb * (1 << 20) / 4);
  std::string ref(static_cast<size_t>(n) * 4, '\0');
  std::mt19937 rng(7);
  std::normal_distribution<float> dist;
  for (int64_t i = 0; i < n; i += 4096) {
    const float x = dist(rng);
    for (int64_t j = i; j < std::min(n, i + 4096); ++j) std::memcpy(&ref[static_cast<size_t>(j) * 4], &x, 4);
  }
  std::shared_ptr<const kgym::Region> sealed, lent;
  if (!kgym::Region::SealedCopy(ref, &sealed).ok() || !kgym::Region::Lent(ref.size(), &lent).ok()) {
    std::cerr << "compare_cost: could not make the regions\n";
    return 1;
  }
  // The candidate's values: the reference's plus 1e-4 (within atol 1e-2), written through a mapping of its own.
  {
    float* w = static_cast<float*>(mmap(nullptr, ref.size(), PROT_READ | PROT_WRITE, MAP_SHARED, lent->fd(), 0));
    const float* r = reinterpret_cast<const float*>(ref.data());
    for (int64_t i = 0; i < n; ++i) w[i] = r[i] + 1e-4f;
    munmap(w, ref.size());
  }
  ref.clear();
  ref.shrink_to_fit();
  const kgym::Values rv = OneTensor(sealed, n), cv = OneTensor(lent, n);
  const kgym::Tolerance tol{1e-2, 1e-2};
  nlohmann::json out = {{"mb", mb}, {"elements", n}, {"hardware_threads", std::thread::hardware_concurrency()}};
  double best = 1e30;
  kgym::Comparison c;
  for (int i = 0; i <= repeat; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    c = kgym::CompareValues(rv, cv, tol, tol);
    const double s = Seconds(t0);
    if (i == 0)
      out["first_s"] = s;
    else
      best = std::min(best, s);
  }
  out["best_s"] = best;
  // The floor: both arrays read once on as many threads as the comparison uses (a plain sum each).
  double floor_s = 1e30;
  for (int i = 0; i < repeat; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    const std::vector<size_t> cut = kgym::EvenCuts(static_cast<size_t>(n), size_t{1} << 22);
    std::vector<float> sums(cut.size(), 0);
    const float* r = reinterpret_cast<const float*>(sealed->data());
    const float* x = reinterpret_cast<const float*>(lent->data());
    kgym::ParallelForRanges(cut, [&](size_t p, size_t b, size_t e) {
      float a[8] = {};
      for (size_t j = b; j + 8 <= e; j += 8)
        for (int k = 0; k < 8; ++k) a[k] += r[j + k] + x[j + k];
      for (float v : a) sums[p] += v;
    });
    floor_s = std::min(floor_s, Seconds(t0));
    out["floor_checksum"] = sums[0];
  }
  out["read_floor_s"] = floor_s;
  out["gb_per_s_read"] = 2.0 * static_cast<double>(n) * 4 / best / 1e9;
  out["ok"] = c.ok;
  out["max_abs_diff"] = c.max_abs_diff;
  std::cout << out.dump() << "\n";
  return c.ok ? 0 : 1;
}
