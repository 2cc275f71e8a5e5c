// Python binding of kgym::rl over NumPy arrays (module `kgym_rl`), for PyTorch / VERL trainers.
// Arrays are 1-D and C-contiguous (other dtypes/layouts are converted once); ids are int64, masks uint8/bool,
// values float64 (token log-probs may be float32 or float64). Layout of turn rows: see src/rl/turn_rows.h —
// rows of a trajectory adjacent and in turn order, uid dense in [0, num_groups) (np.unique(...,
// return_inverse=True) gives that). Errors raise ValueError. The GIL is released while computing.
// Token masks of mrs / mrs_padded may be bool or uint8 without a copy; mrs_padded builds no offsets array.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cstdlib>
#include <deque>
#include <iterator>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "rl/advantage.h"
#include "rl/group_filter.h"
#include "rl/mismatch.h"
#include "rl/mixed_batch.h"
#include "rl/policy_loss.h"
#include "rl/profiling_rejection.h"
#include "rl/returns.h"
#include "rl/reward.h"

namespace py = pybind11;
using namespace kgym::rl;

namespace {

constexpr auto kIn = py::array::c_style | py::array::forcecast;
using I64 = py::array_t<int64_t, kIn>;
using F64 = py::array_t<double, kIn>;
using F32 = py::array_t<float, kIn>;
using U8 = py::array_t<uint8_t, kIn>;
using OptU8 = std::optional<U8>;
using OptF64 = std::optional<F64>;
using OptI64 = std::optional<I64>;

void Check(const kgym::Status& s) {
  if (!s.ok()) throw py::value_error(s.message());
}

template <typename A>
size_t Len(const A& a, const char* name, size_t expect = static_cast<size_t>(-1)) {
  if (a.ndim() != 1) throw py::value_error(std::string(name) + " must be 1-D");
  const size_t n = static_cast<size_t>(a.shape(0));
  if (expect != static_cast<size_t>(-1) && n != expect) {
    throw py::value_error(std::string(name) + " has " + std::to_string(n) + " entries, expected " +
                          std::to_string(expect));
  }
  return n;
}

// Large output buffers are kept for reuse once NumPy frees their arrays. A trainer calls these functions every
// step with batches of one size, and a fresh buffer costs a page fault and a kernel zeroing pass per 4 KiB: for a
// 1M-row pipeline (~34 MB of outputs) that was a fifth of the time. Buffers are matched by exact size; at most
// kMaxHeld bytes wait for reuse (the oldest are freed first). Small arrays use NumPy's allocator.
class OutputBufferCache {
 public:
  static constexpr size_t kMinBytes = size_t{1} << 20;
  static constexpr size_t kMaxHeld = size_t{256} << 20;

  void* Take(size_t bytes) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (auto it = free_.rbegin(); it != free_.rend(); ++it) {
        if (it->bytes == bytes) {
          void* p = it->ptr;
          free_.erase(std::next(it).base());
          held_ -= bytes;
          return p;
        }
      }
    }
    void* p = std::malloc(bytes);
    if (p == nullptr) throw std::bad_alloc();
    return p;
  }

  void Give(void* p, size_t bytes) {
    std::lock_guard<std::mutex> lock(mu_);
    free_.push_back({p, bytes});
    held_ += bytes;
    while (held_ > kMaxHeld) {
      held_ -= free_.front().bytes;
      std::free(free_.front().ptr);
      free_.pop_front();
    }
  }

 private:
  struct Buffer {
    void* ptr;
    size_t bytes;
  };
  std::mutex mu_;
  std::deque<Buffer> free_;
  size_t held_ = 0;
};

OutputBufferCache& OutputBuffers() {
  static auto* cache = new OutputBufferCache;  // never destroyed: arrays may outlive module teardown
  return *cache;
}

template <typename T>
py::array_t<T> Out(size_t n) {
  const size_t bytes = n * sizeof(T);
  if (bytes < OutputBufferCache::kMinBytes) return py::array_t<T>(static_cast<py::ssize_t>(n));
  struct Owned {
    void* ptr;
    size_t bytes;
  };
  auto* owned = new Owned{OutputBuffers().Take(bytes), bytes};
  py::capsule base(owned, [](void* o) {
    auto* b = static_cast<Owned*>(o);
    OutputBuffers().Give(b->ptr, b->bytes);
    delete b;
  });
  return py::array_t<T>({static_cast<py::ssize_t>(n)}, {static_cast<py::ssize_t>(sizeof(T))},
                        static_cast<T*>(owned->ptr), base);
}

