#include "agent/dataset_convert.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "agent/task.h"

namespace kgym::agent {

namespace fs = std::filesystem;

namespace {
// Dumps every parquet row as one JSON object per line.
constexpr const char* kParquetToJsonl = R"PY(
import json, sys
try:
    import pyarrow.parquet as pq
except Exception as e:
    sys.stderr.write("pyarrow is not importable by %s: %s\n" % (sys.executable, e))
    sys.exit(3)
def plain(v):
    if isinstance(v, dict):
        return {k: plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [plain(x) for x in v]
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    return v
table = pq.read_table(sys.argv[1])
with open(sys.argv[2], "w", encoding="utf-8") as out:
    for row in table.to_pylist():
        out.write(json.dumps(plain(row), ensure_ascii=False, default=str) + "\n")
)PY";

Status RunPython(const std::string& python, const std::string& in, const std::string& out) {
  pid_t pid = fork();
  if (pid < 0) return Status::Internal("fork failed");
  if (pid == 0) {
    execl(python.c_str(), python.c_str(), "-c", kParquetToJsonl, in.c_str(), out.c_str(), static_cast<char*>(nullptr));
    std::fprintf(stderr, "cannot run %s\n", python.c_str());
    _exit(127);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  if (WIFEXITED(st) && WEXITSTATUS(st) == 0) return Status::Ok();
  if (WIFEXITED(st) && WEXITSTATUS(st) == 3)
    return Status::Unavailable("reading parquet needs pyarrow, which " + python + " cannot import; install it (e.g. `" +
                               python + " -m pip install pyarrow`) or pass --python with an interpreter that has it");
  if (WIFEXITED(st) && WEXITSTATUS(st) == 127) return Status::NotFound("cannot run " + python);
  return Status::InvalidArgument("could not read " + in + " as parquet (see the Python error above)");
}
}  // namespace

Status ConvertDataset(const std::string& input, const std::string& output, const ConvertOptions& opt, int* count) {
  std::string source = input;
  std::string tmp;
  if (fs::path(input).extension() == ".parquet") {
    tmp = output + ".rows.tmp.jsonl";
    Status s = RunPython(opt.python, input, tmp);
    if (!s.ok()) {
      fs::remove(tmp);
      return s;
    }
    source = tmp;
  }
  std::vector<Task> tasks;
  Status s = LoadTasks(source, &tasks);
  if (!tmp.empty()) fs::remove(tmp);
  if (!s.ok()) return s;
  std::ofstream out(output, std::ios::binary);
  if (!out) return Status::IOError("cannot write " + output);
  for (auto& t : tasks) {
    if (!opt.level.empty()) t.level = opt.level;
    if (t.source.empty() || t.source == tmp) t.source = input;
    out << t.ToJson().dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  }
  if (!out) return Status::IOError("write to " + output + " failed");
  *count = static_cast<int>(tasks.size());
  return Status::Ok();
}

}  // namespace kgym::agent
