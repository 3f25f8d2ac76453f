#include "tools/npu-info/self_test.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <iterator>
#include <limits>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "base/status_macros.h"
#include "kernel_iface/uapi/drm/lnpu_accel.h"
#include "tools/common/json.h"

namespace lnpu::info {
namespace {

using Clock = std::chrono::steady_clock;

// No single job of the self-test may take longer on a working device.
constexpr absl::Duration kJobDeadline = absl::Seconds(60);
constexpr uint64_t kDmaBytes = uint64_t{64} << 20;
constexpr uint32_t kGemmRows = 256, kGemmK = 1024, kGemmN = 1024;
constexpr int kTimedRuns = 3;

double Seconds(Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

template <typename Cmd>
Cmd Command(uint16_t opcode) {
  Cmd cmd{};
  cmd.hdr.opcode = opcode;
  cmd.hdr.size = sizeof(Cmd);
  return cmd;
}

// A mapped buffer.
absl::StatusOr<Buffer> MappedBuffer(Device& device, uint64_t size,
                                    uint32_t flags = 0) {
  LNPU_ASSIGN_OR_RETURN(Buffer buffer, device.CreateBuffer(size, flags));
  LNPU_RETURN_IF_ERROR(buffer.Map().status());
  return buffer;
}

// A command buffer holding one stream, and the buffers its job lists.
class Job {
 public:
  static absl::StatusOr<Job> Create(Device& device, uint32_t engine,
                                    std::vector<uint32_t> handles) {
    LNPU_ASSIGN_OR_RETURN(Buffer cmd, MappedBuffer(device, 4096, DRM_LNPU_BO_CMDBUF));
    return Job(device, engine, std::move(cmd), std::move(handles));
  }

  template <typename Cmd>
  void Append(const Cmd& cmd) {
    std::memcpy(cmd_.mapped().data() + size_, &cmd, sizeof(cmd));
    size_ += sizeof(cmd);
  }

  // Submits the stream and waits for it; returns the round-trip time.
  absl::StatusOr<Clock::duration> Run() {
    SubmitArgs args;
    args.engine = engine_;
    args.cmd = &cmd_;
    args.cmd_size = size_;
    args.bo_handles = handles_;
    const Clock::time_point start = Clock::now();
    LNPU_ASSIGN_OR_RETURN(uint64_t fence, device_->Submit(args));
    LNPU_RETURN_IF_ERROR(device_->Wait(fence, absl::Now() + kJobDeadline));
    return Clock::now() - start;
  }

  // The fastest of kTimedRuns runs after one warm-up run.
  absl::StatusOr<double> BestSeconds() {
    double best = std::numeric_limits<double>::infinity();
    for (int i = 0; i <= kTimedRuns; ++i) {
      LNPU_ASSIGN_OR_RETURN(Clock::duration t, Run());
      if (i > 0) best = std::min(best, Seconds(t));
    }
    return best;
  }

 private:
  Job(Device& device, uint32_t engine, Buffer cmd,
      std::vector<uint32_t> handles)
      : device_(&device),
        engine_(engine),
        cmd_(std::move(cmd)),
        handles_(std::move(handles)) {}

  Device* device_;
  uint32_t engine_;
  Buffer cmd_;
  std::vector<uint32_t> handles_;
  uint32_t size_ = 0;
};

CheckResult NewCheck(const char* name, const char* unit, double threshold,
                     bool higher_is_better) {
  CheckResult check;
  check.name = name;
  check.unit = unit;
  check.threshold = threshold;
  check.higher_is_better = higher_is_better;
  return check;
}

CheckResult Failed(CheckResult check, const absl::Status& status) {
  check.value = std::numeric_limits<double>::quiet_NaN();
  check.pass = false;
  check.detail = absl::StrCat("could not run: ", status.message());
  return check;
}

void Judge(CheckResult& check) {
  check.pass = check.higher_is_better ? check.value >= check.threshold
                                      : check.value <= check.threshold;
}

std::vector<CheckResult> NopLatency(Device& device) {
  CheckResult avg = NewCheck("nop-latency-avg", "us", kMaxNopAverageUs, false);
  CheckResult p99 = NewCheck("nop-latency-p99", "us", kMaxNopP99Us, false);
  absl::StatusOr<Job> job = Job::Create(device, DRM_LNPU_ENGINE_COMPUTE, {});
  if (!job.ok()) return {Failed(avg, job.status()), Failed(p99, job.status())};
  job->Append(Command<lnpu_cmd_nop>(LNPU_OP_NOP));
  std::vector<double> us;
  us.reserve(kNopRoundTrips);
  for (int i = 0; i < kNopRoundTrips; ++i) {
    absl::StatusOr<Clock::duration> t = job->Run();
    if (!t.ok()) return {Failed(avg, t.status()), Failed(p99, t.status())};
    us.push_back(Seconds(*t) * 1e6);
  }
  double sum = 0;
  for (double v : us) sum += v;
  std::sort(us.begin(), us.end());
  avg.value = sum / static_cast<double>(us.size());
  p99.value = us[(us.size() * 99 + 99) / 100 - 1];
  const std::string detail = absl::StrFormat(
      "%d NOP jobs on the compute engine, each submitted and waited for",
      kNopRoundTrips);
  avg.detail = p99.detail = detail;
  Judge(avg);
  Judge(p99);
  return {avg, p99};
}

CheckResult DmaBandwidth(Device& device) {
  CheckResult check = NewCheck("dma-bandwidth", "GB/s", kMinDmaGBps, true);
  // Two buffers and a command buffer must fit into the free memory.
  uint64_t bytes = kDmaBytes;
  if (absl::StatusOr<uint64_t> free = device.GetParam(DRM_LNPU_PARAM_MEMORY_FREE);
      free.ok()) {
    bytes = std::min(bytes, (*free / 2 - 65536) / 4096 * 4096);
  }
  absl::StatusOr<Buffer> src = MappedBuffer(device, bytes);
  if (!src.ok()) return Failed(check, src.status());
  absl::StatusOr<Buffer> dst = MappedBuffer(device, bytes);
  if (!dst.ok()) return Failed(check, dst.status());
  for (uint64_t i = 0; i < bytes; ++i) {
    src->mapped()[i] = static_cast<uint8_t>(i * 131 + 7);
  }
  absl::StatusOr<Job> job =
      Job::Create(device, DRM_LNPU_ENGINE_DMA, {src->handle(), dst->handle()});
  if (!job.ok()) return Failed(check, job.status());
  auto copy = Command<lnpu_cmd_copy>(LNPU_OP_COPY);
  copy.src = src->device_addr();
  copy.dst = dst->device_addr();
  copy.bytes = bytes;
  job->Append(copy);
  absl::StatusOr<double> seconds = job->BestSeconds();
  if (!seconds.ok()) return Failed(check, seconds.status());
  check.value = static_cast<double>(bytes) / *seconds / 1e9;
  check.detail = absl::StrFormat("COPY of %d MiB on the DMA engine, best of %d",
                                 bytes >> 20, kTimedRuns);
  Judge(check);
  if (std::memcmp(src->mapped().data(), dst->mapped().data(), bytes) != 0) {
    check.pass = false;
    check.detail += "; the copy differs from its source";
  }
  return check;
}

CheckResult MatmulThroughput(Device& device) {
  CheckResult check =
      NewCheck("matmul", "GFLOP/s", kMinMatmulGflops, true);
  const uint64_t src_bytes = uint64_t{kGemmRows} * kGemmK * 4;
  const uint64_t weight_bytes = uint64_t{kGemmN} * kGemmK * 4;
  const uint64_t dst_bytes = uint64_t{kGemmRows} * kGemmN * 4;
  absl::StatusOr<Buffer> data =
      MappedBuffer(device, src_bytes + weight_bytes + dst_bytes);
  if (!data.ok()) return Failed(check, data.status());
  float* values = reinterpret_cast<float*>(data->mapped().data());
  for (uint64_t i = 0; i < (src_bytes + weight_bytes) / 4; ++i) {
    values[i] = static_cast<float>(static_cast<int>(i % 7) - 3) * 0.125f;
  }
  absl::StatusOr<Job> job =
      Job::Create(device, DRM_LNPU_ENGINE_COMPUTE, {data->handle()});
  if (!job.ok()) return Failed(check, job.status());
  auto matmul = Command<lnpu_cmd_matmul>(LNPU_OP_MATMUL);
  matmul.src = data->device_addr();
  matmul.weight = data->device_addr() + src_bytes;
  matmul.dst = data->device_addr() + src_bytes + weight_bytes;
  matmul.rows = kGemmRows;
  matmul.k = kGemmK;
  matmul.n = kGemmN;
  matmul.weight_dtype = LNPU_DTYPE_F32;
  job->Append(matmul);
  absl::StatusOr<double> seconds = job->BestSeconds();
  if (!seconds.ok()) return Failed(check, seconds.status());
  const double flops = 2.0 * kGemmRows * kGemmK * kGemmN;
  check.value = flops / *seconds / 1e9;
  check.detail = absl::StrFormat(
      "F32 MATMUL %dx%d by %dx%d on the compute engine, best of %d",
      kGemmRows, kGemmK, kGemmK, kGemmN, kTimedRuns);
  Judge(check);
  return check;
}

CheckResult KnownAnswer(Device& device) {
  CheckResult check = NewCheck("known-answer", "max rel. error",
                               kKnownAnswerTolerance, false);
  constexpr uint32_t kRows = 4, kK = 16, kN = 32;
  constexpr float kEps = 1e-5f;
  // Float offsets of each operand in one data buffer.
  constexpr uint32_t kSrc = 0, kWeight = kSrc + kRows * kK,
                     kHidden = kWeight + kN * kK, kNormWeight = kHidden + kRows * kN,
                     kNormed = kNormWeight + kN, kOut = kNormed + kRows * kN,
                     kFloats = kOut + kRows * kN;
  absl::StatusOr<Buffer> data = MappedBuffer(device, kFloats * 4);
  if (!data.ok()) return Failed(check, data.status());
  float* f = reinterpret_cast<float*>(data->mapped().data());
  for (uint32_t r = 0; r < kRows; ++r) {
    for (uint32_t k = 0; k < kK; ++k) {
      f[kSrc + r * kK + k] = static_cast<float>(static_cast<int>((r + k) % 5) - 2);
    }
  }
  for (uint32_t n = 0; n < kN; ++n) {
    for (uint32_t k = 0; k < kK; ++k) {
      f[kWeight + n * kK + k] =
          static_cast<float>(static_cast<int>((n * 3 + k) % 7) - 3);
    }
    f[kNormWeight + n] = 0.5f + static_cast<float>(n % 4) * 0.25f;
  }
  const uint64_t base = data->device_addr();
  absl::StatusOr<Job> job =
      Job::Create(device, DRM_LNPU_ENGINE_COMPUTE, {data->handle()});
  if (!job.ok()) return Failed(check, job.status());
  auto matmul = Command<lnpu_cmd_matmul>(LNPU_OP_MATMUL);
  matmul.src = base + kSrc * 4;
  matmul.weight = base + kWeight * 4;
  matmul.dst = base + kHidden * 4;
  matmul.rows = kRows;
  matmul.k = kK;
  matmul.n = kN;
  matmul.weight_dtype = LNPU_DTYPE_F32;
  auto norm = Command<lnpu_cmd_rms_norm>(LNPU_OP_RMS_NORM);
  norm.src = base + kHidden * 4;
  norm.weight = base + kNormWeight * 4;
  norm.dst = base + kNormed * 4;
  norm.rows = kRows;
  norm.dim = kN;
  norm.eps = kEps;
  auto swiglu = Command<lnpu_cmd_swiglu>(LNPU_OP_SWIGLU);
  swiglu.gate = base + kNormed * 4;
  swiglu.up = base + kHidden * 4;
  swiglu.dst = base + kOut * 4;
  swiglu.count = kRows * kN;
  job->Append(matmul);
  job->Append(norm);
  job->Append(swiglu);
  if (absl::StatusOr<Clock::duration> t = job->Run(); !t.ok()) {
    return Failed(check, t.status());
  }
  // The host's answer, in double precision.
  int matmul_mismatches = 0;
  double max_error = 0;
  auto relative_error = [](double got, double want) {
    return std::abs(got - want) / std::max(1.0, std::abs(want));
  };
  for (uint32_t r = 0; r < kRows; ++r) {
    double hidden[kN];
    double sum_squares = 0;
    for (uint32_t n = 0; n < kN; ++n) {
      double dot = 0;
      for (uint32_t k = 0; k < kK; ++k) {
        dot += double{f[kSrc + r * kK + k]} * f[kWeight + n * kK + k];
      }
      hidden[n] = dot;
      sum_squares += dot * dot;
      if (f[kHidden + r * kN + n] != static_cast<float>(dot)) {
        ++matmul_mismatches;
      }
    }
    const double scale = 1.0 / std::sqrt(sum_squares / kN + double{kEps});
    for (uint32_t n = 0; n < kN; ++n) {
      const double normed = hidden[n] * scale * f[kNormWeight + n];
      const double out = normed / (1.0 + std::exp(-normed)) * hidden[n];
      max_error = std::max(
          {max_error, relative_error(f[kNormed + r * kN + n], normed),
           relative_error(f[kOut + r * kN + n], out)});
    }
  }
  check.value = max_error;
  check.detail = absl::StrFormat(
      "MATMUL %dx%d by %dx%d (exact: %d of %d values differ), RMS_NORM, "
      "SWIGLU in one job against a double-precision host computation",
      kRows, kK, kK, kN, matmul_mismatches, kRows * kN);
  Judge(check);
  if (matmul_mismatches != 0) check.pass = false;
  return check;
}

}  // namespace

bool SelfTestReport::pass() const {
  for (const CheckResult& check : checks) {
    if (!check.pass) return false;
  }
  return !checks.empty();
}

absl::StatusOr<std::vector<SelfTestCheck>> ParseSelfTestChecks(
    absl::string_view list) {
  static constexpr std::pair<absl::string_view, SelfTestCheck> kNames[] = {
      {"nop-latency", SelfTestCheck::kNopLatency},
      {"dma-bandwidth", SelfTestCheck::kDmaBandwidth},
      {"matmul", SelfTestCheck::kMatmul},
      {"known-answer", SelfTestCheck::kKnownAnswer}};
  constexpr char kValid[] =
      "the checks are nop-latency, dma-bandwidth, matmul and known-answer";
  bool wanted[std::size(kNames)] = {};
  for (absl::string_view name : absl::StrSplit(list, ',')) {
    const auto* found =
        std::find_if(std::begin(kNames), std::end(kNames),
                     [&](const auto& entry) { return entry.first == name; });
    if (found == std::end(kNames)) {
      return absl::InvalidArgumentError(
          name.empty() ? absl::StrCat("empty check name in '", list, "': ",
                                      kValid)
                       : absl::StrCat("unknown check '", name, "': ", kValid));
    }
    wanted[found - std::begin(kNames)] = true;
  }
  std::vector<SelfTestCheck> checks;
  for (size_t i = 0; i < std::size(kNames); ++i) {
    if (wanted[i]) checks.push_back(kNames[i].second);
  }
  return checks;
}

SelfTestReport RunSelfTest(Device& device,
                           absl::Span<const SelfTestCheck> checks) {
  SelfTestReport report;
  report.device = device.Describe();
  for (const SelfTestCheck check : checks) {
    switch (check) {
      case SelfTestCheck::kNopLatency:
        for (CheckResult& result : NopLatency(device)) {
          report.checks.push_back(std::move(result));
        }
        break;
      case SelfTestCheck::kDmaBandwidth:
        report.checks.push_back(DmaBandwidth(device));
        break;
      case SelfTestCheck::kMatmul:
        report.checks.push_back(MatmulThroughput(device));
        break;
      case SelfTestCheck::kKnownAnswer:
        report.checks.push_back(KnownAnswer(device));
        break;
    }
  }
  return report;
}

std::string FormatText(const SelfTestReport& report) {
  std::string out = absl::StrFormat("validating: %s\n", report.device);
  for (const CheckResult& c : report.checks) {
    absl::StrAppendFormat(&out, "  %-16s %12.4g %-15s %s %-8g %s\n", c.name,
                          c.value, c.unit, c.higher_is_better ? ">=" : "<=",
                          c.threshold, c.pass ? "PASS" : "FAIL");
    absl::StrAppendFormat(&out, "  %-16s %s\n", "", c.detail);
  }
  absl::StrAppendFormat(&out, "verdict: %s\n", report.pass() ? "PASS" : "FAIL");
  return out;
}

std::string FormatJson(const SelfTestReport& report) {
  tools::JsonWriter json;
  json.BeginObject().Key("device").String(report.device);
  json.Key("checks").BeginArray();
  for (const CheckResult& c : report.checks) {
    json.BeginObject()
        .Key("name").String(c.name)
        .Key("value").Double(c.value)
        .Key("unit").String(c.unit)
        .Key("threshold").Double(c.threshold)
        .Key("comparison").String(c.higher_is_better ? ">=" : "<=")
        .Key("pass").Bool(c.pass)
        .Key("detail").String(c.detail)
        .EndObject();
  }
  json.EndArray().Key("pass").Bool(report.pass()).EndObject();
  return json.text();
}

}  // namespace lnpu::info
