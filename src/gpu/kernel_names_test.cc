#include "gpu/kernel_names.h"

#include <gtest/gtest.h>

namespace kgym::gpu {
namespace {

TEST(KernelNamesTest, DemanglesItaniumNamesAndLeavesOthersAlone) {
  EXPECT_EQ(Demangle("_Z10add_kernelPfS_i"), "add_kernel(float*, float*, int)");
  EXPECT_EQ(Demangle("add_kernel"), "add_kernel");
  EXPECT_EQ(Demangle("_Znot_really_mangled!"), "_Znot_really_mangled!");
  EXPECT_EQ(Demangle(""), "");
}

TEST(KernelNamesTest, QualifiedNameDropsReturnTypeAndParameters) {
  EXPECT_EQ(QualifiedKernelName("add_kernel(float*, float*, int)"), "add_kernel");
  EXPECT_EQ(QualifiedKernelName("void ns::k<float, 4>(float*, int)"), "ns::k<float, 4>");
  EXPECT_EQ(QualifiedKernelName("void (anonymous namespace)::k(int)"), "(anonymous namespace)::k");
  EXPECT_EQ(QualifiedKernelName("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
                                "std::array<char*, 1ul> >(int, at::native::FillFunctor<float>, "
                                "std::array<char*, 1ul>)"),
            "at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, std::array<char*, 1ul> >");
  EXPECT_EQ(QualifiedKernelName("triton_poi_fused_add_0"), "triton_poi_fused_add_0");
  EXPECT_EQ(QualifiedKernelName("void S::m(int) const"), "S::m");
  EXPECT_EQ(UntemplatedKernelName("ns::k<float, std::array<int, 2> >"), "ns::k");
}

TEST(KernelNamesTest, LegacyTritonSuffix) {
  EXPECT_EQ(StripLegacyTritonSuffix("add_kernel_0d1d2d3de"), "add_kernel");
  EXPECT_EQ(StripLegacyTritonSuffix("_fwd_kernel_0d1d2d3c4d5c"), "_fwd_kernel");
  EXPECT_EQ(StripLegacyTritonSuffix("add_kernel"), "");        // the suffix is not "kernel"
  EXPECT_EQ(StripLegacyTritonSuffix("matmul_kernel_v2"), "");  // "v2" is not a signature suffix
  EXPECT_EQ(StripLegacyTritonSuffix("fused_0"), "fused");
}

TEST(KernelNamesTest, TritonNamesMatchExactlyNotBySubstring) {
  CandidateKernelNames names;
  names.AddTritonKernel("add grid=(1024,) module=m file=/tmp/x.py");  // launch-hook string: first token
  names.AddTritonKernel("fused_softmax_kernel");
  EXPECT_TRUE(names.Matches("add"));
  EXPECT_TRUE(names.Matches("add_0d1d2de"));  // triton 2.x specialisation of the same function
  EXPECT_TRUE(names.Matches("fused_softmax_kernel"));
  // KernelGYM's substring rule would count all of these as custom.
  EXPECT_FALSE(
      names.Matches("_ZN2at6native18elementwise_kernelILi128ELi2EZNS0_15gpu_kernel_implINS0_13BinaryFunctorIfffNS0_"
                    "15binary_internal10MulFunctorIfEEEEEEvRNS_18TensorIteratorBaseERKT_EUliE_EEviT1_"));
  EXPECT_FALSE(names.Matches("void at::native::add_kernel(float*)"));
  EXPECT_FALSE(names.Matches("addmm"));
  EXPECT_FALSE(names.Matches("fused_softmax_kernel_v2"));
  EXPECT_FALSE(names.Matches("ad"));
}

TEST(KernelNamesTest, CudaSymbolsMatchMangledDemangledQualifiedOrPlain) {
  CandidateKernelNames mangled;
  mangled.AddCudaSymbol("_Z10add_kernelPfS_i");
  EXPECT_TRUE(mangled.Matches("_Z10add_kernelPfS_i"));
  EXPECT_FALSE(mangled.Matches("_ZN2at6native10add_kernelEPf"));  // at::native::add_kernel(float*)

  CandidateKernelNames plain;
  plain.AddCudaSymbol("add_kernel");
  EXPECT_TRUE(plain.Matches("_Z10add_kernelPfS_i"));     // add_kernel(float*, float*, int)
  EXPECT_TRUE(plain.Matches("_Z10add_kernelIfEvPT_i"));  // void add_kernel<float>(float*, int)
  EXPECT_FALSE(plain.Matches("_ZN2at6native10add_kernelEPf"));
  EXPECT_FALSE(plain.Matches("_Z14add_kernel_oldPf"));

  CandidateKernelNames demangled;
  demangled.AddCudaSymbol("void my_ns::fused<float>(float*, int)");
  EXPECT_TRUE(demangled.Matches("_ZN5my_ns5fusedIfEEvPT_i"));
  EXPECT_TRUE(demangled.Matches("_ZN5my_ns5fusedIdEEvPT_i"));  // another instantiation of the same kernel
  EXPECT_FALSE(demangled.Matches("_ZN6two_ns5fusedIfEEvPT_i"));
  EXPECT_TRUE(CandidateKernelNames().empty());
  EXPECT_FALSE(CandidateKernelNames().Matches("anything"));
}

}  // namespace
}  // namespace kgym::gpu
