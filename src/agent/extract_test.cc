#include "agent/extract.h"

#include <gtest/gtest.h>

namespace kgym::agent {
namespace {

TEST(ExtractTest, LastFencedBlockWins) {
  std::string r = "plan\n```python\nfirst()\n```\ntext\n```python\nclass ModelNew: pass\n```\nbye";
  ExtractedCode e = ExtractKernelCode(r);
  EXPECT_EQ(e.method, "fenced");
  EXPECT_EQ(e.code, "class ModelNew: pass");
}

TEST(ExtractTest, FenceWithoutLanguageAndUnclosedTail) {
  // The unclosed third fence does not pair up; the last complete block is used.
  std::string r = "```\nA\n```\n```py\nB\n```\n```python\nC truncated";
  EXPECT_EQ(ExtractKernelCode(r).code, "B");
}

TEST(ExtractTest, ThinkBlocksIgnored) {
  std::string r = "<think>```python\nwrong\n```</think>Answer:\n```python\nright\n```";
  EXPECT_EQ(ExtractKernelCode(r).code, "right");
  // A lone closing tag (the chat template opened the block) hides what precedes it.
  EXPECT_EQ(ExtractKernelCode("```python\nwrong\n```\n</think>\n```python\nok\n```").code, "ok");
  // Unterminated thinking: nothing left.
  ExtractedCode e = ExtractKernelCode("<think>```python\nx\n```");
  EXPECT_EQ(e.method, "empty");
  EXPECT_EQ(e.code, "");
}

TEST(ExtractTest, MarkersBeforeFences) {
  std::string r = "```python\nignored\n```\n# Kernel Implementation\n  \nimport torch\nx = 1\n# End\ntrailer";
  ExtractedCode e = ExtractKernelCode(r);
  EXPECT_EQ(e.method, "marker");
  EXPECT_EQ(e.code, "import torch\nx = 1");
  // Without "# End" the marker runs to the end of the response.
  EXPECT_EQ(ExtractKernelCode("# Generated kernel:\ncode here\nmore").code, "code here\nmore");
  // A marker not followed by a newline does not count.
  EXPECT_EQ(ExtractKernelCode("# Your implementation: inline\n```\nfenced\n```").code, "fenced");
  EXPECT_EQ(ExtractKernelCode("```python\n# Kernel\nbody\n```").code, "body");
}

TEST(ExtractTest, NoBlockGivesWholeResponseStripped) {
  ExtractedCode e = ExtractKernelCode("  just prose, no code \n");
  EXPECT_EQ(e.method, "whole");
  EXPECT_EQ(e.code, "just prose, no code");
  EXPECT_EQ(ExtractKernelCode("").method, "empty");
}

}  // namespace
}  // namespace kgym::agent
