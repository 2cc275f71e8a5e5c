#include "skills/tokenizer.h"

namespace kgym::skills {
namespace {

bool AsciiSpace(unsigned char c) { return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f); }

bool AsciiPunct(unsigned char c) {
  return (c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) || (c >= 123 && c <= 126);
}

// Length of a UTF-8 encoded Unicode whitespace character Python's str.split() splits on, or 0.
size_t UnicodeSpaceLen(std::string_view s, size_t i) {
  auto at = [&](size_t k) -> unsigned char { return i + k < s.size() ? static_cast<unsigned char>(s[i + k]) : 0; };
  unsigned char c0 = at(0), c1 = at(1), c2 = at(2);
  if (c0 == 0xC2 && (c1 == 0x85 || c1 == 0xA0)) return 2;  // U+0085, U+00A0
  if (c0 == 0xE1 && c1 == 0x9A && c2 == 0x80) return 3;    // U+1680
  if (c0 == 0xE2 && c1 == 0x80 && ((c2 >= 0x80 && c2 <= 0x8A) || c2 == 0xA8 || c2 == 0xA9 || c2 == 0xAF))
    return 3;                                            // U+2000-200A, U+2028, U+2029, U+202F
  if (c0 == 0xE2 && c1 == 0x81 && c2 == 0x9F) return 3;  // U+205F
  if (c0 == 0xE3 && c1 == 0x80 && c2 == 0x80) return 3;  // U+3000
  return 0;
}

}  // namespace

std::string NormalizeForTokens(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  bool pending_space = false;
  for (size_t i = 0; i < text.size();) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    size_t ulen = c >= 0x80 ? UnicodeSpaceLen(text, i) : 0;
    if (ulen || AsciiSpace(c) || c == '_' || c == '-' || c == '/') {
      pending_space = true;
      i += ulen ? ulen : 1;
      continue;
    }
    ++i;
    if (AsciiPunct(c)) continue;  // deleted: joins its neighbours ("torch.nn" -> "torchnn")
    if (pending_space && !out.empty()) out.push_back(' ');
    pending_space = false;
    out.push_back(c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : static_cast<char>(c));
  }
  return out;
}

std::vector<std::string> Tokenize(std::string_view text) {
  std::vector<std::string> tokens;
  std::string norm = NormalizeForTokens(text);
  ForEachToken(norm, [&](std::string_view t) { tokens.emplace_back(t); });
  return tokens;
}

}  // namespace kgym::skills
