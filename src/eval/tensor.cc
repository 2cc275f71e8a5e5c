#include "eval/tensor.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>

#include "core/parallel_for.h"

namespace kgym {

namespace {
struct DTypeInfo {
  DType d;
  const char* name;
  size_t size;
};
constexpr DTypeInfo kDTypes[] = {
    {DType::kFloat32, "float32", 4},   {DType::kFloat64, "float64", 8}, {DType::kFloat16, "float16", 2},
    {DType::kBFloat16, "bfloat16", 2}, {DType::kInt64, "int64", 8},     {DType::kInt32, "int32", 4},
    {DType::kInt16, "int16", 2},       {DType::kInt8, "int8", 1},       {DType::kUInt8, "uint8", 1},
    {DType::kBool, "bool", 1},
};

double HalfToDouble(uint16_t h) {
  uint32_t sign = (h >> 15) & 1, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  double v;
  if (exp == 0)
    v = std::ldexp(static_cast<double>(man), -24);
  else if (exp == 31)
    v = man ? NAN : INFINITY;
  else
    v = std::ldexp(static_cast<double>(man | 0x400), static_cast<int>(exp) - 25);
  return sign ? -v : v;
}

double BFloatToDouble(uint16_t b) {
  uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

template <typename T>
T Load(const char* s, int64_t i) {
  T v;
  std::memcpy(&v, s + i * sizeof(T), sizeof(T));
  return v;
}

std::string ShapeOf(const std::vector<int64_t>& shape) {
  std::ostringstream o;
  o << "[";
  for (size_t i = 0; i < shape.size(); ++i) o << (i ? ", " : "") << shape[i];
  o << "]";
  return o.str();
}
}  // namespace

bool ParseDType(const std::string& name, DType* out) {
  for (const auto& e : kDTypes)
    if (name == e.name) {
      *out = e.d;
      return true;
    }
  return false;
}

const char* DTypeName(DType d) {
  for (const auto& e : kDTypes)
    if (e.d == d) return e.name;
  return "?";
}

size_t DTypeSize(DType d) {
  for (const auto& e : kDTypes)
    if (e.d == d) return e.size;
  return 1;
}

bool IsFloating(DType d) {
  return d == DType::kFloat32 || d == DType::kFloat64 || d == DType::kFloat16 || d == DType::kBFloat16;
}

int64_t Tensor::numel() const {
  int64_t n = 1;
  for (auto s : shape) n *= s;
  return n;
}

std::string Tensor::ShapeString() const { return ShapeOf(shape); }

void Tensor::SetBytes(std::string b) {
  nbytes = b.size();
  offset = 0;
  region = Region::FromBytes(std::move(b));
}

namespace {

double LoadAs(DType dtype, const char* bytes, int64_t i) {
  switch (dtype) {
    case DType::kFloat32:
      return Load<float>(bytes, i);
    case DType::kFloat64:
      return Load<double>(bytes, i);
    case DType::kFloat16:
      return HalfToDouble(Load<uint16_t>(bytes, i));
    case DType::kBFloat16:
      return BFloatToDouble(Load<uint16_t>(bytes, i));
    case DType::kInt64:
      return static_cast<double>(Load<int64_t>(bytes, i));
    case DType::kInt32:
      return Load<int32_t>(bytes, i);
    case DType::kInt16:
      return Load<int16_t>(bytes, i);
    case DType::kInt8:
      return Load<int8_t>(bytes, i);
    case DType::kUInt8:
      return Load<uint8_t>(bytes, i);
    case DType::kBool:
      return Load<uint8_t>(bytes, i) ? 1.0 : 0.0;
  }
  return 0;
}

}  // namespace

double Tensor::At(int64_t i) const { return LoadAs(dtype, data(), i); }

Status DecodeValues(const nlohmann::json& header, const std::string& key, const std::string& payload,
                    const std::vector<std::shared_ptr<const Region>>& regions, Values* out) {
  out->clear();
  if (!header.contains(key) || !header[key].is_array()) return Status::InvalidArgument("missing '" + key + "'");
  const auto& descs = header.contains("tensors") ? header["tensors"] : nlohmann::json::array();
  std::shared_ptr<const Region> inline_region;  // the payload bytes, copied once, shared by the inline tensors
  for (const auto& it : header[key]) {
    Value v;
    if (!it.is_object()) return Status::InvalidArgument("bad item in '" + key + "'");
    if (it.value("kind", "") == "json") {
      v.json = it.contains("value") ? it["value"] : nlohmann::json();
      out->push_back(std::move(v));
      continue;
    }
    size_t idx = it.value("index", static_cast<size_t>(-1));
    if (!descs.is_array() || idx >= descs.size() || !descs[idx].is_object())
      return Status::InvalidArgument("bad tensor index");
    const auto& d = descs[idx];
    v.is_tensor = true;
    if (!ParseDType(d.value("dtype", ""), &v.tensor.dtype))
      return Status::InvalidArgument("unsupported dtype " + d.value("dtype", std::string("?")));
    for (const auto& s : d.value("shape", nlohmann::json::array())) {
      if (!s.is_number_integer() || s.get<int64_t>() < 0) return Status::InvalidArgument("bad shape");
      v.tensor.shape.push_back(s.get<int64_t>());
    }
    uint64_t off = d.value("offset", 0ull), n = d.value("nbytes", 0ull);
    int64_t numel = v.tensor.numel();
    if (numel < 0 || static_cast<uint64_t>(numel) > (1ull << 40) ||
        n != static_cast<uint64_t>(numel) * DTypeSize(v.tensor.dtype))
      return Status::InvalidArgument("tensor byte count does not match its shape");
    std::shared_ptr<const Region> src;
    if (d.contains("region")) {
      int64_t k = d.value("region", static_cast<int64_t>(-1));
      if (k < 0 || static_cast<size_t>(k) >= regions.size())
        return Status::InvalidArgument("tensor names a shared-memory region that did not come with the message");
      src = regions[static_cast<size_t>(k)];
    } else {
      if (!inline_region) inline_region = Region::FromBytes(payload);
      src = inline_region;
    }
    if (off > src->size() || n > src->size() - off) return Status::InvalidArgument("tensor outside payload");
    v.tensor.region = src;
    v.tensor.offset = off;
    v.tensor.nbytes = n;
    out->push_back(std::move(v));
  }
  return Status::Ok();
}

void EncodeValues(const Values& values, const std::string& key, nlohmann::json* header, std::string* payload,
                  std::vector<std::shared_ptr<const Region>>* fds) {
  auto& h = *header;
  if (!h.contains("tensors")) h["tensors"] = nlohmann::json::array();
  nlohmann::json items = nlohmann::json::array();
  for (const auto& v : values) {
    if (!v.is_tensor) {
      items.push_back({{"kind", "json"}, {"value", v.json}});
      continue;
    }
    nlohmann::json d = {{"dtype", DTypeName(v.tensor.dtype)}, {"shape", v.tensor.shape}, {"nbytes", v.tensor.nbytes}};
    if (fds && v.tensor.region && v.tensor.region->fd() >= 0) {
      size_t k = 0;
      while (k < fds->size() && (*fds)[k] != v.tensor.region) ++k;
      if (k == fds->size()) fds->push_back(v.tensor.region);
      d["region"] = k;
      d["offset"] = v.tensor.offset;
    } else {
      d["offset"] = payload->size();
      payload->append(v.tensor.bytes());
    }
    h["tensors"].push_back(std::move(d));
    items.push_back({{"kind", "tensor"}, {"index", h["tensors"].size() - 1}});
  }
  h[key] = items;
}

namespace {

// Partial sums of one slice of the comparison; merged in slice order so results do not depend on the split.
struct Partial {
  double sum_abs = 0, sum_sq_diff = 0, sum_sq_ref = 0, max_abs = 0, max_ref = 0;
  int64_t mismatched = 0, nonfinite = 0;
  int64_t first_nonfinite = -1, worst_mismatch = -1, argmax = -1;
  double worst_mismatch_d = -1;
};

// Element i's difference d: the largest difference and the worst mismatch so far, the first occurrence winning.
void NoteIndices(int64_t i, double d, bool mismatch, Partial* p) {
  if (d > p->max_abs) {
    p->max_abs = d;
    p->argmax = i;
  }
  if (mismatch && d > p->worst_mismatch_d) {
    p->worst_mismatch_d = d;
    p->worst_mismatch = i;
  }
}

template <typename Fn>
void CompareSlice(Fn load, int64_t begin, int64_t end, const Tolerance& tol, Partial* p) {
  for (int64_t i = begin; i < end; ++i) {
    double r, x;
    load(i, &r, &x);
    bool rf = std::isfinite(r), xf = std::isfinite(x);
    if (!xf) {
      // Non-finite where the reference is finite (or a different non-finite value) is wrong.
      bool same = !rf && ((std::isnan(r) && std::isnan(x)) || r == x);
      if (!same) {
        ++p->nonfinite;
        ++p->mismatched;
        if (p->first_nonfinite < 0) p->first_nonfinite = i;
      }
      continue;
    }
    if (!rf) {
      ++p->mismatched;
      continue;
    }
    double d = std::fabs(x - r);
    p->sum_abs += d;
    p->sum_sq_diff += d * d;
    p->sum_sq_ref += r * r;
    p->max_ref = std::max(p->max_ref, std::fabs(r));
    const bool mismatch = d > tol.atol + tol.rtol * std::fabs(r);
    p->mismatched += mismatch;
    NoteIndices(i, d, mismatch, p);
  }
}

// float32, one block: the statistics without a branch per element (four independent sums, so the loop is not one
// long chain of dependent additions: 1.8x the element loop's speed, bench/compare_cost), merged into *p where every
// value of the block is finite on both sides. A block holding a non-finite value goes through CompareSlice, whose
// rules say what such a value means. The indices shown (largest difference, worst mismatch) are found by a second
// look at the blocks that hold them, with the element loop's rule: the first occurrence wins.
void CompareFloatBlock(const char* rb, const char* cb, int64_t begin, int64_t end, const Tolerance& tol, Partial* p) {
  double sum_abs[4] = {}, sum_sq[4] = {}, sum_ref[4] = {}, max_abs[4] = {}, max_ref[4] = {}, spread[4] = {};
  int64_t mism[4] = {};
  int64_t i = begin;
  auto one = [&](int k, int64_t j) {
    const double r = Load<float>(rb, j), x = Load<float>(cb, j);
    const double d = std::fabs(x - r), ar = std::fabs(r);
    spread[k] += d - d;  // 0 for finite values; NaN where either side is not finite
    sum_abs[k] += d;
    sum_sq[k] += d * d;
    sum_ref[k] += r * r;
    max_abs[k] = d > max_abs[k] ? d : max_abs[k];
    max_ref[k] = ar > max_ref[k] ? ar : max_ref[k];
    mism[k] += d > tol.atol + tol.rtol * ar;
  };
  for (; i + 4 <= end; i += 4) {
    one(0, i);
    one(1, i + 1);
    one(2, i + 2);
    one(3, i + 3);
  }
  for (; i < end; ++i) one(0, i);
  if (!((spread[0] + spread[1]) + (spread[2] + spread[3]) == 0)) {
    CompareSlice([rb, cb](int64_t j, double* r, double* x) { *r = Load<float>(rb, j), *x = Load<float>(cb, j); }, begin,
                 end, tol, p);
    return;
  }
  p->sum_abs += (sum_abs[0] + sum_abs[1]) + (sum_abs[2] + sum_abs[3]);
  p->sum_sq_diff += (sum_sq[0] + sum_sq[1]) + (sum_sq[2] + sum_sq[3]);
  p->sum_sq_ref += (sum_ref[0] + sum_ref[1]) + (sum_ref[2] + sum_ref[3]);
  p->max_ref = std::max({p->max_ref, max_ref[0], max_ref[1], max_ref[2], max_ref[3]});
  const double block_max = std::max({max_abs[0], max_abs[1], max_abs[2], max_abs[3]});
  const int64_t block_mism = mism[0] + mism[1] + mism[2] + mism[3];
  p->mismatched += block_mism;
  if (block_max <= p->max_abs && block_mism == 0) return;
  for (int64_t j = begin; j < end; ++j) {
    const double r = Load<float>(rb, j), d = std::fabs(Load<float>(cb, j) - r);
    NoteIndices(j, d, d > tol.atol + tol.rtol * std::fabs(r), p);
  }
}

template <typename Fn>
void CompareAll(Fn load, int64_t n, const Tolerance& tol, std::vector<Partial>* parts) {
  // Large outputs are compared on several threads (memory-bound: a few threads saturate the bandwidth).
  const std::vector<size_t> cut = EvenCuts(static_cast<size_t>(n), size_t{1} << 22);
  parts->assign(cut.size() - 1, Partial{});
  ParallelForRanges(cut, [&](size_t p, size_t b, size_t e) {
    CompareSlice(load, static_cast<int64_t>(b), static_cast<int64_t>(e), tol, &(*parts)[p]);
  });
}

}  // namespace

constexpr double kScaleRelL2Floor = 0.05, kScaleRelL2PerRtol = 5.0;

Comparison CompareTensors(const Tensor& ref, const Tensor& cand, const Tolerance& tol) {
  Comparison c;
  c.numel = ref.numel();
  if (ref.shape != cand.shape) {
    c.problem = "shape mismatch: expected " + ref.ShapeString() + ", got " + cand.ShapeString();
    return c;
  }
  if (ref.dtype != cand.dtype) {
    c.problem = std::string("dtype mismatch: expected ") + DTypeName(ref.dtype) + ", got " + DTypeName(cand.dtype);
    return c;
  }
  std::vector<Partial> parts;
  const char* rb = ref.data();
  const char* cb = cand.data();
  if (ref.dtype == DType::kFloat32) {
    const std::vector<size_t> cut = EvenCuts(static_cast<size_t>(c.numel), size_t{1} << 22);
    parts.assign(cut.size() - 1, Partial{});
    constexpr size_t kBlock = 4096;
    ParallelForRanges(cut, [&](size_t p, size_t b, size_t e) {
      for (size_t at = b; at < e; at += kBlock)
        CompareFloatBlock(rb, cb, static_cast<int64_t>(at), static_cast<int64_t>(std::min(e, at + kBlock)), tol,
                          &parts[p]);
    });
  } else {
    DType dt = ref.dtype;
    CompareAll(
        [rb, cb, dt](int64_t i, double* r, double* x) {
          *r = LoadAs(dt, rb, i);
          *x = LoadAs(dt, cb, i);
        },
        c.numel, tol, &parts);
  }
  double sum_abs = 0, sum_sq_diff = 0, sum_sq_ref = 0, worst_d = -1, max_ref = 0;
  int64_t nonfinite = 0, first_nonfinite = -1, worst = -1, argmax = -1;
  for (const auto& p : parts) {
    max_ref = std::max(max_ref, p.max_ref);
    sum_abs += p.sum_abs;
    sum_sq_diff += p.sum_sq_diff;
    sum_sq_ref += p.sum_sq_ref;
    c.mismatched += p.mismatched;
    nonfinite += p.nonfinite;
    if (first_nonfinite < 0) first_nonfinite = p.first_nonfinite;
    if (p.max_abs > c.max_abs_diff) {
      c.max_abs_diff = p.max_abs;
      argmax = p.argmax;
    }
    if (p.worst_mismatch >= 0 && p.worst_mismatch_d > worst_d) {
      worst_d = p.worst_mismatch_d;
      worst = p.worst_mismatch;
    }
  }
  // The element to show: the first non-finite one, else the worst mismatch, else the largest difference.
  c.worst_index = first_nonfinite >= 0 ? first_nonfinite : worst >= 0 ? worst : argmax;
  c.mean_abs_diff = c.numel ? sum_abs / static_cast<double>(c.numel) : 0;
  c.rel_l2 = sum_sq_ref > 0 ? std::sqrt(sum_sq_diff / sum_sq_ref) : std::sqrt(sum_sq_diff);
  c.ok = c.mismatched == 0;
  // Where every reference value is below atol, the elementwise test accepts any output of the same tiny scale
  // (a softmax over 10^4 columns is ~1e-4 everywhere): there the error is judged relative to the outputs' own size.
  const double scale_bound = std::max(kScaleRelL2Floor, kScaleRelL2PerRtol * tol.rtol);
  const bool below_atol = c.numel > 0 && sum_sq_ref > 0 && max_ref < tol.atol;
  if (c.ok && below_atol && c.rel_l2 > scale_bound) {
    c.ok = false;
    std::ostringstream o;
    o.precision(6);
    o << "values mismatch at the outputs' scale: every reference value is below atol=" << tol.atol << " (largest "
      << max_ref << "), so the error is judged relative to the outputs: relative L2 error " << c.rel_l2 << " exceeds "
      << scale_bound << "; max abs diff " << c.max_abs_diff;
    c.problem = o.str();
    return c;
  }
  if (nonfinite) {
    std::ostringstream o;
    o << "output contains " << nonfinite << " NaN/Inf value(s) where the reference is finite";
    c.problem = o.str();
  } else if (!c.ok) {
    std::ostringstream o;
    o.precision(6);
    o << "values mismatch: " << c.mismatched << " of " << c.numel << " elements outside atol=" << tol.atol
      << " rtol=" << tol.rtol << "; max abs diff " << c.max_abs_diff << ", mean abs diff " << c.mean_abs_diff
      << ", relative L2 error " << c.rel_l2;
    c.problem = o.str();
  }
  return c;
}

Comparison CompareValues(const Values& ref, const Values& cand, const Tolerance& tol_fp32, const Tolerance& tol_half) {
  Comparison total;
  if (ref.size() != cand.size()) {
    total.problem = "expected " + std::to_string(ref.size()) + " output(s), got " + std::to_string(cand.size());
    return total;
  }
  total.ok = true;
  for (size_t i = 0; i < ref.size(); ++i) {
    const auto& r = ref[i];
    const auto& c = cand[i];
    std::string which = ref.size() > 1 ? "output " + std::to_string(i) + ": " : "";
    if (r.is_tensor != c.is_tensor) {
      total.ok = false;
      total.problem = which + (r.is_tensor ? "expected a tensor, got a plain value" : "expected a plain value");
      return total;
    }
    if (!r.is_tensor) {
      if (r.json != c.json) {
        total.ok = false;
        total.problem = which + "value mismatch: expected " + r.json.dump() + ", got " + c.json.dump();
        return total;
      }
      continue;
    }
    bool half = r.tensor.dtype == DType::kFloat16 || r.tensor.dtype == DType::kBFloat16;
    Comparison one = CompareTensors(r.tensor, c.tensor, half ? tol_half : tol_fp32);
    total.max_abs_diff = std::max(total.max_abs_diff, one.max_abs_diff);
    total.mean_abs_diff = std::max(total.mean_abs_diff, one.mean_abs_diff);
    total.rel_l2 = std::max(total.rel_l2, one.rel_l2);
    total.mismatched += one.mismatched;
    total.numel += one.numel;
    if (!one.ok) {
      total.ok = false;
      if (total.problem.empty()) total.problem = which + one.problem;
    }
  }
  return total;
}

bool BytesEqual(const Values& a, const Values& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].is_tensor != b[i].is_tensor) return false;
    if (a[i].is_tensor ? a[i].tensor.bytes() != b[i].tensor.bytes() : a[i].json != b[i].json) return false;
  }
  return true;
}

}  // namespace kgym
