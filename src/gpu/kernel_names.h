// Kernel names as CUPTI reports them, and the exact rule that decides whether a kernel is the candidate's.
//
// CUPTI gives the raw entry name: C++ kernels (CUDA extensions, PyTorch, cuBLAS, cuDNN) are Itanium-mangled
// ("_Z10add_kernelPfS_i"); Triton kernels carry the PTX entry name Triton chose, which in triton 3.x is the
// @triton.jit function's __name__ (3.0 uses fn.__name__; 3.2+ takes the text after the last '.' of the
// "module.qualname" repr, which is again __name__; a custom `repr=` callable can change it), while triton 2.x
// appended a signature suffix ("add_kernel_0d1d2d3de"). The Python launch hook should report the compiled
// kernel's own name (CompiledKernel.name / metadata.name) when it can; the function name also works.
//
// Matching is exact after normalisation, never by substring: a candidate kernel named "add" does not claim
// "at::native::add_kernel" or "cutlass::Kernel<...add...>".
#pragma once

#include <set>
#include <string>
#include <string_view>

namespace kgym::gpu {

// The demangled form of `raw` ("void add_kernel<float>(float*, int)"), or `raw` itself when it is not an
// Itanium-mangled name or demangling fails.
std::string Demangle(std::string_view raw);

// The qualified function name of a demangled signature: leading return type and trailing parameter list
// removed, template arguments kept ("void ns::k<float>(float*, int) const" -> "ns::k<float>").
std::string QualifiedKernelName(std::string_view demangled);

// QualifiedKernelName with every template argument list removed ("ns::k<float>" -> "ns::k").
std::string UntemplatedKernelName(std::string_view qualified);

// If `raw` looks like a triton 2.x specialised name "<fn>_<digits and d/c/e>", returns "<fn>"; else "".
std::string StripLegacyTritonSuffix(std::string_view raw);

// The set of kernels that were compiled from the candidate. Copyable value; not thread-safe to mutate.
class CandidateKernelNames {
 public:
  // A Triton kernel as the launch hook saw it (function name or compiled kernel name).
  void AddTritonKernel(std::string_view name);
  // A kernel symbol of the candidate's CUDA extension, mangled ("_Z3fooPf") or demangled ("foo(float*)",
  // "void ns::foo<float>(float*)"), or a plain source-level name ("foo").
  void AddCudaSymbol(std::string_view symbol);

  // True iff the kernel with raw CUPTI name `raw` is one of the candidate's:
  //   Triton name T:  raw == T, or raw == T + "_" + legacy suffix;
  //   CUDA symbol S:  raw == S, or Demangle(raw) == Demangle(S), or their qualified names are equal, or
  //                   their untemplated qualified names are equal.
  bool Matches(std::string_view raw) const;

  bool empty() const { return triton_.empty() && cuda_exact_.empty(); }
  size_t size() const { return triton_.size() + cuda_exact_.size(); }

 private:
  std::set<std::string, std::less<>> triton_;
  std::set<std::string, std::less<>> cuda_exact_;        // raw and demangled forms
  std::set<std::string, std::less<>> cuda_qualified_;    // QualifiedKernelName forms
  std::set<std::string, std::less<>> cuda_untemplated_;  // UntemplatedKernelName forms
};

}  // namespace kgym::gpu
