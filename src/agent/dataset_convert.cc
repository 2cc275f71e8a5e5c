#include "agent/dataset_convert.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "agent/task.h"
#include "core/runtime_files.h"

namespace kgym::agent {

namespace fs = std::filesystem;

namespace {
// Dumps every parquet row as one JSON object per line: argv = input, output, extra package folder ("" = none).
// Exit 3: pyarrow cannot be imported; 4: the file cannot be read as parquet. Either way one line on stderr.
constexpr const char* kParquetToJsonl = R"PY(
import json, sys
if sys.argv[3]:
    sys.path.append(sys.argv[3])
try:
    import pyarrow.parquet as pq
except Exception as e:
    sys.stderr.write("%s: %s" % (type(e).__name__, e))
    sys.exit(3)
def plain(v):
    if isinstance(v, dict):
        return {k: plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [plain(x) for x in v]
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    return v
try:
    rows = pq.read_table(sys.argv[1]).to_pylist()
except Exception as e:
    sys.stderr.write("%s: %s" % (type(e).__name__, e))
    sys.exit(4)
with open(sys.argv[2], "w", encoding="utf-8") as out:
    for row in rows:
        out.write(json.dumps(plain(row), ensure_ascii=False, default=str) + "\n")
)PY";

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Runs the script; its one-line complaint (stderr) comes back in the error.
Status ParquetRows(const std::string& python_in, const std::string& in, const std::string& out) {
  const std::string python = PythonInterpreter(python_in), pkgs = LearnerPackagesDir(), err_path = out + ".err";
  pid_t pid = fork();
  if (pid < 0) return Status::Internal("fork failed");
  if (pid == 0) {
    int fd = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd >= 0) dup2(fd, STDERR_FILENO);
    execlp(python.c_str(), python.c_str(), "-c", kParquetToJsonl, in.c_str(), out.c_str(), pkgs.c_str(),
           static_cast<char*>(nullptr));
    _exit(127);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  const std::string why = ReadAll(err_path);
  std::error_code ec;
  fs::remove(err_path, ec);
  const int code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  if (code == 0) return Status::Ok();
  if (code == 3)
    return Status::Unavailable(
        "reading parquet needs pyarrow, which neither " + python + " nor setup.sh's packages (" +
        (pkgs.empty() ? std::string("none found beside kgym") : pkgs) + ") provide (" + why +
        "); run ./setup.sh, which installs it into build/train-pkgs, or pass --python with an interpreter that has it");
  if (code == 127) return Status::NotFound("cannot run " + python + " (set KGYM_PYTHON or pass --python)");
  if (code == 4) return Status::InvalidArgument(in + ": not a parquet file pyarrow can read (" + why + ")");
  return Status::Internal(python + " failed reading " + in + " (exit " + std::to_string(code) + "): " + why);
}

struct Seen {
  std::string where, reference_code, prompt;
};

// Task records, one JSON object per line of `rows`, read from `origin` (a table's rows when `table`, else the lines
// of the file itself): messages name record N as "<origin> row N" or "<origin>:N".
Status ReadRecords(const std::string& rows, const std::string& origin, bool table, std::vector<Task>* out,
                   ConvertReport* report) {
  const auto where = [&](int n) { return origin + (table ? " row " : ":") + std::to_string(n); };
  std::ifstream in(rows);
  if (!in) return Status::IOError("cannot read " + rows);
  std::map<std::string, Seen> seen;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded()) return Status::InvalidArgument(where(n) + ": not JSON");
    Task t;
    if (Status s = Task::FromJson(j, &t); !s.ok()) return Status::InvalidArgument(where(n) + ": " + s.message());
    const std::string prompt = t.prompt.dump();
    auto it = seen.find(t.id);
    if (it != seen.end()) {
      if (it->second.reference_code == t.reference_code && it->second.prompt == prompt) {
        report->notes.push_back(where(n) + ": a copy of task " + t.id + " (" + it->second.where + "): dropped");
        continue;
      }
      const std::string renamed = t.id + "#row" + std::to_string(n);
      report->notes.push_back(where(n) + ": task id " + t.id + " is already " + it->second.where +
                              "'s, for a different task: kept as " + renamed);
      t.id = renamed;
    }
    seen[t.id] = {where(n), t.reference_code, prompt};
    out->push_back(std::move(t));
  }
  if (out->empty()) return Status::NotFound("no tasks in " + origin);
  return Status::Ok();
}
}  // namespace

Status ConvertDataset(const std::string& input, const std::string& output, const ConvertOptions& opt,
                      ConvertReport* report) {
  const std::string ext = fs::path(input).extension().string();
  std::vector<Task> tasks;
  Status s;
  if (ext == ".parquet") {
    const std::string rows = output + ".rows.tmp.jsonl";
    s = ParquetRows(opt.python, input, rows);
    if (s.ok()) s = ReadRecords(rows, input, true, &tasks, report);
    std::error_code ec;
    fs::remove(rows, ec);
  } else if (ext == ".jsonl" || ext == ".json") {
    s = ReadRecords(input, input, false, &tasks, report);
  } else {
    s = LoadTasks(input, &tasks);
  }
  if (!s.ok()) return s;
  std::ofstream out(output, std::ios::binary);
  if (!out) return Status::IOError("cannot write " + output);
  for (auto& t : tasks) {
    if (!opt.level.empty()) t.level = opt.level;
    if (t.source.empty()) t.source = input;
    out << t.ToJson().dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  }
  if (!out) return Status::IOError("write to " + output + " failed");
  report->written = static_cast<int>(tasks.size());
  return Status::Ok();
}

}  // namespace kgym::agent
