// Tensors as the supervisor sees them: dtype, shape and raw bytes handed over by a worker. The supervisor never
// trusts a worker's opinion about its tensors; it reads the bytes itself.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "sandbox/shm.h"

namespace kgym {

enum class DType { kFloat32, kFloat64, kFloat16, kBFloat16, kInt64, kInt32, kInt16, kInt8, kUInt8, kBool };

bool ParseDType(const std::string& name, DType* out);
const char* DTypeName(DType d);
size_t DTypeSize(DType d);
bool IsFloating(DType d);

struct Tensor {
  DType dtype = DType::kFloat32;
  std::vector<int64_t> shape;
  // The bytes live in a shared immutable region (a sealed memfd for large tensors, heap bytes otherwise).
  std::shared_ptr<const Region> region;
  size_t offset = 0, nbytes = 0;
  const char* data() const { return region ? region->data() + offset : nullptr; }
  std::string_view bytes() const { return {data(), nbytes}; }
  void SetBytes(std::string b);  // copies into a private heap region
  int64_t numel() const;
  double At(int64_t i) const;  // element i as double (fp16/bf16 decoded)
  std::string ShapeString() const;
};

// One call's argument or result list: each item is a tensor or a plain JSON value.
struct Value {
  bool is_tensor = false;
  Tensor tensor;
  nlohmann::json json;
};
using Values = std::vector<Value>;

// Decodes header[key] (items) + header["tensors"] + payload. A tensor description with "region": k points into
// regions[k] (a sealed memfd that came with the frame) instead of the payload. Validates sizes against shapes.
Status DecodeValues(const nlohmann::json& header, const std::string& key, const std::string& payload,
                    const std::vector<std::shared_ptr<const Region>>& regions, Values* out);
inline Status DecodeValues(const nlohmann::json& header, const std::string& key, const std::string& payload,
                           Values* out) {
  return DecodeValues(header, key, payload, {}, out);
}
// Encodes values into (items, tensors, payload) under header[key], appending to header["tensors"]/payload.
// Tensors held in a memfd region are not copied: the region is appended to *fds (once) and referenced by index,
// when `fds` is non-null.
void EncodeValues(const Values& values, const std::string& key, nlohmann::json* header, std::string* payload,
                  std::vector<std::shared_ptr<const Region>>* fds = nullptr);

struct Tolerance {
  double atol = 1e-2, rtol = 1e-2;
};

// Comparison of one output against the reference, allclose semantics: |c - r| <= atol + rtol * |r|.
struct Comparison {
  bool ok = false;
  std::string problem;  // "", or a sentence: shape/dtype mismatch, non-finite values, value mismatch
  double max_abs_diff = 0, mean_abs_diff = 0, rel_l2 = 0;
  int64_t mismatched = 0, numel = 0;
  int64_t worst_index = -1;
};

Comparison CompareTensors(const Tensor& ref, const Tensor& cand, const Tolerance& tol);
// Compares result lists (same arity, same kinds); `index` names which output failed in the problem text.
Comparison CompareValues(const Values& ref, const Values& cand, const Tolerance& tol_fp32, const Tolerance& tol_half);

bool BytesEqual(const Values& a, const Values& b);

}  // namespace kgym
