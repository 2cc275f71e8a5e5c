// What an evaluation request asks, field by field, defined once: each field of EvalRequest that a caller sets has its
// HTTP name, its flag, its YAML keys, its type, its limits and its meaning here, and every reader walks this table:
//   - HTTP (server/request_parse.cc, server/kernel_simple.cc): CheckJson, with pydantic-style errors;
//   - `kgym eval` / `kgym suite` and the run commands' gym flags (run/run_params.h): AddRequestFlag;
//   - the YAML of `kgym sft` / `kgym train` (run/run_params.h ReadRunConfig): CheckJson on each key's value;
//   - the agent's gym client (agent/eval_backend_http.cc): the fields marked `agent_sends`, by their HTTP names.
// So a field has one limit everywhere (tests/py/test_request_fields.py checks HTTP against `kgym eval` over the whole
// table; `kgym flags --request-fields` prints it). The default of a field is its value in a default EvalRequest
// (core/evaluation.h); a command may start from another (`kgym agent`'s 10 timed calls), never past the limits.
//
// Not here: the workflow and routing fields of a KernelGYM request (task_id's caching, priority, device_preference,
// workflow, toolkit, uuid, ...), which are the server's; KernelGYM's tri-state flags (run_correctness, ...), which
// the server resolves as KernelGYM does; and the code itself.
#pragma once

#include <CLI/CLI.hpp>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "core/evaluation.h"

namespace kgym::request {

enum class FieldType { kInt, kNumber, kBool, kString };

using FieldSlot = std::variant<int*, double*, bool*, std::string*>;

inline constexpr double kNoLimit = std::numeric_limits<double>::infinity();

struct RequestField {
  const char* name;     // the HTTP key (KernelGYM's where it has one); "" = not a field of the HTTP request
  const char* flag;     // the flag of `kgym eval` and the run commands; "" = none
  const char* keys;     // YAML keys of `kgym sft` / `kgym train`, comma-separated, later ones winning; "" = none
  FieldType type;       // kInt: a whole number, even where the struct holds a double (timeout)
  double lo, hi;        // inclusive limits: of the value (numbers) or of the length (strings); none for booleans
  const char* choices;  // "a|b": only these values (a string); "" = any
  bool kernelgym;       // KernelGYM's schema has it (else a kgym extension, ignored by KernelGYM)
  bool agent_sends;     // the agent's gym client sends it (the Dr.Kernel reward client's payload, plus `size`)
  const char* help;     // what it means, the same in every command
  FieldSlot (*slot)(EvalRequest*);
};

// The table, in the order help shows it.
const std::vector<RequestField>& RequestFields();

// The field named `name` over HTTP, or whose flag is `flag`; nullptr when none.
const RequestField* FindRequestField(const std::string& name);
const RequestField* FindRequestFlag(const std::string& flag);

// A problem with a value, worded and typed as pydantic words it (KernelGYM's 400 bodies): msg "Input should be less
// than or equal to 1000", type "less_than_equal".
struct Problem {
  std::string msg, type;
};

// Checks `v` (a JSON value: an HTTP body's, a YAML key's, a flag's parsed) against the field's type, limits and
// choices. `normalized`, when given, receives the value as the field holds it (a whole float as an integer).
std::optional<Problem> CheckJson(const RequestField& f, const nlohmann::json& v, nlohmann::json* normalized = nullptr);

// The field's value in `req` as JSON (an int field held as a double is written as an integer).
nlohmann::json Get(const RequestField& f, const EvalRequest& req);
// Sets the field from a value CheckJson accepted.
void Set(const RequestField& f, const nlohmann::json& v, EvalRequest* req);

// The table as JSON: one object per field (name, flag, keys, type, default, lo, hi, choices, kernelgym, help), for
// `kgym flags --request-fields` and the tests.
nlohmann::json TableJson();

// Adds the field's flag to `app`, bound to `*target` (the field's slot in some EvalRequest), its help the field's,
// checked against its limits and choices; `detail` is added to the help. The target's value is shown as the default.
CLI::Option* AddRequestFlag(CLI::App* app, const RequestField& f, FieldSlot target, const std::string& detail = "");
// The same by flag name, bound to the field of `req`.
CLI::Option* AddRequestFlag(CLI::App* app, const std::string& flag, EvalRequest* req, const std::string& detail = "");

// A CLI11 validator that checks a flag's text against the field (the same words as over HTTP).
CLI::Validator Validator(const RequestField& f);

}  // namespace kgym::request
