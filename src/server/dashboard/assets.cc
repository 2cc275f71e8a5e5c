#include "server/dashboard/assets.h"

namespace kgym::dashboard {

const Asset* FindAsset(std::string_view name) {
  for (const auto& a : Assets())
    if (a.name == name) return &a;
  return nullptr;
}

}  // namespace kgym::dashboard
