#include "skills/tool_call.h"

#include <gtest/gtest.h>

namespace kgym::skills {
namespace {

TEST(ToolCall, QwenXmlFormWithJsonAndPythonValues) {
  const std::string text =
      "thinking...\n<tool_call>\n<function=select_skills>\n<parameter=think>\nmemory bound\n</parameter>\n"
      "<parameter=selected_skills>\n[{'name': 'a', 'reason': \"it's fast\"}, {\"name\": \"b\", \"reason\": "
      "\"x\"}]\n</parameter>\n<parameter=flag>\nTrue\n</parameter>\n</function>\n</tool_call>";
  auto call = FindToolCall(text, "select_skills");
  ASSERT_TRUE(call);
  EXPECT_EQ(call->arguments["think"], "memory bound");  // raw string (not JSON, not a literal)
  ASSERT_TRUE(call->arguments["selected_skills"].is_array());
  EXPECT_EQ(call->arguments["selected_skills"][0]["name"], "a");
  EXPECT_EQ(call->arguments["selected_skills"][0]["reason"], "it's fast");
  EXPECT_EQ(call->arguments["selected_skills"][1]["name"], "b");
  EXPECT_EQ(call->arguments["flag"], true);
}

TEST(ToolCall, JsonInsideToolCallTags) {
  auto call = FindToolCall(
      "<tool_call>{\"name\": \"select_skills\", \"arguments\": {\"selected_skills\": [{\"name\": \"a\"}]}}"
      "</tool_call>",
      "select_skills");
  ASSERT_TRUE(call);
  EXPECT_EQ(call->arguments["selected_skills"][0]["name"], "a");
  call = FindToolCall("<tool_call>{\"name\": \"t\", \"args\": \"{\\\"x\\\": 1}\"}</tool_call>", "t");
  ASSERT_TRUE(call);
  EXPECT_EQ(call->arguments["x"], 1);
}

TEST(ToolCall, FencedJsonBlock) {
  const std::string text =
      "Here:\n```json\n{\"not\": \"a call\"}\n```\nand\n```json\n{\"name\": \"update_skill_library\", "
      "\"arguments\": {\"new_skills\": []}}\n```";
  auto call = FindToolCall(text, "update_skill_library");
  ASSERT_TRUE(call);
  EXPECT_TRUE(call->arguments["new_skills"].is_array());
}

TEST(ToolCall, MalformedTextGivesNoCall) {
  for (const char* t : {"", "no call here", "<tool_call>{\"name\": broken</tool_call>", "```json\n{\"name\": 1}\n```",
                        "<tool_call><function=>\n</tool_call>", "```json\n{\"name\": \"x\", \n```"}) {
    EXPECT_FALSE(FindToolCall(t, "x")) << t;
    EXPECT_FALSE(FindToolCall(t, "select_skills")) << t;
  }
  EXPECT_FALSE(FindToolCall("<tool_call>{\"name\": \"other\", \"arguments\": {}}</tool_call>", "select_skills"));
}

TEST(ToolCall, TruncatedAndPartialCalls) {
  // A generation cut off after its arguments but before the closing tags still counts (the arguments are whole);
  // one cut off inside a parameter or inside the JSON loses that parameter or the call.
  auto cut =
      FindToolCall("<tool_call>\n<function=select_skills>\n<parameter=think>\nx\n</parameter>\n", "select_skills");
  ASSERT_TRUE(cut);
  EXPECT_EQ(cut->arguments["think"], "x");
  cut = FindToolCall(
      "<tool_call>\n<function=select_skills>\n<parameter=think>\nx\n</parameter>\n"
      "<parameter=selected_skills>\n[{\"name\": \"a\"}",
      "select_skills");
  ASSERT_TRUE(cut);
  EXPECT_FALSE(cut->arguments.contains("selected_skills"));
  EXPECT_TRUE(FindToolCall("<tool_call>{\"name\": \"select_skills\", \"arguments\": {}}", "select_skills"));
  EXPECT_FALSE(FindToolCall("<tool_call>{\"name\": \"select_skills\", \"arguments\": {\"th", "select_skills"));
  // A parameter whose value is neither JSON nor a Python literal is kept as the raw string.
  auto call = FindToolCall(
      "<tool_call><function=select_skills><parameter=selected_skills>[{'name': 'a',</parameter></function>"
      "</tool_call>",
      "select_skills");
  ASSERT_TRUE(call);
  EXPECT_EQ(call->arguments["selected_skills"], "[{'name': 'a',");
  // Several calls in one reply: the one asked for is found after another.
  call = FindToolCall(
      "<tool_call>{\"name\": \"other\", \"arguments\": {}}</tool_call>\n<tool_call>{\"name\": \"select_skills\", "
      "\"arguments\": {\"think\": \"t\"}}</tool_call>",
      "select_skills");
  ASSERT_TRUE(call);
  EXPECT_EQ(call->arguments["think"], "t");
}

TEST(ToolCall, PythonLiterals) {
  auto v = ParsePythonLiteral("{'a': (1, 2.5, -3e2), 'b': None, 'c': 'x' 'y', \"d\": '''multi\nline'''}");
  ASSERT_TRUE(v);
  EXPECT_EQ((*v)["a"], nlohmann::json::array({1, 2.5, -300.0}));
  EXPECT_TRUE((*v)["b"].is_null());
  EXPECT_EQ((*v)["c"], "xy");
  EXPECT_EQ((*v)["d"], "multi\nline");
  EXPECT_FALSE(ParsePythonLiteral("[1, 2"));
  EXPECT_FALSE(ParsePythonLiteral("foo(1)"));
}

}  // namespace
}  // namespace kgym::skills