// A token mask as uint8 without a copy when it is bool (NumPy bools are one byte, 0 or 1) or uint8 already; a
// PyTorch bool mask handed over with .numpy() is the common case. Other dtypes are converted once.
OptU8 MaskU8(const std::optional<py::array>& a) {
  if (!a) return std::nullopt;
  if (a->dtype().is(py::dtype::of<bool>())) return U8::ensure(a->attr("view")(py::dtype::of<uint8_t>()));
  return U8::ensure(*a);
}

const uint8_t* OptPtr(const OptU8& a, const char* name, size_t n) {
  if (!a) return nullptr;
  Len(*a, name, n);
  return a->data();
}

TurnRows Rows(const I64* uid, const I64& traj, const I64& turn, size_t* n) {
  *n = Len(traj, "traj");
  Len(turn, "turn", *n);
  TurnRows r;
  r.size = *n;
  r.traj = traj.data();
  r.turn = turn.data();
  if (uid) {
    Len(*uid, "uid", *n);
    r.group = uid->data();
  }
  return r;
}

MrsOptions MakeMrs(const std::string& level, double lower, double upper, double veto, const std::string& scope) {
  MrsOptions o;
  Check(ParseMrsLevel(level, &o.level));
  o.lower = lower;
  o.upper = upper;
  o.veto = veto;
  if (scope == "turn")
    o.veto_scope = VetoScope::kTurn;
  else if (scope == "trajectory")
    o.veto_scope = VetoScope::kTrajectory;
  else
    throw py::value_error("veto_scope must be 'turn' (code) or 'trajectory' (paper)");
  return o;
}

// Token-level MRS or row-level MRS over tokens of dtype T: CSR rows (offsets) or, with offsets null, padded rows
// of row_length tokens.
template <typename T>
py::tuple MrsTokens(const TurnRows& rows, const int64_t* offsets, int64_t row_length, const py::array_t<T, kIn>& train,
                    const py::array_t<T, kIn>& rollout, const uint8_t* tmask, const MrsOptions& o) {
  const size_t ntok = static_cast<size_t>(train.size());
  TokenLogProbs<T> tok{rows.size, offsets, train.data(), rollout.data(), tmask, row_length};
  if (o.level == MrsLevel::kToken) {
    auto token_keep = Out<uint8_t>(ntok);
    auto row_keep = Out<uint8_t>(rows.size);
    {
      py::gil_scoped_release nogil;
      Check(TokenMismatchRejection(rows, tok, o, token_keep.mutable_data(), row_keep.mutable_data()));
    }
    return py::make_tuple(token_keep, row_keep);
  }
  auto ratio = Out<double>(rows.size);
  auto keep = Out<uint8_t>(rows.size);
  {
    py::gil_scoped_release nogil;
    Check(MismatchRejectionFromTokens(rows, tok, o, ratio.mutable_data(), keep.mutable_data()));
  }
  return py::make_tuple(ratio, keep);
}

// Both log-prob arrays in one dtype (float32 when both are, else float64), then MrsTokens.
py::tuple MrsAnyDtype(const TurnRows& rows, const int64_t* offsets, int64_t row_length, const py::array& logp_train,
                      const py::array& logp_rollout, const uint8_t* tm, const MrsOptions& o) {
  if (logp_train.dtype().is(py::dtype::of<float>()) && logp_rollout.dtype().is(py::dtype::of<float>())) {
    return MrsTokens<float>(rows, offsets, row_length, F32::ensure(logp_train), F32::ensure(logp_rollout), tm, o);
  }
  return MrsTokens<double>(rows, offsets, row_length, F64::ensure(logp_train), F64::ensure(logp_rollout), tm, o);
}

