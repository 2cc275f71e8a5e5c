#include "skills/tool_call.h"

#include <cctype>

namespace kgym::skills {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// Recursive-descent reader for Python literals.
class PyLiteral {
 public:
  explicit PyLiteral(std::string_view s) : s_(s) {}
  std::optional<nlohmann::json> Parse() {
    auto v = Value(0);
    Skip();
    if (!v || i_ != s_.size()) return std::nullopt;
    return v;
  }

 private:
  void Skip() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  bool Eat(char c) {
    Skip();
    if (i_ < s_.size() && s_[i_] == c) return ++i_, true;
    return false;
  }
  bool Word(std::string_view w) {
    if (s_.substr(i_, w.size()) != w) return false;
    size_t e = i_ + w.size();
    if (e < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[e])) || s_[e] == '_')) return false;
    i_ = e;
    return true;
  }
  std::optional<nlohmann::json> Value(int depth) {
    if (depth > 64) return std::nullopt;
    Skip();
    if (i_ >= s_.size()) return std::nullopt;
    char c = s_[i_];
    if (c == '[' || c == '(') return Sequence(c == '[' ? ']' : ')', depth);
    if (c == '{') return Dict(depth);
    if (c == '\'' || c == '"') {
      std::string out;
      while (i_ < s_.size() && (s_[i_] == '\'' || s_[i_] == '"')) {  // adjacent literals concatenate
        auto part = String();
        if (!part) return std::nullopt;
        out += *part;
        Skip();
      }
      return nlohmann::json(out);
    }
    if (Word("True")) return nlohmann::json(true);
    if (Word("False")) return nlohmann::json(false);
    if (Word("None")) return nlohmann::json(nullptr);
    return Number();
  }
  std::optional<nlohmann::json> Sequence(char close, int depth) {
    ++i_;
    nlohmann::json arr = nlohmann::json::array();
    while (true) {
      if (Eat(close)) return arr;
      auto v = Value(depth + 1);
      if (!v) return std::nullopt;
      arr.push_back(*v);
      if (Eat(',')) continue;
      if (Eat(close)) return arr;
      return std::nullopt;
    }
  }
  std::optional<nlohmann::json> Dict(int depth) {
    ++i_;
    nlohmann::json obj = nlohmann::json::object();
    while (true) {
      if (Eat('}')) return obj;
      auto k = Value(depth + 1);
      if (!k || !Eat(':')) return std::nullopt;
      auto v = Value(depth + 1);
      if (!v) return std::nullopt;
      obj[k->is_string() ? k->get<std::string>() : k->dump()] = *v;
      if (Eat(',')) continue;
      if (Eat('}')) return obj;
      return std::nullopt;
    }
  }
  std::optional<std::string> String() {
    const char q = s_[i_];
    const bool triple = s_.substr(i_, 3) == std::string(3, q);
    i_ += triple ? 3 : 1;
    std::string out;
    while (i_ < s_.size()) {
      char c = s_[i_];
      if (triple ? s_.substr(i_, 3) == std::string(3, q) : c == q) {
        i_ += triple ? 3 : 1;
        return out;
      }
      if (!triple && c == '\n') return std::nullopt;
      if (c == '\\' && i_ + 1 < s_.size()) {
        char e = s_[i_ + 1];
        i_ += 2;
        switch (e) {
          case 'n':
            out += '\n';
            break;
          case 't':
            out += '\t';
            break;
          case 'r':
            out += '\r';
            break;
          case '0':
            out += '\0';
            break;
          case '\n':
            break;
          default:
            out += e;  // \\, \', \" and unknown escapes keep the character
        }
        continue;
      }
      out += c;
      ++i_;
    }
    return std::nullopt;
  }
  std::optional<nlohmann::json> Number() {
    size_t b = i_;
    if (i_ < s_.size() && (s_[i_] == '-' || s_[i_] == '+')) ++i_;
    while (i_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[i_])) || s_[i_] == '.' ||
                              ((s_[i_] == '-' || s_[i_] == '+') && (s_[i_ - 1] == 'e' || s_[i_ - 1] == 'E'))))
      ++i_;
    std::string tok(s_.substr(b, i_ - b));
    if (tok.empty()) return std::nullopt;
    auto j = nlohmann::json::parse(tok[0] == '+' ? tok.substr(1) : tok, nullptr, false);
    if (j.is_discarded() || !j.is_number()) return std::nullopt;
    return j;
  }
  std::string_view s_;
  size_t i_ = 0;
};

