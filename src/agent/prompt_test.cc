#include "agent/prompt.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

namespace kgym::agent {
namespace {

std::string Read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(PromptTest, ModelCardExampleIsByteIdentical) {
  // testdata/model_card_prompt.txt is what the model card's own Python (prompt_template.format(...)) yields
  // for its example task; our template files must reproduce it byte for byte.
  PromptTemplates t;
  ASSERT_TRUE(PromptTemplates::Load("", &t).ok());
  std::string ref = Read(std::string(KGYM_AGENT_TESTDATA) + "/model_card_ref_code.py");
  std::string expected = Read(std::string(KGYM_AGENT_TESTDATA) + "/model_card_prompt.txt");
  ASSERT_FALSE(expected.empty());
  std::string got = RenderFirstTurn(t, ref);
  EXPECT_EQ(got.size(), expected.size());
  EXPECT_TRUE(got == expected);
}

TEST(PromptTest, SubstitutionIsSinglePass) {
  EXPECT_EQ(RenderTemplate("a {x} b {y} {z}", {{"x", "{y}"}, {"y", "Y"}}), "a {y} b Y {z}");
  EXPECT_EQ(RenderTemplate("{x", {{"x", "1"}}), "{x");
  EXPECT_EQ(RenderTemplate("d = {'k': 1}", {}), "d = {'k': 1}");
}

TEST(PromptTest, RefinementWrapsFeedback) {
  PromptTemplates t;
  ASSERT_TRUE(PromptTemplates::Load("", &t).ok());
  std::string m = RenderRefinement(t, "{\n  \"speedup\": 1.5\n}");
  EXPECT_EQ(m.rfind("Now you have received the server feedback for your last implementation.", 0), 0u);
  EXPECT_NE(m.find("Server feedback (status/metrics/errors):\n{\n  \"speedup\": 1.5\n}\n\nReturn an improved"),
            std::string::npos);
}

TEST(PromptTest, MissingDirectoryIsAClearError) {
  PromptTemplates t;
  Status s = PromptTemplates::Load("/nonexistent-dir", &t);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("first_turn.txt"), std::string::npos);
}

}  // namespace
}  // namespace kgym::agent