py::tuple Mrs(const I64& traj, const I64& turn, const I64& offsets, const py::array& logp_train,
              const py::array& logp_rollout, const std::optional<py::array>& token_mask_in, const std::string& level,
              double lower, double upper, double veto, const std::string& veto_scope) {
  const OptU8 token_mask = MaskU8(token_mask_in);
  size_t n;
  TurnRows rows = Rows(nullptr, traj, turn, &n);
  Len(offsets, "offsets", n + 1);
  const MrsOptions o = MakeMrs(level, lower, upper, veto, veto_scope);
  const size_t ntok = static_cast<size_t>(logp_train.size());
  if (static_cast<size_t>(logp_rollout.size()) != ntok)
    throw py::value_error("logp_rollout and logp_train differ in size");
  if (n > 0 && static_cast<size_t>(offsets.data()[n]) != ntok) {
    throw py::value_error("offsets[-1] must equal the number of tokens");
  }
  const uint8_t* tm = OptPtr(token_mask, "token_mask", ntok);
  return MrsAnyDtype(rows, offsets.data(), 0, logp_train, logp_rollout, tm, o);
}

nlohmann::json ToJson(const py::object& result) {
  if (py::isinstance<py::str>(result)) return nlohmann::json::parse(result.cast<std::string>());
  py::object dumps = py::module_::import("json").attr("dumps");
  return nlohmann::json::parse(dumps(result).cast<std::string>());
}

RewardConfig MakeReward(const std::string& name, const py::kwargs& kw) {
  RewardConfig c;
  Check(ParseRewardName(name, &c));
  for (auto item : kw) {
    const std::string k = item.first.cast<std::string>();
    py::handle v = item.second;
    if (k == "init_correct_weight")
      c.init_correct_weight = v.cast<double>();
    else if (k == "init_performance_weight")
      c.init_performance_weight = v.cast<double>();
    else if (k == "speedup_reward_upper_bound")
      c.speedup_reward_upper_bound = v.cast<double>();
    else if (k == "speedup_reward_lower_bound")
      c.speedup_reward_lower_bound = v.cast<double>();
    else if (k == "speedup_eps")
      c.speedup_eps = v.cast<double>();
    else if (k == "penalty_score")
      c.penalty_score = v.cast<double>();
    else if (k == "coverage_enable")
      c.coverage_enable = v.cast<bool>();
    else if (k == "coverage_weight")
      c.coverage_weight = v.cast<double>();
    else if (k == "coverage_type") {
      const std::string t = v.cast<std::string>();
      if (t == "time_coverage")
        c.coverage_type = CoverageType::kTime;
      else if (t == "number_coverage")
        c.coverage_type = CoverageType::kNumber;
      else
        throw py::value_error("coverage_type must be time_coverage or number_coverage");
    } else if (k == "compilation_fail")
      c.compilation_fail = v.cast<double>();
    else if (k == "correctness_fail")
      c.correctness_fail = v.cast<double>();
    else if (k == "perf_degrade")
      c.perf_degrade = v.cast<double>();
    else
      throw py::value_error("unknown reward option '" + k + "'");
  }
  return c;
}

}  // namespace

