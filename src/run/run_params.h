// Every parameter of a RunSpec, defined once: its group, its flag name, the YAML keys of `kgym sft` / `kgym train`
// that set it, its help text and the field it sets. The two readers below walk this one table, so a flag and its
// YAML key cannot mean different things, and a command shows the groups it needs and nothing else (llama.cpp's
// common/arg.h is the model).
//
// Names: one per concept across all of kgym's commands (tests/py/test_flag_names.py walks `kgym flags --json`).
// Old names stay accepted where a command had them (AddOldRunFlag): each sets its new flag's parameter and says its
// new name on stderr.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>
#include <variant>
#include <vector>

#include "core/status.h"
#include "request/request_fields.h"
#include "run/run_spec.h"

namespace kgym::run {

enum class RunGroup { kLlm, kSampling, kGym, kReward, kSkills, kLoop };

using RunField = std::variant<int*, int64_t*, size_t*, double*, bool*, std::string*, std::vector<std::string>*>;

struct RunParam {
  RunGroup group;
  const char* flag;             // "--num-perf-trials"; a bool is a flag that sets it to true
  const char* keys;             // the YAML keys that set it, comma-separated, later ones winning ("" = flag only)
  const char* help;             // what it means, the same in every command
  const char* choices;          // "a|b|c" when only those values are valid, else ""
  RunField (*field)(RunSpec*);  // nullptr for a field of the request
  // A field of the gym's request template (spec.gym.request): its flag, keys, help, choices and limits are the
  // request table's (request/request_fields.h), so they are the same as over HTTP and in `kgym eval`.
  const request::RequestField* request = nullptr;

  RunField Field(RunSpec* spec) const;
};

// The table, in the order help shows it.
const std::vector<RunParam>& RunParams();

// The parameter whose flag is `flag`, or nullptr.
const RunParam* FindRunParam(const std::string& flag);

// Adds the flags of `groups` to `app`, bound to `spec` (whose current values are shown as the defaults).
void AddRunFlags(CLI::App* app, RunSpec* spec, std::initializer_list<RunGroup> groups);
// Adds the named flags alone (a command that needs a few parameters of a group).
void AddRunFlags(CLI::App* app, RunSpec* spec, std::initializer_list<const char*> flags);

// `old_name` (a name `app` used to have) as a hidden flag that sets `new_flag`'s parameter in `spec` and says
// "kgym CMD: OLD is now NEW" on stderr when given. `note`, when given, is added to that line.
void AddOldRunFlag(CLI::App* app, const std::string& old_name, const std::string& new_flag, RunSpec* spec,
                   const std::string& note = "");

// The same for a field of an evaluation request (`kgym eval`, `kgym suite`): `old_name` sets `new_flag`'s field of
// `req`, checked against the request table as the new name is.
void AddOldRequestFlag(CLI::App* app, const std::string& old_name, const std::string& new_flag, EvalRequest* req);

// The same for a flag that is not a run parameter: `old_name` binds `var` like `new_name` does.
template <class T>
void AddOldFlag(CLI::App* app, const std::string& old_name, const std::string& new_name, T* var);

// Reads every parameter whose key is set (not null) in `config` (a resolved `kgym sft` / `kgym train`
// configuration) into `spec`; a value of the wrong type is an error naming its key.
Status ReadRunConfig(const nlohmann::json& config, RunSpec* spec);

// --- details ---

// Prints "kgym CMD: OLD is now NEW[; NOTE]" on stderr (once per use).
void SayNewName(const CLI::App* app, const std::string& old_name, const std::string& new_name, const std::string& note);

template <class T>
void AddOldFlag(CLI::App* app, const std::string& old_name, const std::string& new_name, T* var) {
  CLI::Option* o;
  if constexpr (std::is_same_v<T, bool>)
    o = app->add_flag(old_name, *var);
  else
    o = app->add_option(old_name, *var);
  o->description("old name of " + new_name)->group("");
  o->each([app, old_name, new_name](const std::string&) { SayNewName(app, old_name, new_name, ""); });
}

}  // namespace kgym::run