nlohmann::json ParameterValue(std::string_view raw) {
  std::string_view v = Trim(raw);
  auto j = nlohmann::json::parse(v.begin(), v.end(), nullptr, false);
  if (!j.is_discarded()) return j;
  if (auto py = ParsePythonLiteral(v)) return *py;
  return nlohmann::json(std::string(v));
}

// Bodies between <tool_call> and </tool_call> (an unterminated last call runs to the end of the text).
std::vector<std::string_view> ToolCallBodies(std::string_view text) {
  std::vector<std::string_view> bodies;
  const std::string_view open = "<tool_call>", close = "</tool_call>";
  size_t pos = 0;
  while ((pos = text.find(open, pos)) != std::string_view::npos) {
    size_t b = pos + open.size();
    size_t e = text.find(close, b);
    bodies.push_back(text.substr(b, (e == std::string_view::npos ? text.size() : e) - b));
    pos = e == std::string_view::npos ? text.size() : e + close.size();
  }
  return bodies;
}

// Text between `open` ... `close` tags is found with plain searches: std::regex backtracks recursively and
// overflows the stack on bodies of a few thousand characters.
std::vector<ToolCall> XmlCalls(std::string_view text) {
  std::vector<ToolCall> calls;
  for (std::string_view body : ToolCallBodies(text)) {
    size_t f = body.find("<function=");
    if (f == std::string_view::npos) continue;
    size_t gt = body.find('>', f);
    if (gt == std::string_view::npos) continue;
    ToolCall call;
    call.name = std::string(Trim(body.substr(f + 10, gt - f - 10)));
    size_t fend = body.find("</function>", gt);
    std::string_view inner = body.substr(gt + 1, (fend == std::string_view::npos ? body.size() : fend) - gt - 1);
    size_t pos = 0;
    while ((pos = inner.find("<parameter=", pos)) != std::string_view::npos) {
      size_t pgt = inner.find('>', pos);
      if (pgt == std::string_view::npos) break;
      size_t pend = inner.find("</parameter>", pgt);
      if (pend == std::string_view::npos) break;
      std::string key(Trim(inner.substr(pos + 11, pgt - pos - 11)));
      call.arguments[key] = ParameterValue(inner.substr(pgt + 1, pend - pgt - 1));
      pos = pend + 12;
    }
    if (!call.name.empty()) calls.push_back(std::move(call));
  }
  return calls;
}

std::optional<ToolCall> CallFromObject(const nlohmann::json& j) {
  if (!j.is_object() || !j.contains("name") || !j["name"].is_string()) return std::nullopt;
  ToolCall call;
  call.name = j["name"].get<std::string>();
  for (const char* key : {"arguments", "args", "parameters"}) {
    auto it = j.find(key);
    if (it == j.end()) continue;
    nlohmann::json args = *it;
    if (args.is_string()) args = nlohmann::json::parse(args.get<std::string>(), nullptr, false);
    if (args.is_object()) call.arguments = args;
    break;
  }
  return call;
}

nlohmann::json ParseObject(std::string_view s) {
  s = Trim(s);
  auto j = nlohmann::json::parse(s.begin(), s.end(), nullptr, false);
  if (j.is_discarded()) {
    if (auto py = ParsePythonLiteral(s)) return *py;
  }
  return j;
}

std::vector<ToolCall> JsonCalls(std::string_view text) {
  std::vector<ToolCall> calls;
  for (std::string_view body : ToolCallBodies(text))
    if (auto c = CallFromObject(ParseObject(body))) calls.push_back(std::move(*c));
  return calls;
}

std::vector<ToolCall> FencedCalls(std::string_view text) {
  size_t pos = 0;
  while ((pos = text.find("```json", pos)) != std::string_view::npos) {
    size_t b = pos + 7;
    size_t e = text.find("```", b);
    if (e == std::string_view::npos) e = text.size();
    std::string_view body = text.substr(b, e - b);
    pos = e + 3;
    if (body.find("\"name\"") == std::string_view::npos) continue;
    if (auto c = CallFromObject(ParseObject(body))) return {std::move(*c)};
  }
  return {};
}

}  // namespace

std::optional<nlohmann::json> ParsePythonLiteral(std::string_view text) { return PyLiteral(text).Parse(); }

std::vector<ToolCall> ParseToolCalls(std::string_view text) {
  if (auto calls = XmlCalls(text); !calls.empty()) return calls;
  if (auto calls = JsonCalls(text); !calls.empty()) return calls;
  return FencedCalls(text);
}

std::optional<ToolCall> FindToolCall(std::string_view text, std::string_view name) {
  for (auto& c : ParseToolCalls(text))
    if (c.name == name) return c;
  return std::nullopt;
}

}  // namespace kgym::skills
