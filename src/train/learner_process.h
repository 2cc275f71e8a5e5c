// LearnerProcess: the learner (python -m kgym_train serve, python/kgym_train) as a child process of kgym, and the
// HTTP calls kgym makes to it (learner_protocol.h).
//
// Start() runs the interpreter with the learner's package on PYTHONPATH (under torch.distributed.run, one process per
// GPU, when nproc_per_node > 1: rank 0 prints the ready line and serves, the other ranks follow it), waits until the
// child prints its ready line (or exits, or the startup timeout passes: then the error quotes the end of its log), and
// keeps the child's stdout and stderr in `log_path`. The child dies with kgym (PR_SET_PDEATHSIG). Stop() asks it to
// shut down and kills it if it has not exited within a few seconds; the destructor calls Stop().
//
// Thread-safe after Start(): Call() may run from many threads (each call its own HTTP request).
#pragma once

#include <sys/types.h>

#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "core/status.h"

namespace kgym::train {

struct LearnerLaunch {
  std::string python;           // interpreter; empty = PythonInterpreter() (core/runtime_files.h)
  std::string config_path;      // the resolved config (JSON) the learner reads
  std::string model;            // --model: a checkpoint folder to serve instead of the config's model
  std::string resume;           // --resume: a training checkpoint (weights, optimizer, RNG)
  bool train = false;           // --train: accept train steps
  std::string tensorboard_dir;  // --out-dir for /kgym/metrics ("" = none)
  std::string host = "127.0.0.1";
  int port = 0;  // 0 = a free port the learner picks
  std::string name = "kgym-policy";
  std::string log_path;  // child's stdout + stderr (appended)
  double startup_timeout_s = 600;
  int nproc_per_node = 1;    // trainer.nproc_per_node: > 1 runs the learner under torch.distributed.run
  std::vector<int> devices;  // trainer.devices: the learner's CUDA_VISIBLE_DEVICES; empty = unchanged
};

// Fills nproc_per_node and devices from a resolved config's trainer section; an error names the bad key.
Status LearnerPlacement(const nlohmann::json& trainer, LearnerLaunch* launch);

// The command line that runs `python -m kgym_train MODULE_ARGS...`: directly, or for nproc_per_node > 1 as
// `python -m torch.distributed.run --standalone --nproc_per_node N --redirects 1:1,... --tee 1:1,... -m kgym_train
// ...` (ranks > 0 have their stdout teed with a prefix; rank 0's stays bare so its ready line is found; the
// explicit maps also sidestep a crash of torch 1.13's launcher under Python 3.11 when they are left at 0).
std::vector<std::string> LearnerCommand(const std::string& python, int nproc_per_node,
                                        const std::vector<std::string>& module_args);

// The learner's environment: `base` (KEY=VALUE) with PYTHONPATH, PYTHONUNBUFFERED, KGYM_TRAIN_PKGS (when given),
// CUDA_VISIBLE_DEVICES (when `devices` is not empty) replaced, and NCCL_NVLS_ENABLE=0,
// TORCH_SYMM_MEM_DISABLE_MULTICAST=1, NVSHMEM_DISABLE_NVLS=1 always set.
std::vector<std::string> LearnerEnvironment(const std::vector<std::string>& base, const std::string& pythonpath,
                                            const std::string& train_pkgs, const std::vector<int>& devices);

// Runs `python -m kgym_train ARGS...` (python: PythonInterpreter(`python`)) in the foreground (its output goes where
// kgym's goes) and waits for it; `placement` (nproc_per_node, devices) as in Start(). A learner that stops on bad input
// (learner_protocol.h, kExitUserError) gives InvalidArgument with its message; Start() does the same for a learner that
// stops so during startup (its error file is <config_path>.error).
Status RunLearnerCommand(const std::string& python, const std::vector<std::string>& args,
                         const LearnerLaunch& placement = {});

class LearnerProcess {
 public:
  LearnerProcess() = default;
  ~LearnerProcess();
  LearnerProcess(const LearnerProcess&) = delete;
  LearnerProcess& operator=(const LearnerProcess&) = delete;

  Status Start(const LearnerLaunch& launch);
  void Stop();
  bool running() const { return pid_ > 0; }
  // http://host:port (no trailing slash); the OpenAI base URL is base_url() + "/v1".
  const std::string& base_url() const { return base_url_; }

  // POST `body` (or GET when body is null) to `path`; `reply` gets the JSON reply. A non-200 reply is an error
  // carrying the learner's message.
  Status Call(const std::string& path, const nlohmann::json& body, nlohmann::json* reply,
              double timeout_s = 3600) const;

 private:
  pid_t pid_ = -1;
  int out_fd_ = -1;
  std::thread drain_;
  std::string base_url_;
  std::string log_path_;
};

// POST/GET to any server speaking the same protocol (an external engine's /update_weights_from_disk).
Status CallJson(const std::string& url, const nlohmann::json& body, nlohmann::json* reply, double timeout_s);

}  // namespace kgym::train
