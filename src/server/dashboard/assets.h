// The dashboard's files, compiled into the binary (embed_assets.cmake generates their definitions at build
// time from web/ and Debian's Chart.js), so `kgym serve` and `kgym view` serve the page with no file at run time
// and no network. Names are file names ("index.html", "chart.min.js"); the page loads them from /assets/<name>.
#pragma once

#include <string_view>
#include <vector>

namespace kgym::dashboard {

struct Asset {
  std::string_view name;
  std::string_view content_type;
  std::string_view data;
};

const std::vector<Asset>& Assets();
// nullptr when there is no asset of that name.
const Asset* FindAsset(std::string_view name);

}  // namespace kgym::dashboard
