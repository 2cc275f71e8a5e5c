#include "skills/tokenizer.h"

#include <gtest/gtest.h>

namespace kgym::skills {
namespace {

using V = std::vector<std::string>;

TEST(Tokenizer, FollowsDavinciRules) {
  EXPECT_EQ(Tokenize("torch.nn"), V{"torchnn"});
  EXPECT_EQ(Tokenize("__syncthreads()"), V{"syncthreads"});
  EXPECT_EQ(Tokenize("Warp-Level/Reduce_SUM"), (V{"warp", "level", "reduce", "sum"}));
  EXPECT_EQ(Tokenize("  a\tb\n\nc\x1f"
                     "d  "),
            (V{"a", "b", "c", "d"}));
  EXPECT_EQ(Tokenize("x = tl.load(ptr + offs, mask=m)"), (V{"x", "tlloadptr", "offs", "maskm"}));
  EXPECT_EQ(Tokenize("!!! ... ,,,"), V{});
  EXPECT_EQ(Tokenize(""), V{});
}

TEST(Tokenizer, UnicodeSpacesSplitAndOtherBytesPassThrough) {
  EXPECT_EQ(Tokenize("a\xC2\xA0"
                     "b\xE2\x80\x83"
                     "c"),
            (V{"a", "b", "c"}));
  EXPECT_EQ(Tokenize("caf\xC3\xA9 X"), (V{"caf\xC3\xA9", "x"}));
}

}  // namespace
}  // namespace kgym::skills
