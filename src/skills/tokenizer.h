// The tokenizer daVinci uses for both skill documents and queries (research/davinci.md §2): lowercase; '_', '-'
// and '/' become spaces; every other ASCII punctuation character is deleted; split on whitespace.
// So "torch.nn" -> "torchnn" and "__syncthreads()" -> "syncthreads".
//
// Differences from Python's str.lower()/str.split(): only ASCII letters are lowercased (non-ASCII bytes pass
// through unchanged); whitespace is ASCII whitespace (including \x1c-\x1f) plus the Unicode spaces Python splits on,
// recognised in their UTF-8 encodings.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kgym::skills {

// Normalised text: the tokens of `text` separated by single spaces (no leading/trailing space).
std::string NormalizeForTokens(std::string_view text);

// The tokens, in order, with repetition.
std::vector<std::string> Tokenize(std::string_view text);

// Calls fn(std::string_view token) for each token of the normalised text `normalized` (from NormalizeForTokens).
template <class Fn>
void ForEachToken(std::string_view normalized, Fn&& fn) {
  size_t i = 0;
  while (i < normalized.size()) {
    size_t j = normalized.find(' ', i);
    if (j == std::string_view::npos) j = normalized.size();
    if (j > i) fn(normalized.substr(i, j - i));
    i = j + 1;
  }
}

}  // namespace kgym::skills
