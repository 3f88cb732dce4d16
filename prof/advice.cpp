#include "prof/advice.h"

#include <fmt/core.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <unordered_set>

#include "common/dtypes.h"
#include "prof/device_peaks.h"
#include "prof/memory_events.h"
#include "prof/memory_report.h"
#include "prof/time_model.h"
#include "prof/unmodelled_ops.h"

namespace pyprof::prof {
namespace {

bool is_gpu(const ProfRecord& r) { return r.kind != Kind::kOp; }

// The time a record adds to the profile: GPU records their duration, CPU ops their self time.
int64_t time_of(const ProfRecord& r, bool cpu_only) {
  return cpu_only ? r.self_duration : r.duration;
}

std::string ns_text(double ns) { return format_quantity(ns, Unit::kTime); }

// "a (1.2 ms), b (300 µs), c (20 µs)": the 3 keys with the most time.
std::string top3(const std::map<std::string, double>& by_key, std::string_view what = "") {
  std::vector<std::pair<std::string, double>> v(by_key.begin(), by_key.end());
  std::stable_sort(v.begin(), v.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  std::string out;
  for (size_t i = 0; i < v.size() && i < 3; ++i) {
    out += fmt::format("{}{} ({}{})", i ? "; " : "", v[i].first.empty() ? "(no op)" : v[i].first,
                       ns_text(v[i].second), what);
  }
  return out;
}

std::vector<std::vector<int64_t>> parse_shapes(std::string_view s) {
  std::vector<std::vector<int64_t>> out;
  std::vector<int64_t>* cur = nullptr;
  int64_t value = 0;
  bool in_number = false;
  for (char ch : s) {
    if (ch == '[') {
      out.emplace_back();
      cur = &out.back();
    } else if (ch >= '0' && ch <= '9') {
      value = value * 10 + (ch - '0');
      in_number = true;
    } else {
      if (in_number && cur) cur->push_back(value);
      value = 0;
      in_number = false;
      if (ch == ']') cur = nullptr;
    }
  }
  return out;
}

bool is_gemm_family(std::string_view family) {
  return family == "matmul" || family == "conv" || family == "attention" || family == "rnn";
}

// The GEMM dimensions of a record's shapes that Tensor Cores want aligned: matmul-like
// families, the last two dimensions of each input of rank >= 2; conv, the weight's (second
// input's) output and input channels. The first that is not a multiple of `multiple`, or 0.
int64_t misaligned_dim(std::string_view family, std::string_view shapes, int64_t multiple) {
  auto tensors = parse_shapes(shapes);
  std::vector<int64_t> dims;
  if (family == "conv") {
    if (tensors.size() >= 2 && tensors[1].size() >= 2) dims = {tensors[1][0], tensors[1][1]};
  } else {
    for (const auto& t : tensors) {
      if (t.size() >= 2) {
        dims.push_back(t[t.size() - 2]);
        dims.push_back(t.back());
      }
    }
  }
  if (multiple <= 0) return 0;  // a dtype without Tensor Cores has no alignment to miss
  for (int64_t d : dims) {
    if (d % multiple != 0) return d;
  }
  return 0;
}

// The multiple a Tensor Core GEMM's dimensions must be of, in elements: the models' rule
// (common/dtypes.h's tensor_core_alignment(): 16 bytes a dimension, so fp32 as TF32 takes 4,
// where this rule once said 8); 0 for a dtype Tensor Cores do not take.
int64_t alignment_for(std::string_view dtype) {
  return tensor_core_alignment(canonical_dtype_name(dtype), /*allow_tf32=*/true);
}

// The Tensor Core speed-up of `dtype` on the profile's GPU: its Tensor Core peak over its
// CUDA-core peak from the device's roof (prof/device_peaks.h), else kTf32SpeedupDefault.
double tc_speedup(const ReadResult& data, std::string_view dtype) {
  for (const DeviceRoofs& d : resolve_device_roofs(data, nullptr)) {
    if (!d.roof) continue;
    double tc = dtype == "float32"    ? d.roof->peak(Mode::kTf32Tc)
                : dtype == "bfloat16" ? d.roof->peak(Mode::kBf16Tc)
                                      : d.roof->peak(Mode::kFp16Tc);
    double plain = d.roof->peak(Mode::kFp32);
    if (tc > 0 && plain > 0) return tc / plain;
  }
  return kTf32SpeedupDefault;
}

std::string op_name(const ReadResult& data, const ProfRecord& r) {
  return std::string(data.strings.get(r.op != 0 ? r.op : r.name));
}

bool names_optimizer_range(std::string_view layer) {
  return layer.find("Optimizer.step#") != std::string_view::npos;
}

// A CPU record inside another record matching `match`: its time is already in that one's.
template <typename Match>
bool inside_match(const ReadResult& data, const ProfRecord& r, Match match) {
  for (int32_t p = r.parent; p >= 0; p = data.records[p].parent) {
    if (match(data.records[p])) return true;
  }
  return false;
}

class Advisor {
 public:
  explicit Advisor(const ReadResult& data) : data_(data), cpu_(data.cpu_only) {
    int64_t first = INT64_MAX, end = 0;
    for (const ProfRecord& r : data.records) {
      total_ += static_cast<double>(time_of(r, cpu_));
      if (is_gpu(r) && !r.bad_time && r.duration > 0) {
        first = std::min(first, r.start);
        end = std::max(end, r.start + r.duration);
      }
    }
    wall_ = cpu_ || end <= first ? total_ : static_cast<double>(end - first);
  }

  std::vector<Advice> run() {
    if (!cpu_) {
      tensor_cores();
      cudnn_benchmark();
      gpu_idle();
      copies();
    }
    optimizer();
    backward_forward();
    copies_of_tensors();
    dataloader();
    batch_size_headroom();
    unmodelled_ops();
    std::stable_sort(out_.begin(), out_.end(), [](const Advice& a, const Advice& b) {
      return a.at_stake_ns > b.at_stake_ns;
    });
    return out_;
  }

 private:
  double share(double t) const { return total_ > 0 ? t / total_ : 0; }
  std::string pct(double t) const { return fmt::format("{:.1f}%", 100 * share(t)); }
  void add(std::string rule, std::string finding, double at_stake, std::string evidence,
           std::string fix) {
    double percent = wall_ > 0 ? 100 * at_stake / wall_ : 0;
    out_.push_back({std::move(rule), std::move(finding), at_stake, percent, std::move(evidence),
                    std::move(fix)});
  }
  void add_with_percent(std::string rule, std::string finding, double at_stake, double percent,
                        std::string evidence, std::string fix) {
    out_.push_back({std::move(rule), std::move(finding), at_stake, percent, std::move(evidence),
                    std::move(fix)});
  }

  // The fix for FP32 GEMMs on CUDA cores, as far as the recorded settings tell what is on.
  std::string fp32_fix() const {
    const bool matmul_tf32 = setting("cuda.matmul.allow_tf32") == "true" ||
                             setting("float32_matmul_precision") == "\"high\"" ||
                             setting("float32_matmul_precision") == "\"medium\"";
    const bool conv_tf32 = setting("cudnn.allow_tf32") == "true";
    if (matmul_tf32 && conv_tf32) {
      return "TF32 is already allowed (the recorded settings): cuBLAS/cuDNN chose CUDA-core "
             "kernels for these shapes: run under torch.autocast('cuda', "
             "dtype=torch.bfloat16), use channels_last for convolutions, or "
             "torch.backends.cudnn.benchmark = True";
    }
    std::string fix;
    if (!matmul_tf32) {
      fix =
          "torch.backends.cuda.matmul.allow_tf32 = True (or "
          "torch.set_float32_matmul_precision('high'))";
    }
    if (!conv_tf32) {
      if (!fix.empty()) fix += " and ";
      fix += "torch.backends.cudnn.allow_tf32 = True";
    }
    if (setting("cudnn.allow_tf32").empty()) {
      fix =
          "torch.backends.cuda.matmul.allow_tf32 = True and torch.backends.cudnn.allow_tf32 = "
          "True (or torch.set_float32_matmul_precision('high'))";
    } else if (conv_tf32) {
      fix += " (cudnn.allow_tf32 is on already: convolutions on CUDA cores are cuDNN's choice)";
    }
    return fix + ", or run the model under torch.autocast('cuda', dtype=torch.bfloat16)";
  }

  // fp32-tensor-cores, tc-not-used, shapes-not-aligned.
  void tensor_cores() {
    double fp32_time = 0, fp32_stake = 0, low_time = 0, low_stake = 0, shape_time = 0,
           shape_stake = 0;
    std::map<std::string, double> fp32_ev, low_ev, shape_ev;
    double fp32_speedup = tc_speedup(data_, "float32");
    // An op instance one of whose kernels ran on Tensor Cores did use them: its other kernels
    // are the helpers around the MMA kernel (MIOpen's and cuDNN's layout transposes, split-K
    // reductions), which no setting would move onto Tensor Cores.
    std::set<std::pair<int64_t, int64_t>> on_tensor_cores;  // (instance, cost part)
    for (const ProfRecord& r : data_.records) {
      if (r.kind == Kind::kKernel && r.tc == 1 && r.instance != 0) {
        on_tensor_cores.emplace(r.instance, r.cost_part);
      }
    }
    for (const ProfRecord& r : data_.records) {
      if (r.kind != Kind::kKernel || !r.tc_eligible || r.tc == 1) continue;
      if (r.instance != 0 && on_tensor_cores.count({r.instance, r.cost_part})) continue;
      std::string_view family = data_.strings.get(r.family);
      if (!is_gemm_family(family)) continue;
      std::string_view dtype = data_.strings.get(r.dtype);
      double t = static_cast<double>(r.duration);
      int64_t bad = misaligned_dim(family, data_.strings.get(r.shapes), alignment_for(dtype));
      std::string key = op_name(data_, r) + " " + std::string(data_.strings.get(r.shapes));
      if (dtype == "float32") {
        fp32_time += t;
        fp32_stake += t * (1 - 1 / fp32_speedup);
        fp32_ev[key] += t;
      } else if (bad != 0) {
        shape_time += t;
        shape_stake += t * (1 - 1 / tc_speedup(data_, dtype));
        shape_ev[key + fmt::format(" dim {}", bad)] += t;
      } else {
        low_time += t;
        low_stake += t * (1 - 1 / tc_speedup(data_, dtype));
        low_ev[key + " " + std::string(dtype)] += t;
      }
    }
    if (share(fp32_time) >= kMinShare) {
      add("fp32-tensor-cores",
          fmt::format("{} of FP32 GEMM/conv kernels ({} of GPU time) ran on CUDA cores; TF32 or "
                      "AMP would run them on Tensor Cores, about {:.1f}x faster at peak.",
                      ns_text(fp32_time), pct(fp32_time), fp32_speedup),
          fp32_stake, top3(fp32_ev), fp32_fix());
    }
    if (share(low_time) >= kMinShare) {
      add("tc-not-used",
          fmt::format("{} of half-precision GEMM/conv kernels ({} of GPU time) are Tensor Core "
                      "eligible but did not use Tensor Cores.",
                      ns_text(low_time), pct(low_time)),
          low_stake, top3(low_ev),
          "check the layout (channels_last for convolutions), enable "
          "torch.backends.cudnn.benchmark = True, and keep inputs contiguous");
    }
    if (share(shape_time) >= kMinShare) {
      add("shapes-not-aligned",
          fmt::format("{} of GEMM/conv kernels ({} of GPU time) have a dimension that is not a "
                      "multiple of 8 (16 for FP8/INT8) and ran without Tensor Cores.",
                      ns_text(shape_time), pct(shape_time)),
          shape_stake, top3(shape_ev),
          "pad the named dimension (batch, hidden size, vocabulary, channels) to a multiple of 8 "
          "(16 for FP8/INT8)");
    }
  }

  // unmodelled-ops: ops that neither pyprof nor a user model costs (prof/unmodelled_ops.h) hold
  // kUnmodelledShare of the time or more. Nothing runs slower for it, but the achieved FLOP/s,
  // the roofline and the time model judge the rest of the profile only: the time at stake is
  // the time they cannot judge, which a model of each op (a few lines of formulas) brings in.
  void unmodelled_ops() {
    const UnmodelledTime u = unmodelled_time(data_);
    const double time = static_cast<double>(u.unmodelled);
    if (u.ops.empty() || share(time) < kUnmodelledShare) return;
    std::string evidence;
    for (size_t i = 0; i < u.ops.size() && i < 3; ++i) {
      const UnmodelledOp& op = u.ops[i];
      evidence += fmt::format(
          "{}{} {} ({}, {} record{})", i ? "; " : "", op.op, pct(static_cast<double>(op.time)),
          ns_text(static_cast<double>(op.time)), op.records, op.records == 1 ? "" : "s");
    }
    add("unmodelled-ops",
        fmt::format("{} op{} without a FLOP model hold {} ({} of {}): the achieved FLOP/s, the "
                    "roofline and the time model leave that time out.",
                    u.ops.size(), u.ops.size() == 1 ? "" : "s", ns_text(time), pct(time),
                    cpu_ ? "op self time" : "GPU time"),
        time, evidence,
        "write each op's FLOP and byte formulas over its arguments in a file and pass it with "
        "pyprof prof --op-models FILE (or $PYPROF_OP_MODELS); where the op's library registers "
        "FLOP formulas with PyTorch (torch.utils.flop_counter), pyprof prof --flop-registry "
        "MODULE uses them: docs/ops.md, \"Adding your own models\"");
  }

  // The header's torch setting `key` as JSON text ("true", "false"), or "" when unknown.
  std::string setting(const char* key) const {
    auto it = data_.torch_settings.find(key);
    return it == data_.torch_settings.end() ? "" : it->second;
  }

  // cudnn-benchmark-off: pyprof recorded torch.backends.cudnn.benchmark = False (the profile
  // says so: other tools' traces do not, and the rule stays silent), and convolution kernels
  // take time. The time at stake is the convolutions' time above what they would take at the
  // rate this profile's own convolutions show they can reach: the fitted time model's
  // prediction for the conv family when there is a fit, else each kernel's FLOPs at the best
  // FLOP/s a convolution kernel of its dtype reached here. Autotuning picks the fastest
  // algorithm per shape, so a kernel well under what its peers achieve is what it could recover.
  void cudnn_benchmark() {
    if (setting("cudnn.benchmark") != "false" || setting("cudnn.enabled") == "false") return;
    const TimeModel model = fit_time_model(data_);
    std::map<uint32_t, double> best_rate;  // dtype -> FLOPs per ns
    std::vector<const ProfRecord*> convs;
    double conv_time = 0;
    for (const ProfRecord& r : data_.records) {
      if (r.kind != Kind::kKernel || r.bad_time || r.duration <= 0) continue;
      if (data_.strings.get(r.family) != "conv") continue;
      convs.push_back(&r);
      conv_time += static_cast<double>(r.duration);
      if (r.counted && r.flops > 0) {
        double& best = best_rate[r.dtype];
        best = std::max(best, r.flops / static_cast<double>(r.duration));
      }
    }
    if (share(conv_time) < kMinShare) return;
    double stake = 0;
    std::map<std::string, double> ev;
    for (const ProfRecord* r : convs) {
      double t = static_cast<double>(r->duration);
      std::optional<double> expected = model.predict_ns(*r);
      if (!expected && r->counted && r->flops > 0 && best_rate[r->dtype] > 0) {
        expected = r->flops / best_rate[r->dtype];
      }
      if (!expected || t <= *expected) continue;
      stake += t - *expected;
      ev[op_name(data_, *r) + " " + std::string(data_.strings.get(r->shapes))] += t - *expected;
    }
    add("cudnn-benchmark-off",
        fmt::format("{} of convolution kernels ({} of GPU time) ran with "
                    "torch.backends.cudnn.benchmark = False: cuDNN used its heuristic's "
                    "algorithm for each shape instead of timing the candidates.",
                    ns_text(conv_time), pct(conv_time)),
        stake, ev.empty() ? "(every convolution at the rate its peers reach)" : top3(ev, " over"),
        "torch.backends.cudnn.benchmark = True when input shapes repeat from step to step "
        "(the first step of each new shape pays for the timing)");
  }

  // gpu-idle-{sync,launch-bound,cpu-bound}: the gaps in the union of GPU activity.
  void gpu_idle() {
    std::vector<const ProfRecord*> gpu;
    for (const ProfRecord& r : data_.records) {
      if (is_gpu(r) && !r.bad_time && r.duration > 0) gpu.push_back(&r);
    }
    if (gpu.size() < 2) return;
    std::stable_sort(gpu.begin(), gpu.end(),
                     [](const ProfRecord* a, const ProfRecord* b) { return a->start < b->start; });
    const int64_t first = gpu.front()->start;
    int64_t busy_end = gpu.front()->start + gpu.front()->duration;
    const ProfRecord* last = gpu.front();  // the record whose end is busy_end
    double idle[3] = {0, 0, 0};            // sync, launch-bound, cpu-bound
    std::map<std::string, double> ev[3];
    int64_t short_kernels = 0, kernels = 0;
    // Synchronizing API calls by end: a gap that opens while the host waits in one (it began
    // before the GPU ran dry) and closes after it returned is the synchronization's.
    std::vector<const SyncCall*> syncs;
    for (const SyncCall& c : data_.syncs) syncs.push_back(&c);
    std::stable_sort(syncs.begin(), syncs.end(), [](const SyncCall* a, const SyncCall* b) {
      return a->start + a->duration < b->start + b->duration;
    });
    size_t next_sync = 0;
    auto sync_into = [&](int64_t gap_start, int64_t gap_end) -> const SyncCall* {
      while (next_sync < syncs.size() &&
             syncs[next_sync]->start + syncs[next_sync]->duration < gap_start) {
        ++next_sync;
      }
      for (size_t i = next_sync; i < syncs.size(); ++i) {
        const SyncCall* c = syncs[i];
        if (c->start + c->duration > gap_end) break;
        if (c->start <= gap_start) return c;
      }
      return nullptr;
    };
    for (const ProfRecord* r : gpu) {
      if (r->kind == Kind::kKernel) {
        ++kernels;
        if (r->duration < kShortKernelNs) ++short_kernels;
      }
      if (r->start > busy_end) {
        double gap = static_cast<double>(r->start - busy_end);
        std::string before = op_name(data_, *last);
        const SyncCall* waited = sync_into(busy_end, r->start);
        bool sync = waited != nullptr ||
                    (last->kind == Kind::kMemcpy &&
                     data_.strings.get(last->name).find("DtoH") != std::string_view::npos) ||
                    before == "aten::_local_scalar_dense" || before == "aten::item";
        int cause = sync ? 0 : last->duration < kShortKernelNs && gap < kShortKernelNs ? 1 : 2;
        idle[cause] += gap;
        std::string key = cause == 2 ? "before " + op_name(data_, *r) : "after " + before;
        if (waited) {
          std::string_view in = data_.strings.get(waited->op);
          key = fmt::format("after {} ({})", data_.strings.get(waited->name),
                            in.empty() ? "no op: torch.cuda.synchronize() or user code"
                                       : "in " + std::string(in));
        }
        ev[cause][key] += gap;
      }
      if (r->start + r->duration > busy_end) {
        busy_end = r->start + r->duration;
        last = r;
      }
    }
    const double span = static_cast<double>(busy_end - first);
    if (span <= 0) return;
    auto idle_share = [&](double t) { return fmt::format("{:.1f}%", 100 * t / span); };
    if (idle[0] / span >= kIdleShare) {
      add("gpu-idle-sync",
          fmt::format("The GPU sat idle {} ({} of the GPU span) right after the host waited for "
                      "it (a synchronize call, a device-to-host copy, .item()), then launched "
                      "late.",
                      ns_text(idle[0]), idle_share(idle[0])),
          idle[0], top3(ev[0]),
          "remove .item() / .cpu() / print(tensor) from the training loop (log every N steps, "
          "keep metrics on the GPU), and avoid torch.cuda.synchronize() in the step");
    }
    if (idle[1] / span >= kIdleShare) {
      add("gpu-idle-launch-bound",
          fmt::format("The GPU sat idle {} ({} of the GPU span) in short gaps between short "
                      "kernels: {} of {} kernels ran under {}, so launch overhead dominates.",
                      ns_text(idle[1]), idle_share(idle[1]), short_kernels, kernels,
                      ns_text(static_cast<double>(kShortKernelNs))),
          idle[1], top3(ev[1]),
          "fuse the small kernels (torch.compile), capture the step in a CUDA graph "
          "(torch.cuda.graphs / mode='reduce-overhead'), or use a larger batch");
    }
    if (idle[2] / span >= kIdleShare) {
      add("gpu-idle-cpu-bound",
          fmt::format("The GPU sat idle {} ({} of the GPU span) waiting for the CPU to launch the "
                      "next work (gaps of {} or more).",
                      ns_text(idle[2]), idle_share(idle[2]),
                      ns_text(static_cast<double>(kShortKernelNs))),
          idle[2], top3(ev[2]),
          "move CPU work out of the step (data preparation into DataLoader workers), or overlap "
          "it: torch.compile, CUDA graphs, a larger batch");
    }
  }

  // host-device-copies and pageable-copies.
  void copies() {
    double hd = 0, pageable = 0;
    std::map<std::string, double> hd_ev, pageable_ev;
    for (const ProfRecord& r : data_.records) {
      if (r.kind != Kind::kMemcpy) continue;
      std::string_view name = data_.strings.get(r.name);
      bool host_device = name.find("HtoD") != std::string_view::npos ||
                         name.find("DtoH") != std::string_view::npos;
      double t = static_cast<double>(r.duration);
      std::string key = fmt::format("{} {}", op_name(data_, r), name);
      if (host_device) {
        hd += t;
        hd_ev[key] += t;
      }
      if (r.src_memory == MemoryKind::kPageable || r.dst_memory == MemoryKind::kPageable) {
        pageable += t;
        pageable_ev[key + " pageable"] += t;
      }
    }
    if (share(hd) >= kMinShare) {
      add("host-device-copies",
          fmt::format("Host-device copies took {} ({} of GPU time).", ns_text(hd), pct(hd)), hd,
          top3(hd_ev),
          "keep tensors on the GPU across steps; load batches with pin_memory=True and "
          "copy with .to(device, non_blocking=True) so that the copy overlaps compute");
    }
    if (share(pageable) >= kMinShare) {
      add("pageable-copies",
          fmt::format("Copies from or to pageable host memory took {} ({} of GPU time); pinned "
                      "copies run at about twice the rate and can overlap compute.",
                      ns_text(pageable), pct(pageable)),
          pageable / 2, top3(pageable_ev),
          "DataLoader(pin_memory=True) (or tensor.pin_memory()) and .to(device, "
          "non_blocking=True)");
    }
  }

  // optimizer-not-foreach: per-parameter optimizer ops instead of _foreach_/fused ones.
  void optimizer() {
    double best_rate = 0;  // bytes per ns: the profile's best achieved bandwidth
    for (const ProfRecord& r : data_.records) {
      if (counted_time(r) > 0)
        best_rate = std::max(best_rate, r.bytes / static_cast<double>(counted_time(r)));
    }
    int64_t per_param = 0, fused = 0;
    double time = 0, stake = 0;
    std::map<std::string, double> ev;
    for (const ProfRecord& r : data_.records) {
      if (cpu_ ? r.kind != Kind::kOp : r.kind != Kind::kKernel) continue;
      if (!names_optimizer_range(data_.strings.get(r.layer))) continue;
      std::string op = op_name(data_, r);
      if (op.find("_foreach_") != std::string::npos || op.find("_fused_") != std::string::npos) {
        ++fused;
        continue;
      }
      if (cpu_ && r.parent >= 0 &&
          names_optimizer_range(data_.strings.get(data_.records[r.parent].layer)))
        continue;  // count the outermost op of each call
      double t = static_cast<double>(cpu_ ? r.duration : r.duration);
      ++per_param;
      time += t;
      stake += std::max(0.0, t - (best_rate > 0 ? r.bytes / best_rate : 0));
      ev[op] += t;
    }
    if (fused == 0 && per_param >= 20 && share(time) >= kMinShare) {
      add("optimizer-not-foreach",
          fmt::format("The optimizer step ran {} per-parameter {} ({}, {} of the time) and no "
                      "_foreach_/fused one.",
                      per_param, cpu_ ? "ops" : "kernels", ns_text(time), pct(time)),
          stake, top3(ev),
          "construct the optimizer with foreach=True, or fused=True (Adam, AdamW, SGD on CUDA)");
    }
  }

  // backward-forward-ratio outside [kBwdFwdLow, kBwdFwdHigh]. Forward and backward are the
  // phase report's (PhaseOf): the optimizer's ops (fprop records inside Optimizer.step) are
  // neither. A backward much faster than the forward is a finding only when forward work has
  // no backward at all (no_grad evaluation in the step, frozen layers): a backward that is
  // merely quick (a first layer computes no input gradient, a CPU's kernels) has nothing to fix.
  void backward_forward() {
    double fwd = 0, bwd = 0;
    std::map<std::string, std::pair<double, double>> per_op;
    PhaseOf phase_of(data_.strings);
    std::vector<Phase> phases(data_.records.size());
    for (size_t i = 0; i < data_.records.size(); ++i) {
      const ProfRecord& r = data_.records[i];
      phases[i] = phase_of(r);
      double t = static_cast<double>(time_of(r, cpu_));
      if (phases[i] == Phase::kForward) {
        fwd += t;
        per_op[op_name(data_, r)].first += t;
      } else if (phases[i] == Phase::kBackward) {
        bwd += t;
        per_op[op_name(data_, r)].second += t;
      }
    }
    if (fwd <= 0 || bwd <= 0 || share(fwd) < kMinShare) return;
    double ratio = bwd / fwd;
    if (ratio >= kBwdFwdLow && ratio <= kBwdFwdHigh) return;
    bool high = ratio > kBwdFwdHigh;
    std::map<std::string, double> ev;
    double stake = 0;
    std::string finding = fmt::format(
        "Backward took {:.2f}x the forward time ({} vs {}); about "
        "2x is usual.",
        ratio, ns_text(bwd), ns_text(fwd));
    if (high) {
      for (const auto& [op, t] : per_op) {
        double excess = t.second - 2 * t.first;
        if (excess > 0) ev[op] = excess;
      }
      stake = bwd - 2 * fwd;
    } else {
      double forward_only = 0;
      const std::vector<char> has_backward = forward_with_backward(phases);
      // GEMM-like work (matmul, conv, attention, rnn) without a backward: a layer evaluated
      // under no_grad or frozen. Copies, casts and pointwise ops around the model (moving a
      // batch to the device) have no backward in any training step.
      for (size_t i = 0; i < data_.records.size(); ++i) {
        if (phases[i] != Phase::kForward || has_backward[i]) continue;
        const ProfRecord& r = data_.records[i];
        if (!r.modeled || !is_gemm_family(data_.strings.get(r.family))) continue;
        double t = static_cast<double>(time_of(r, cpu_));
        forward_only += t;
        ev[op_name(data_, r)] += t;
      }
      if (share(forward_only) < kMinShare) return;
      finding += fmt::format(
          " {} of the forward ({:.0f}%) ran GEMM-like ops whose results no "
          "backward used.",
          ns_text(forward_only), 100 * forward_only / fwd);
      stake = forward_only;
    }
    add("backward-forward-ratio", finding, stake,
        top3(ev, high ? " over 2x fwd" : " without backward"),
        high ? "look for backward-only work: gradient checkpointing recomputation, "
               "non-deterministic algorithms (torch.use_deterministic_algorithms), hooks, or "
               "ops whose backward is slow (index/scatter, embedding with many duplicates)"
             : "the forward does work the backward does not need: no_grad evaluation mixed into "
               "the step, or layers frozen (requires_grad=False) - check this is intended");
  }

  // Per record: a forward record whose op a backward record names as its forward op (a bprop
  // record's op_id is its forward op's, net.dict `fwd_op_id`), or, on a CPU profile, one in a
  // call tree holding such an op (aten::conv2d's backward node names the aten::convolution
  // inside it).
  std::vector<char> forward_with_backward(const std::vector<Phase>& phases) const {
    std::unordered_set<int64_t> forward_ops;
    for (const ProfRecord& r : data_.records) {
      if (r.dir == Dir::kBprop && r.op_id != 0) forward_ops.insert(r.op_id);
    }
    const size_t n = data_.records.size();
    std::vector<char> has(n, 0);
    auto named = [&](size_t i) {
      const ProfRecord& r = data_.records[i];
      return phases[i] == Phase::kForward && r.op_id != 0 && forward_ops.count(r.op_id) > 0;
    };
    if (!cpu_) {
      for (size_t i = 0; i < n; ++i) has[i] = named(i) ? 1 : 0;
      return has;
    }
    auto root_of = [&](size_t i) {
      int32_t root = static_cast<int32_t>(i);
      for (int guard = 0; data_.records[root].parent >= 0 && guard < 1000; ++guard) {
        root = data_.records[root].parent;
      }
      return root;
    };
    std::unordered_set<int32_t> roots_with_backward;
    for (size_t i = 0; i < n; ++i) {
      if (named(i)) roots_with_backward.insert(root_of(i));
    }
    for (size_t i = 0; i < n; ++i) has[i] = roots_with_backward.count(root_of(i)) ? 1 : 0;
    return has;
  }

  // dtype-casts and contiguous-copies.
  void copies_of_tensors() {
    auto is_cast = [&](const ProfRecord& r) {
      std::string op = op_name(data_, r);
      return op == "aten::to" || op == "aten::_to_copy";
    };
    auto is_layout_copy = [&](const ProfRecord& r) {
      std::string op = op_name(data_, r);
      return op == "aten::contiguous" || op == "aten::clone";
    };
    std::map<std::string, std::pair<int64_t, double>> casts;  // shapes+dtype: count, time
    double layout = 0;
    std::map<std::string, double> layout_ev;
    PhaseOf phase_of(data_.strings);
    for (const ProfRecord& r : data_.records) {
      if (cpu_ ? r.kind != Kind::kOp : r.kind == Kind::kOp) continue;
      // The optimizer's own copies and casts (Adam's 0-dim step and learning-rate tensors) are
      // its bookkeeping, and its fix is optimizer-not-foreach's; a 0-dim tensor's cast (a
      // scalar: a loss value, a counter) moves a few bytes and is no model's data.
      if (phase_of(r) == Phase::kOptimizer || data_.strings.get(r.shapes).starts_with("[]")) {
        continue;
      }
      // CPU: the outermost call, with its callees' time (the copy runs in aten::copy_).
      double t = static_cast<double>(r.duration);
      if (is_cast(r) && !(cpu_ && inside_match(data_, r, is_cast))) {
        auto& c =
            casts[fmt::format("{} {}", data_.strings.get(r.shapes), data_.strings.get(r.dtype))];
        ++c.first;
        c.second += t;
      } else if (is_layout_copy(r) && !(cpu_ && inside_match(data_, r, is_layout_copy))) {
        layout += t;
        layout_ev[op_name(data_, r) + " " + std::string(data_.strings.get(r.shapes))] += t;
      }
    }
    double repeated = 0, stake = 0;
    int64_t repeated_count = 0;
    std::map<std::string, double> cast_ev;
    for (const auto& [key, c] : casts) {
      if (c.first < 2) continue;
      repeated += c.second;
      repeated_count += c.first;
      stake += c.second - c.second / static_cast<double>(c.first);
      cast_ev[fmt::format("{} x{}", key, c.first)] = c.second;
    }
    if (share(repeated) >= kMinShare) {
      add("dtype-casts",
          fmt::format("{} dtype casts of the same shapes repeated took {} ({} of the time).",
                      repeated_count, ns_text(repeated), pct(repeated)),
          stake, top3(cast_ev),
          "cast once and keep the tensor in the target dtype (convert the model with .to(dtype), "
          "cast inputs in the DataLoader); under torch.autocast, avoid explicit .float()/.half() "
          "round trips");
    }
    if (share(layout) >= kMinShare) {
      add("contiguous-copies",
          fmt::format(".contiguous()/clone copies took {} ({} of the time).", ns_text(layout),
                      pct(layout)),
          layout, top3(layout_ev),
          "keep tensors in the layout their consumer wants (channels_last end to end, transpose "
          "the weight once), and drop .contiguous() on tensors that already are");
    }
  }

  // dataloader-wait: time inside the DataLoader's __next__ range, within the steps; and the
  // loop's time between the selected steps (Iterations::between), where a
  // `for batch in loader: with pyprof.range("step"):` loop fetches its batches: that is
  // dataloader-wait when a DataLoader range ran there, else time-between-steps.
  void dataloader() {
    double t = 0;
    std::map<std::string, double> ev;
    for (const ProfRecord& r : data_.records) {
      if (!names_dataloader_range(data_.strings.get(r.layer))) continue;
      double rt = static_cast<double>(time_of(r, cpu_));
      t += rt;
      ev[op_name(data_, r)] += rt;
    }
    const Iterations::Between& between = data_.iterations.between;
    const double loop_wall = static_cast<double>(between.wall + between.steps_wall);
    const double gap_share = loop_wall > 0 ? static_cast<double>(between.wall) / loop_wall : 0;
    if (gap_share >= kMinShare) {
      std::map<std::string, double> gap_ev;
      for (const auto& [op, time] : between.time_by_op) {
        gap_ev[std::string(data_.strings.get(op))] += static_cast<double>(time);
      }
      const double wall = static_cast<double>(between.wall);
      const std::string where = fmt::format(
          "The loop spent {} ({:.1f}% of its wall time) between the selected steps, outside "
          "every step range ({} gaps, {} each on average); the ops recorded there took {} on "
          "this process",
          ns_text(wall), 100 * gap_share, between.gaps,
          ns_text(wall / static_cast<double>(std::max<int64_t>(between.gaps, 1))),
          ns_text(static_cast<double>(between.records.time)));
      // The rule's share is of the loop's wall time, the time the gaps are part of.
      if (between.dataloader.records > 0) {
        add_with_percent(
            "dataloader-wait",
            where + fmt::format(", {} of them in the DataLoader's __next__: the rest of the gap "
                                "is waiting for the next batch.",
                                ns_text(static_cast<double>(between.dataloader.time))),
            wall, 100 * gap_share, top3(gap_ev),
            "DataLoader(num_workers=N, pin_memory=True, persistent_workers=True, "
            "prefetch_factor=2) so that batches are ready before the step asks; a dataset that "
            "decodes or augments in __getitem__ needs more workers (or the work moved off the "
            "loop)");
      } else {
        add_with_percent(
            "time-between-steps", where + ".", wall, 100 * gap_share,
            gap_ev.empty() ? "(no op recorded between the steps: Python or waiting)" : top3(gap_ev),
            "see what the loop does between the step ranges (data loading, logging, "
            "evaluation, checkpointing): move it into the step range to have the reports "
            "cover it (or out of the loop), and overlap data loading with DataLoader workers");
      }
    }
    // Within the steps (`next(it)` inside the step range), unless the gaps' rule said it.
    if (gap_share >= kMinShare && between.dataloader.records > 0) return;
    if (share(t) >= kMinShare) {
      add("dataloader-wait",
          fmt::format("Work inside the DataLoader's __next__ took {} ({} of the time), on the "
                      "training process.",
                      ns_text(t), pct(t)),
          t, top3(ev),
          "DataLoader(num_workers=N, pin_memory=True, persistent_workers=True, prefetch_factor=2) "
          "so that batches are ready before the step asks");
    }
  }

  // The device memory the batch leaves unused (DLProf's batch-size detector, from the memory
  // lines and the header's device size): no time at stake, the throughput a larger batch may
  // bring is not measured here.
  void batch_size_headroom() {
    const std::optional<BatchHeadroom> h = batch_headroom(data_);
    if (!h || h->factor < kBatchGrowthMin) return;
    auto bytes = [](int64_t b) { return format_quantity(static_cast<double>(b), Unit::kBytes); };
    const std::string step =
        h->step >= 0 ? fmt::format("step {}", h->step) : "the work outside the steps";
    add_with_percent(
        "batch-size-headroom",
        fmt::format("The batch could grow about {:.1f}x before {}'s memory is full: {} peaked at "
                    "{} allocated of {}.",
                    h->factor, memory_device_name(h->device), step, bytes(h->peak),
                    bytes(h->total_memory)),
        0, 0,
        fmt::format("{}: peak {} ({}), live at the step's start {}, so the step allocated {} "
                    "on top; device memory {}{}; F = (memory - at start) / (peak - at start) "
                    "= {:.2f}. Assumed: what is live as the step starts (weights, gradients, "
                    "optimizer state) does not grow with the batch, what the step allocates on "
                    "top (activations) grows in proportion{}",
                    step,
                    h->allocator_totals ? "the allocator's total allocated"
                                        : "the running total since the capture began",
                    bytes(h->peak), bytes(h->at_start), bytes(h->peak - h->at_start),
                    bytes(h->total_memory),
                    h->reserved_peak >= 0
                        ? fmt::format("; the allocator reserved up to {}", bytes(h->reserved_peak))
                        : "",
                    h->factor,
                    h->allocator_totals ? ""
                                        : "; memory allocated before the capture is not "
                                          "counted, so F is an upper bound"),
        fmt::format("try a batch up to {:.1f}x larger (the caching allocator's fragmentation and "
                    "other processes on the device take some of it: leave a margin), or spend "
                    "the memory on a larger model or sequence length",
                    h->factor));
  }

  const ReadResult& data_;
  bool cpu_;
  double total_ = 0;  // GPU busy time (sum of durations) or CPU self time
  double wall_ = 0;
  std::vector<Advice> out_;
};

}  // namespace

std::vector<Advice> advise(const ReadResult& data) { return Advisor(data).run(); }

ReportTable advice_report(const ReadResult& data) {
  ReportTable t;
  t.title = "advice (rules that fired, by time at stake)";
  column(t, "Rule", Unit::kText, Keep::kAlways);
  column(t, "Finding", Unit::kText, Keep::kAlways);
  column(t, "Time at stake(ns)", Unit::kTime, Keep::kAlways);
  column(t, "% of time", Unit::kPercent, Keep::kMain);
  column(t, "Evidence", Unit::kText, Keep::kMore);
  column(t, "Fix", Unit::kText, Keep::kMain);
  for (const Advice& a : advise(data)) {
    t.rows.push_back({a.rule, a.finding, fmt::format("{:.0f}", a.at_stake_ns),
                      fmt::format("{:.1f}", a.percent), a.evidence, a.fix});
  }
  return t;
}

}  // namespace pyprof::prof
