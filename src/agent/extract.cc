#include "agent/extract.h"

#include <cctype>
#include <vector>

namespace kgym::agent {

namespace {
bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

// Python `\s*\n` right after position `pos`: the greedy whitespace run must contain a newline; the match
// ends just after the last newline in that run. Returns npos when there is no newline in the run.
size_t AfterSpaceNewline(const std::string& s, size_t pos) {
  size_t end = pos;
  while (end < s.size() && IsSpace(s[end])) ++end;
  for (size_t i = end; i > pos; --i)
    if (s[i - 1] == '\n') return i;
  return std::string::npos;
}

// `MARKER\s*\n(.*?)(?=# End|$)`: first position where the marker is followed by whitespace with a newline.
bool MarkerUntilEnd(const std::string& s, const std::string& marker, std::string* out) {
  for (size_t at = s.find(marker); at != std::string::npos; at = s.find(marker, at + 1)) {
    size_t body = AfterSpaceNewline(s, at + marker.size());
    if (body == std::string::npos) continue;
    size_t stop = s.find("# End", body);
    *out = s.substr(body, stop == std::string::npos ? std::string::npos : stop - body);
    return true;
  }
  return false;
}

// ```python\s*# Kernel\s*\n(.*?)```
bool PythonKernelFence(const std::string& s, std::string* out) {
  const std::string open = "```python";
  for (size_t at = s.find(open); at != std::string::npos; at = s.find(open, at + 1)) {
    size_t p = at + open.size();
    while (p < s.size() && IsSpace(s[p])) ++p;
    // The greedy \s* may give back characters, but "# Kernel" starts with '#', never whitespace.
    if (s.compare(p, 8, "# Kernel") != 0) continue;
    size_t body = AfterSpaceNewline(s, p + 8);
    if (body == std::string::npos) continue;
    size_t close = s.find("```", body);
    if (close == std::string::npos) continue;
    *out = s.substr(body, close - body);
    return true;
  }
  return false;
}

// Last match of re.findall(r"```(?:\w+)?\s*\n?(.*?)```", s, DOTALL).
bool LastFencedBlock(const std::string& s, std::string* out) {
  bool found = false;
  size_t pos = 0;
  while (true) {
    size_t open = s.find("```", pos);
    if (open == std::string::npos) break;
    size_t p = open + 3;
    while (p < s.size() && (std::isalnum(static_cast<unsigned char>(s[p])) || s[p] == '_')) ++p;
    while (p < s.size() && IsSpace(s[p])) ++p;
    size_t close = s.find("```", p);
    if (close == std::string::npos) {
      // The greedy \s* may have eaten a candidate body; Python would backtrack but the body then is only
      // whitespace followed by no closing fence, so there is no match either way.
      break;
    }
    *out = s.substr(p, close - p);
    found = true;
    pos = close + 3;
  }
  return found;
}
}  // namespace

std::string StripWhitespace(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && IsSpace(s[b])) ++b;
  while (e > b && IsSpace(s[e - 1])) --e;
  return s.substr(b, e - b);
}

std::string StripThinking(const std::string& response) {
  std::string out;
  size_t pos = 0;
  while (true) {
    size_t open = response.find("<think>", pos);
    size_t close_only = response.find("</think>", pos);
    // A response that starts inside a thinking block (the chat template opened it) has a lone </think>.
    if (close_only != std::string::npos && (open == std::string::npos || close_only < open)) {
      pos = close_only + 8;
      continue;
    }
    if (open == std::string::npos) {
      out += response.substr(pos);
      break;
    }
    out += response.substr(pos, open - pos);
    size_t close = response.find("</think>", open + 7);
    if (close == std::string::npos) break;  // unterminated: the rest is thinking
    pos = close + 8;
  }
  return out;
}

ExtractedCode ExtractKernelCode(const std::string& response) {
  const std::string s = StripThinking(response);
  std::string body;
  ExtractedCode r;
  if (MarkerUntilEnd(s, "# Kernel Implementation", &body) || PythonKernelFence(s, &body) ||
      MarkerUntilEnd(s, "# Your implementation:", &body) || MarkerUntilEnd(s, "# Generated kernel:", &body)) {
    r.method = "marker";
  } else if (LastFencedBlock(s, &body)) {
    r.method = "fenced";
  } else {
    body = s;
    r.method = "whole";
  }
  r.code = StripWhitespace(body);
  if (r.code.empty()) r.method = "empty";
  return r;
}

}  // namespace kgym::agent