PYBIND11_MODULE(kgym_rl, m) {
  m.doc() =
      "kgym RL core: Dr.Kernel rewards, returns, TRLOO and other estimators, MRS, PRS, group filter, "
      "dual-clip loss, daVinci mixed-batch advantages (NumPy arrays in, NumPy arrays out).";

  m.def(
      "returns",
      [](const I64& traj, const I64& turn, const F64& reward, const OptU8& loss_mask, double gamma) {
        size_t n;
        TurnRows rows = Rows(nullptr, traj, turn, &n);
        Len(reward, "reward", n);
        const uint8_t* lm = OptPtr(loss_mask, "loss_mask", n);
        auto out = Out<double>(n);
        py::gil_scoped_release nogil;
        Check(ComputeReturns(rows, reward.data(), lm, gamma, out.mutable_data()));
        return out;
      },
      py::arg("traj"), py::arg("turn"), py::arg("reward"), py::arg("loss_mask") = py::none(), py::arg("gamma") = 1.0,
      "Reward-to-go per row (masked rewards count 0, padding rows 0).");

  m.def(
      "mask_void_turns",
      [](const I64& traj, const I64& turn, const F64& reward, const OptU8& loss_mask) {
        size_t n;
        TurnRows rows = Rows(nullptr, traj, turn, &n);
        Len(reward, "reward", n);
        auto out = Out<uint8_t>(n);
        uint8_t* o = out.mutable_data();
        const uint8_t* lm = OptPtr(loss_mask, "loss_mask", n);
        for (size_t i = 0; i < n; ++i) o[i] = lm ? lm[i] : 1;
        py::gil_scoped_release nogil;
        Check(MaskVoidTurns(rows, reward.data(), o));
        return out;
      },
      py::arg("traj"), py::arg("turn"), py::arg("reward"), py::arg("loss_mask") = py::none(),
      "The loss mask after Dr.Kernel's void-turn rule (a new array).");

  m.def(
      "advantages",
      [](const I64& uid, const I64& traj, const I64& turn, const F64& reward, const OptU8& loss_mask,
         const std::string& estimator, double gamma, int64_t num_groups) {
        size_t n;
        TurnRows rows = Rows(&uid, traj, turn, &n);
        Len(reward, "reward", n);
        AdvantageOptions o;
        Check(ParseEstimator(estimator, &o.estimator));
        o.gamma = gamma;
        o.num_groups = num_groups;
        const uint8_t* lm = OptPtr(loss_mask, "loss_mask", n);
        auto ret = Out<double>(n);
        auto adv = Out<double>(n);
        {
          py::gil_scoped_release nogil;
          Check(ComputeAdvantages(rows, reward.data(), lm, o, ret.mutable_data(), adv.mutable_data()));
        }
        return py::make_tuple(ret, adv);
      },
      py::arg("uid"), py::arg("traj"), py::arg("turn"), py::arg("reward"), py::arg("loss_mask") = py::none(),
      py::arg("estimator") = "trloo", py::arg("gamma") = 1.0, py::arg("num_groups") = 0,
      "(returns, advantages) per row. estimator: trloo | grpo | turn_independent_grpo | rloo | erloo | "
      "erloo_norm | reinforce.");

  m.def(
      "summarize_log_ratios",
      [](const I64& offsets, const F64& logp_train, const F64& logp_rollout, const OptU8& token_mask) {
        const size_t rows = Len(offsets, "offsets") - 1;
        const size_t ntok = Len(logp_train, "logp_train");
        Len(logp_rollout, "logp_rollout", ntok);
        TokenLogProbs<double> tok{rows, offsets.data(), logp_train.data(), logp_rollout.data(),
                                  OptPtr(token_mask, "token_mask", ntok)};
        std::vector<RowLogRatio> st(rows);
        {
          py::gil_scoped_release nogil;
          Check(SummarizeLogRatios(tok, st.data()));
        }
        auto sum = Out<double>(rows);
        auto cnt = Out<int64_t>(rows);
        auto mn = Out<double>(rows);
        for (size_t i = 0; i < rows; ++i) {
          sum.mutable_data()[i] = st[i].sum;
          cnt.mutable_data()[i] = st[i].count;
          mn.mutable_data()[i] = st[i].min;
        }
        return py::make_tuple(sum, cnt, mn);
      },
      py::arg("offsets"), py::arg("logp_train"), py::arg("logp_rollout"), py::arg("token_mask") = py::none(),
      "(sum, count, min) of logp_train - logp_rollout over each row's valid tokens.");

  m.def("mrs", &Mrs, py::arg("traj"), py::arg("turn"), py::arg("offsets"), py::arg("logp_train"),
        py::arg("logp_rollout"), py::arg("token_mask") = py::none(), py::arg("level") = "geometric",
        py::arg("lower") = 0.999, py::arg("upper") = 1.001, py::arg("veto") = 1e-4, py::arg("veto_scope") = "turn",
        "Mismatch rejection over CSR tokens (row i owns tokens offsets[i]:offsets[i+1]). Returns (ratio, keep) per "
        "row; level 'token' returns (token_keep, row_keep).");

  m.def(
      "mrs_padded",
      [](const I64& traj, const I64& turn, const py::array& logp_train, const py::array& logp_rollout,
         const std::optional<py::array>& response_mask, const std::string& level, double lower, double upper,
         double veto, const std::string& veto_scope) {
        if (logp_train.ndim() != 2) throw py::value_error("logp_train must be 2-D (rows, response_length)");
        const size_t rows = static_cast<size_t>(logp_train.shape(0)), len = static_cast<size_t>(logp_train.shape(1));
        auto flat = [](const py::array& a) { return a.attr("reshape")(-1).cast<py::array>(); };
        std::optional<py::array> mask;
        if (response_mask) mask = flat(*response_mask);
        if (len == 0) {  // no tokens: CSR offsets of zeros (row_length must be > 0)
          I64 offsets(static_cast<py::ssize_t>(rows + 1));
          std::fill_n(offsets.mutable_data(), rows + 1, int64_t{0});
          return Mrs(traj, turn, offsets, flat(logp_train), flat(logp_rollout), mask, level, lower, upper, veto,
                     veto_scope);
        }
        // Padded rows need no offsets array: row i owns tokens [i·len, (i+1)·len).
        size_t n;
        TurnRows trows = Rows(nullptr, traj, turn, &n);
        if (n != rows) {
          throw py::value_error("logp_train has " + std::to_string(rows) + " rows, traj has " + std::to_string(n));
        }
        if (static_cast<size_t>(logp_rollout.size()) != rows * len) {
          throw py::value_error("logp_rollout and logp_train differ in size");
        }
        const MrsOptions o = MakeMrs(level, lower, upper, veto, veto_scope);
        const OptU8 mask_u8 = MaskU8(mask);
        const uint8_t* tm = OptPtr(mask_u8, "response_mask", rows * len);
        return MrsAnyDtype(trows, nullptr, static_cast<int64_t>(len), flat(logp_train), flat(logp_rollout), tm, o);
      },
      py::arg("traj"), py::arg("turn"), py::arg("logp_train"), py::arg("logp_rollout"),
      py::arg("response_mask") = py::none(), py::arg("level") = "geometric", py::arg("lower") = 0.999,
      py::arg("upper") = 1.001, py::arg("veto") = 1e-4, py::arg("veto_scope") = "turn",
      "mrs() over padded (rows, response_length) log-prob tensors and their response mask.");

  m.def(
      "mrs_from_stats",
      [](const I64& traj, const I64& turn, const F64& sum, const I64& count, const F64& min, const std::string& level,
         double lower, double upper, double veto, const std::string& veto_scope) {
        size_t n;
        TurnRows rows = Rows(nullptr, traj, turn, &n);
        Len(sum, "sum", n);
        Len(count, "count", n);
        Len(min, "min", n);
        const RowLogRatioArrays st{sum.data(), count.data(), min.data()};
        const MrsOptions o = MakeMrs(level, lower, upper, veto, veto_scope);
        auto ratio = Out<double>(n);
        auto keep = Out<uint8_t>(n);
        {
          py::gil_scoped_release nogil;
          Check(MismatchRejection(rows, st, o, ratio.mutable_data(), keep.mutable_data()));
        }
        return py::make_tuple(ratio, keep);
      },
      py::arg("traj"), py::arg("turn"), py::arg("sum"), py::arg("count"), py::arg("min"),
      py::arg("level") = "geometric", py::arg("lower") = 0.999, py::arg("upper") = 1.001, py::arg("veto") = 1e-4,
      py::arg("veto_scope") = "turn",
      "Row-level MRS from per-row log-ratio summaries (e.g. reduced on the GPU): (ratio, keep).");

  m.def(
      "prs",
      [](const F64& coverage, const U8& correct, const OptF64& speedup, double threshold, double factor, uint64_t seed,
         double speedup_threshold, int round_decimals, const std::string& level, const OptI64& traj, const OptI64& turn,
         const OptU8& valid) {
        const size_t n = Len(coverage, "coverage");
        Len(correct, "correct", n);
        PrsOptions o;
        o.threshold = threshold;
        o.factor = factor;
        o.seed = seed;
        o.speedup_threshold = speedup_threshold;
        o.round_decimals = round_decimals;
        Check(ParsePrsLevel(level, &o.level));
        PrsInput in;
        in.size = n;
        in.coverage = coverage.data();
        in.correct = correct.data();
        if (speedup) in.speedup = (Len(*speedup, "speedup", n), speedup->data());
        in.valid = OptPtr(valid, "valid", n);
        TurnRows rows;
        if (traj && turn) {
          size_t m2;
          rows = Rows(nullptr, *traj, *turn, &m2);
          if (m2 != n) throw py::value_error("traj/turn and coverage differ in length");
          in.rows = &rows;
        }
        auto p = Out<double>(n);
        auto keep = Out<uint8_t>(n);
        {
          py::gil_scoped_release nogil;
          Check(ProfilingRejection(in, o, p.mutable_data(), keep.mutable_data()));
        }
        return py::make_tuple(p, keep);
      },
      py::arg("coverage"), py::arg("correct"), py::arg("speedup") = py::none(), py::arg("threshold") = 0.3,
      py::arg("factor") = 0.1, py::arg("seed") = 0, py::arg("speedup_threshold") = -1.0, py::arg("round_decimals") = 2,
      py::arg("level") = "turn", py::arg("traj") = py::none(), py::arg("turn") = py::none(),
      py::arg("valid") = py::none(), "Profiling rejection sampling: (keep_prob, keep) per row.");

  m.def(
      "prs_uniform",
      [](uint64_t seed, size_t n) {
        auto u = Out<double>(n);
        for (size_t i = 0; i < n; ++i) u.mutable_data()[i] = PrsUniform(seed, i);
        return u;
      },
      py::arg("seed"), py::arg("n"), "The uniform draws PRS uses for rows 0..n-1.");

  m.def(
      "group_filter",
      [](const I64& uid, const I64& traj, const I64& turn, const F64& reward, const OptU8& loss_mask, double min_std,
         int64_t min_group_size, bool last_turn_only, int64_t num_groups) {
        size_t n;
        TurnRows rows = Rows(&uid, traj, turn, &n);
        Len(reward, "reward", n);
        GroupFilterOptions o;
        o.min_std = min_std;
        o.min_group_size = min_group_size;
        o.last_turn_only = last_turn_only;
        o.num_groups = num_groups;
        const uint8_t* lm = OptPtr(loss_mask, "loss_mask", n);
        std::vector<uint8_t> gk;
        auto rk = Out<uint8_t>(n);
        {
          py::gil_scoped_release nogil;
          Check(ZeroVarianceGroupFilter(rows, reward.data(), lm, o, &gk, rk.mutable_data()));
        }
        auto g = Out<uint8_t>(gk.size());
        std::copy(gk.begin(), gk.end(), g.mutable_data());
        return py::make_tuple(g, rk);
      },
      py::arg("uid"), py::arg("traj"), py::arg("turn"), py::arg("reward"), py::arg("loss_mask") = py::none(),
      py::arg("min_std") = 1e-3, py::arg("min_group_size") = 1, py::arg("last_turn_only") = true,
      py::arg("num_groups") = 0, "Zero-variance group filter: (group_keep per uid, row_keep per row).");

  m.def(
      "dual_clip_policy_loss",
      [](const I64& offsets, const F64& logp, const F64& old_logp, const F64& advantages, const OptU8& token_mask,
         double clip_low, double clip_high, double clip_ratio_c, double loss_scale_factor) {
        const size_t rows = Len(offsets, "offsets") - 1;
        const size_t ntok = Len(logp, "logp");
        Len(old_logp, "old_logp", ntok);
        Len(advantages, "advantages", rows);
        if (rows > 0 && static_cast<size_t>(offsets.data()[rows]) != ntok) {
          throw py::value_error("offsets[-1] must equal the number of tokens");
        }
        PolicyLossOptions o{clip_low, clip_high, clip_ratio_c, loss_scale_factor};
        PolicyLossResult r;
        auto tl = Out<double>(ntok);
        Check(DualClipPolicyLoss(rows, offsets.data(), logp.data(), old_logp.data(),
                                 OptPtr(token_mask, "token_mask", ntok), advantages.data(), o, &r, tl.mutable_data()));
        py::dict d;
        d["loss"] = r.loss;
        d["ppo_kl"] = r.ppo_kl;
        d["clip_fraction"] = r.clip_fraction;
        d["clip_fraction_lower"] = r.clip_fraction_lower;
        d["clip_fraction_upper"] = r.clip_fraction_upper;
        d["clip_fraction_dual"] = r.clip_fraction_dual;
        d["rows_in_loss"] = r.rows_in_loss;
        d["token_loss"] = tl;
        return d;
      },
      py::arg("offsets"), py::arg("logp"), py::arg("old_logp"), py::arg("advantages"),
      py::arg("token_mask") = py::none(), py::arg("clip_low") = 0.2, py::arg("clip_high") = 0.28,
      py::arg("clip_ratio_c") = 3.0, py::arg("loss_scale_factor") = 1000.0,
      "Reference dual-clip PPO loss with seq-mean-token-sum aggregation (advantages: one per row).");

  m.def(
      "mixed_batch_advantages",
      [](const I64& uid, const I64& traj, const I64& turn, const F64& reward, const OptU8& loss_mask,
         const OptI64& token_count, const OptI64& selection_uid, const OptF64& selection_reward,
         const OptI64& summary_group, const OptF64& summary_reward, double gamma, bool cross_scheme_norm,
         double selection_weight, double summary_weight) {
        size_t n;
        PolicyPart pol;
        pol.rows = Rows(&uid, traj, turn, &n);
        Len(reward, "reward", n);
        pol.rewards = reward.data();
        pol.loss_mask = OptPtr(loss_mask, "loss_mask", n);
        if (token_count) pol.token_count = (Len(*token_count, "token_count", n), token_count->data());
        auto part = [](const OptI64& g, const OptF64& r, const char* name) {
          OutcomePart p;
          if (!g && !r) return p;
          if (!g || !r) throw py::value_error(std::string(name) + ": give both the groups and the rewards");
          p.size = Len(*g, name);
          Len(*r, name, p.size);
          p.group = g->data();
          p.reward = r->data();
          return p;
        };
        OutcomePart sel = part(selection_uid, selection_reward, "selection");
        OutcomePart sum = part(summary_group, summary_reward, "summary");
        MixedBatchOptions o{gamma, cross_scheme_norm, selection_weight, summary_weight};
        auto pr = Out<double>(n), pa = Out<double>(n), sa = Out<double>(sel.size), ua = Out<double>(sum.size);
        {
          py::gil_scoped_release nogil;
          Check(MixedBatchAdvantages(pol, sel, sum, o, pr.mutable_data(), pa.mutable_data(), sa.mutable_data(),
                                     ua.mutable_data()));
        }
        py::dict d;
        d["policy_returns"] = pr;
        d["policy_advantages"] = pa;
        d["selection_advantages"] = sa;
        d["summary_advantages"] = ua;
        return d;
      },
      py::arg("uid"), py::arg("traj"), py::arg("turn"), py::arg("reward"), py::arg("loss_mask") = py::none(),
      py::arg("token_count") = py::none(), py::arg("selection_uid") = py::none(),
      py::arg("selection_reward") = py::none(), py::arg("summary_group") = py::none(),
      py::arg("summary_reward") = py::none(), py::arg("gamma") = 1.0, py::arg("cross_scheme_norm") = true,
      py::arg("selection_weight") = 0.3, py::arg("summary_weight") = 0.5,
      "daVinci-kernel per-agent advantages of one mixed batch.");

  m.def(
      "compute_reward",
      [](const py::object& result, const std::string& name, const py::kwargs& kw) {
        return ComputeReward(ToJson(result), MakeReward(name, kw));
      },
      py::arg("result"), py::arg("name") = "speedup",
      "Dr.Kernel reward of one KernelGYM result (dict or JSON string). name: speedup | weighted | like_kernel | "
      "paper_eq8 (or calculate_reward_*); knobs as keyword arguments (coverage_enable=False, ...).");

  m.def(
      "reward_breakdown",
      [](const py::object& result, const std::string& name, const py::kwargs& kw) {
        const auto j = RewardBreakdownToJson(ComputeRewardBreakdown(ToJson(result), MakeReward(name, kw)));
        return py::module_::import("json").attr("loads")(j.dump());
      },
      py::arg("result"), py::arg("name") = "speedup", "The reward and what it was made of, as a dict.");
}
