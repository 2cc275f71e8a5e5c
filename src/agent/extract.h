// Extraction of the candidate kernel from a model response (research/drkernel.md §1.4, §4.3).
//
// `<think>...</think>` blocks are removed first (an unterminated `<think>` hides the rest of the response).
// Then, in order: the text after one of the markers "# Kernel Implementation", "```python # Kernel",
// "# Your implementation:", "# Generated kernel:" (up to "# End" or the end), else the body of the last
// complete fenced block (```lang ... ```), else the whole remaining response. The result is stripped.
#pragma once

#include <string>

namespace kgym::agent {

struct ExtractedCode {
  std::string code;
  std::string method;  // "marker" | "fenced" | "whole" | "empty"
};

std::string StripThinking(const std::string& response);
ExtractedCode ExtractKernelCode(const std::string& response);

// Python's str.strip() for ASCII whitespace.
std::string StripWhitespace(const std::string& s);

}  // namespace kgym::agent
