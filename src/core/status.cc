#include "core/status.h"

namespace kgym {

std::string Status::ToString() const {
  const char* name = "OK";
  switch (code_) {
    case Code::kOk:
      return "OK";
    case Code::kInvalidArgument:
      name = "invalid argument";
      break;
    case Code::kNotFound:
      name = "not found";
      break;
    case Code::kIOError:
      name = "I/O error";
      break;
    case Code::kInternal:
      name = "internal error";
      break;
    case Code::kUnavailable:
      name = "unavailable";
      break;
    case Code::kTimeout:
      name = "timeout";
      break;
  }
  return std::string(name) + ": " + msg_;
}

}  // namespace kgym
