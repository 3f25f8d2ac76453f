#include "tests/reference/reference_llama.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <numbers>
#include <optional>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "compiler_artifacts/gguf/gguf_file.h"

namespace lnpu::reference {
// Not in the anonymous namespace: ReferenceLlama::Weights, declared in the
// header, holds Matrix fields.
namespace internal {

// A dense matrix stored row-major as `rows` rows of `cols` floats; y = W x maps
// `cols` inputs to `rows` outputs. This is exactly the GGUF layout of a weight
// with dims [cols, rows].
struct Matrix {
  int rows = 0;
  int cols = 0;
  std::vector<float> data;
  bool int8_inputs = false;  // inputs rounded to int8 blocks first

  const float* Row(int r) const {
    return data.data() + static_cast<size_t>(r) * cols;
  }
};

}  // namespace internal

namespace {

using internal::Matrix;

// `x` rounded to the nearest binary16 value (ties to even), independent of
// the product's conversion: through the compiler's binary16 type (g++ 12
// has _Float16 in C++ on x86-64, aarch64 has __fp16), or where there is
// none (clang 14 on x86-64, the sanitizer build) by arithmetic: a multiple
// of the binary16 spacing at x's magnitude, rounded by nearbyint.
float RoundToHalf(float x) {
#if defined(__aarch64__)
  return static_cast<float>(static_cast<__fp16>(x));
#elif defined(__FLT16_MAX__)
  return static_cast<float>(static_cast<_Float16>(x));
#else
  if (!std::isfinite(x) || x == 0) return x;
  int exponent = 0;
  std::frexp(x, &exponent);  // |x| = m * 2^exponent, m in [0.5, 1)
  // Normal binary16 values carry 11 significant bits; subnormals are
  // multiples of 2^-24.
  const double spacing = std::ldexp(1.0, std::max(exponent - 11, -24));
  const double rounded = std::nearbyint(x / spacing) * spacing;
  if (std::fabs(rounded) > 65504.0) return std::copysign(INFINITY, x);
  return static_cast<float>(rounded);
#endif
}

// Upper bound on every model dimension, so that products of two dimensions
// and position * dimension offsets stay far from overflow.
constexpr uint64_t kMaxDimension = uint64_t{1} << 24;

// Rows [first, first + count) of `m`.
Matrix RowsOf(const Matrix& m, int first, int count) {
  Matrix out;
  out.rows = count;
  out.cols = m.cols;
  out.int8_inputs = m.int8_inputs;
  out.data.assign(m.data.begin() + static_cast<size_t>(first) * m.cols,
                  m.data.begin() + static_cast<size_t>(first + count) * m.cols);
  return out;
}

[[noreturn]] void Die(const std::string& message) {
  std::fprintf(stderr, "ReferenceLlama: %s\n", message.c_str());
  std::abort();
}

double Dot(const float* a, const float* b, int n) {
  double acc = 0.0;
  for (int i = 0; i < n; ++i) acc += static_cast<double>(a[i]) * b[i];
  return acc;
}

// y[r] = sum_c W[r][c] * x[c]; x has w.cols entries, the result w.rows.
std::vector<float> MatVec(const Matrix& w, const std::vector<float>& x) {
  std::vector<float> input = x;
  if (w.int8_inputs) {
    for (size_t start = 0; start < input.size(); start += 32) {
      const size_t end = std::min(input.size(), start + 32);
      float amax = 0.0f;
      for (size_t i = start; i < end; ++i) amax = std::max(amax, std::fabs(input[i]));
      const float d = amax / 127.0f;
      const float id = d != 0.0f ? 1.0f / d : 0.0f;
      for (size_t i = start; i < end; ++i) {
        input[i] = d * std::nearbyint(input[i] * id);
      }
    }
  }
  std::vector<float> y(w.rows);
  for (int r = 0; r < w.rows; ++r) {
    y[r] = static_cast<float>(Dot(w.Row(r), input.data(), w.cols));
  }
  return y;
}

// Each head of head_dim values of a K or V row as an int8 KV cache holds
// it: d = max|x| / 127, x' = d * round-half-even(x / d) (0 when d = 0).
void QuantizeDequantizeInt8PerHead(std::vector<float>& row, int head_dim) {
  for (size_t start = 0; start < row.size(); start += head_dim) {
    const size_t end = start + static_cast<size_t>(head_dim);
    float amax = 0.0f;
    for (size_t i = start; i < end; ++i) amax = std::max(amax, std::fabs(row[i]));
    const float d = amax / 127.0f;
    for (size_t i = start; i < end; ++i) {
      row[i] = d != 0.0f ? d * std::nearbyint(row[i] / d) : 0.0f;
    }
  }
}

std::vector<float> RmsNorm(const std::vector<float>& x,
                           const std::vector<float>& weight, float eps) {
  double sum_sq = 0.0;
  for (float v : x) sum_sq += static_cast<double>(v) * v;
  const double scale =
      1.0 / std::sqrt(sum_sq / static_cast<double>(x.size()) + eps);
  std::vector<float> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    y[i] = static_cast<float>(x[i] * scale * weight[i]);
  }
  return y;
}

// RMSNorm of each head_dim-long head of `x` in place, all with `weight`.
void NormalizeEachHead(std::vector<float>& x, const std::vector<float>& weight, int head_dim,
                       float eps) {
  for (size_t start = 0; start < x.size(); start += head_dim) {
    const std::vector<float> head(x.begin() + start, x.begin() + start + head_dim);
    const std::vector<float> normed = RmsNorm(head, weight, eps);
    std::copy(normed.begin(), normed.end(), x.begin() + start);
  }
}

// Rotates pair i < rope_dim / 2 of every head in place by
// pos * theta^(-2i / rope_dim) / factors[i] (factor 1 without factors). The
// pair is (2i, 2i+1), or (i, i + rope_dim / 2) with `neox`.
void ApplyRope(std::vector<float>& x, const ReferenceLlamaConfig& c,
               int n_heads, int pos, float theta) {
  const int rope_dim = c.rope_dim;
  for (int h = 0; h < n_heads; ++h) {
    float* head = x.data() + static_cast<size_t>(h) * c.head_dim;
    for (int i = 0; i < rope_dim / 2; ++i) {
      double freq =
          std::pow(static_cast<double>(theta), -2.0 * i / rope_dim);
      if (!c.rope_freq_factors.empty()) freq /= c.rope_freq_factors[i];
      const double angle = pos * freq;
      const double cos = std::cos(angle);
      const double sin = std::sin(angle);
      const int a = c.rope_neox ? i : 2 * i;
      const int b = c.rope_neox ? i + rope_dim / 2 : 2 * i + 1;
      const double x0 = head[a];
      const double x1 = head[b];
      // attn_factor (LongRoPE) scales the rotated dimensions only.
      head[a] = static_cast<float>((x0 * cos - x1 * sin) * c.rope_attn_factor);
      head[b] = static_cast<float>((x0 * sin + x1 * cos) * c.rope_attn_factor);
    }
  }
}

// Llama 3 frequency factors from the model card's formula: wavelengths
// 2 pi / freq_i shorter than original_context / high_freq_factor keep their
// frequency, longer than original_context / low_freq_factor divide it by
// `factor`, and between the two the divisor is interpolated.
std::vector<float> Llama3Factors(double theta, int rope_dim, double factor,
                                 double low, double high, double original) {
  std::vector<float> factors(rope_dim / 2);
  for (int i = 0; i < rope_dim / 2; ++i) {
    const double wavelength = 2 * std::numbers::pi *
                              std::pow(theta, 2.0 * i / rope_dim);
    double divisor;
    if (wavelength < original / high) {
      divisor = 1.0;
    } else if (wavelength > original / low) {
      divisor = factor;
    } else {
      const double smooth = (original / wavelength - low) / (high - low);
      divisor = 1.0 / ((1 - smooth) / factor + smooth);
    }
    factors[i] = static_cast<float>(divisor);
  }
  return factors;
}

// Reads GGUF weights, checking every shape against the metadata.
class WeightReader {
 public:
  WeightReader(const gguf::GgufFile& file, const ReferenceOptions& options)
      : file_(file), options_(options) {}

  bool Has(const std::string& name) const {
    return file_.FindTensor(name) != nullptr;
  }

  // Loads `name`, which must have GGUF dims `expected_dims` (innermost first).
  absl::StatusOr<std::vector<float>> Load(
      const std::string& name, const std::vector<int64_t>& expected_dims) const {
    const gguf::TensorInfo* info = file_.FindTensor(name);
    if (info == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          "GGUF file has no tensor '", name,
          "'; the reference needs a complete llama model"));
    }
    std::vector<int64_t> dims;
    for (const auto d : info->dims) dims.push_back(static_cast<int64_t>(d));
    if (dims != expected_dims) {
      return absl::InvalidArgumentError(absl::StrCat(
          "tensor '", name, "' has dims [", absl::StrJoin(dims, ", "),
          "] but the model metadata implies [",
          absl::StrJoin(expected_dims, ", "), "]"));
    }
    if (options_.weight_values) return options_.weight_values(name);
    return file_.TensorToF32(*info);
  }

  absl::StatusOr<std::vector<float>> LoadVector(const std::string& name,
                                                int n) const {
    return Load(name, {n});
  }

  // A weight with `n_out` outputs and `n_in` inputs: GGUF dims [n_in, n_out].
  absl::StatusOr<Matrix> LoadMatrix(const std::string& name, int n_out,
                                    int n_in) const {
    absl::StatusOr<std::vector<float>> data = Load(name, {n_in, n_out});
    if (!data.ok()) return data.status();
    return Matrix{n_out, n_in, *std::move(data)};
  }

 private:
  const gguf::GgufFile& file_;
  const ReferenceOptions& options_;
};

// Reads the unsigned metadata value `key` as an int in [1, kMaxDimension];
// absent keys yield `fallback` when one is given.
absl::StatusOr<int> GetPositiveInt(const gguf::GgufFile& file,
                                   const std::string& key,
                                   std::optional<int> fallback = std::nullopt) {
  if (fallback.has_value() && !file.HasKey(key)) return *fallback;
  const absl::StatusOr<uint64_t> value = file.GetUint(key);
  if (!value.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "llama metadata key '", key, "' is missing or not an unsigned integer (",
        value.status().message(), ")"));
  }
  if (*value == 0 || *value > kMaxDimension) {
    return absl::InvalidArgumentError(absl::StrCat(
        "llama metadata key '", key, "' = ", *value,
        " is out of range; it must be in [1, ", kMaxDimension, "]"));
  }
  return static_cast<int>(*value);
}

absl::StatusOr<ReferenceLlamaConfig> ReadConfig(const gguf::GgufFile& file) {
  const absl::StatusOr<std::string> arch = file.GetString("general.architecture");
  if (!arch.ok() ||
      (*arch != "llama" && *arch != "qwen2" && *arch != "qwen3" && *arch != "phi3" &&
       *arch != "smollm3" && *arch != "gemma2" && *arch != "gemma3")) {
    return absl::InvalidArgumentError(absl::StrCat(
        "general.architecture is '", arch.ok() ? *arch : "(missing)",
        "'; the reference implements the 'llama', 'qwen2', 'qwen3', 'phi3', 'smollm3', "
        "'gemma2' and 'gemma3' architectures"));
  }
  const std::string p = *arch + ".";
  ReferenceLlamaConfig c;
  c.architecture = *arch;
  c.rope_neox = *arch != "llama" && *arch != "smollm3";
  // SmolLM3: every fourth layer (3, 7, 11, ...) has no positional encoding.
  c.nope_every = *arch == "smollm3" ? 4 : 0;
  c.fused_projections = *arch == "phi3";
  c.qk_norm = *arch == "qwen3" || *arch == "gemma3";
  c.gemma = *arch == "gemma2" || *arch == "gemma3";
  absl::Status status;
  // Assigns the value of `key` to `field`, remembering the first failure.
  const auto read = [&](int& field, const std::string& key,
                        std::optional<int> fallback = std::nullopt) {
    if (!status.ok()) return;
    const absl::StatusOr<int> value = GetPositiveInt(file, key, fallback);
    if (value.ok()) field = *value; else status = value.status();
  };
  read(c.dim, p + "embedding_length");
  read(c.n_layers, p + "block_count");
  read(c.n_heads, p + "attention.head_count");
  read(c.n_kv_heads, p + "attention.head_count_kv", c.n_heads);
  read(c.ffn_dim, p + "feed_forward_length");
  if (!status.ok()) return status;
  if (file.HasKey(p + "attention.key_length")) {
    read(c.head_dim, p + "attention.key_length");
    if (!status.ok()) return status;
  } else if (c.dim % c.n_heads != 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "embedding_length %d is not a multiple of head_count %d", c.dim,
        c.n_heads));
  } else {
    c.head_dim = c.dim / c.n_heads;
  }
  read(c.rope_dim, p + "rope.dimension_count", c.head_dim);
  if (!status.ok()) return status;
  if (c.n_heads % c.n_kv_heads != 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "head_count %d is not a multiple of head_count_kv %d; grouped-query "
        "attention needs whole groups",
        c.n_heads, c.n_kv_heads));
  }
  if (c.rope_dim > c.head_dim || c.rope_dim % 2 != 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "rope.dimension_count %d must be even and at most the head size %d",
        c.rope_dim, c.head_dim));
  }
  if (file.HasKey(p + "rope.freq_base")) {
    const absl::StatusOr<float> theta = file.GetFloat(p + "rope.freq_base");
    if (!theta.ok()) return theta.status();
    if (!(*theta > 0.0f) || !std::isfinite(*theta)) {
      return absl::InvalidArgumentError(absl::StrCat(
          p, "rope.freq_base = ", *theta, " must be a finite positive number"));
    }
    c.rope_theta = *theta;
  }
  if (file.HasKey(p + "rope.scaling.attn_factor")) {
    const absl::StatusOr<float> factor = file.GetFloat(p + "rope.scaling.attn_factor");
    if (!factor.ok()) return factor.status();
    c.rope_attn_factor = *factor;
  }
  c.rope_original_context = 0;
  if (file.HasKey(p + "rope.scaling.original_context_length")) {
    const absl::StatusOr<uint64_t> original = file.GetUint(p + "rope.scaling.original_context_length");
    if (!original.ok()) return original.status();
    c.rope_original_context = static_cast<int>(*original);
  }
  const absl::StatusOr<std::string> scaling = file.GetString(p + "rope.scaling.type");
  if (scaling.ok() && *scaling == "llama3") {
    const auto number = [&](const std::string& key, double fallback) {
      const absl::StatusOr<float> f = file.GetFloat(key);
      if (f.ok()) return static_cast<double>(*f);
      const absl::StatusOr<uint64_t> u = file.GetUint(key);
      return u.ok() ? static_cast<double>(*u) : fallback;
    };
    c.rope_freq_factors = Llama3Factors(
        c.rope_theta, c.rope_dim, number(p + "rope.scaling.factor", 8),
        number(p + "rope.scaling.low_freq_factor", 1),
        number(p + "rope.scaling.high_freq_factor", 4),
        number(p + "rope.scaling.original_context_length", 8192));
  } else if (scaling.ok() && *scaling != "none") {
    return absl::InvalidArgumentError(absl::StrCat(
        p, "rope.scaling.type '", *scaling,
        "' is not implemented by the reference (none, llama3)"));
  }
  const absl::StatusOr<float> eps = file.GetFloat(p + "attention.layer_norm_rms_epsilon");
  if (!eps.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        p, "attention.layer_norm_rms_epsilon is missing or not a float (",
        eps.status().message(), ")"));
  }
  if (!(*eps >= 0.0f) || !std::isfinite(*eps)) {
    return absl::InvalidArgumentError(absl::StrCat(
        p, "attention.layer_norm_rms_epsilon = ", *eps,
        " must be a finite non-negative number"));
  }
  c.norm_eps = *eps;

  const gguf::TensorInfo* embd = file.FindTensor("token_embd.weight");
  if (embd == nullptr || embd->dims.size() != 2) {
    return absl::InvalidArgumentError(
        "GGUF file has no 2-D tensor 'token_embd.weight'");
  }
  const uint64_t vocab = embd->dims[1];
  if (vocab == 0 || vocab > kMaxDimension) {
    return absl::InvalidArgumentError(
        absl::StrCat("token_embd.weight has an invalid vocabulary size ", vocab));
  }
  c.vocab_size = static_cast<int>(vocab);
  c.tied_embeddings = file.FindTensor("output.weight") == nullptr;
  if (c.gemma) {
    const bool gemma2 = *arch == "gemma2";
    const auto float_key = [&](const std::string& key, double fallback) {
      const absl::StatusOr<float> f = file.GetFloat(key);
      return f.ok() ? static_cast<double>(*f) : fallback;
    };
    // query_pre_attn_scalar: the head size, except for the 27B models
    // (46 gemma2 / 62 gemma3 layers), whose queries scale by dim / heads.
    const bool is_27b = c.n_layers == (gemma2 ? 46 : 62);
    c.query_scale = 1.0 / std::sqrt(static_cast<double>(is_27b ? c.dim / c.n_heads : c.head_dim));
    c.attn_softcap = gemma2 ? float_key(p + "attn_logit_softcapping", 50.0) : 0.0;
    c.final_softcap = float_key(p + "final_logit_softcapping", gemma2 ? 30.0 : 0.0);
    const absl::StatusOr<uint64_t> window = file.GetUint(p + "attention.sliding_window");
    c.sliding_window = window.ok() ? static_cast<int>(*window) : 0;
    c.local_layer_period = gemma2 ? 2 : 6;
    c.rope_theta_local = gemma2 ? c.rope_theta : 10000.0f;
  }
  return c;
}

}  // namespace

struct ReferenceLlama::Weights {
  struct Layer {
    std::vector<float> attn_norm;
    Matrix wq, wk, wv, wo;
    std::vector<float> bq, bk, bv;  // empty without QKV biases
    std::vector<float> q_norm, k_norm;  // qwen3, gemma3: head_dim each
    std::vector<float> post_attention_norm, post_ffw_norm;  // gemma: dim each
    std::vector<float> ffn_norm;
    Matrix w_gate, w_up, w_down;
  };
  Matrix token_embd;  // vocab_size rows of dim
  std::vector<Layer> layers;
  std::vector<float> output_norm;
  Matrix output;  // vocab_size rows of dim; empty when tied to token_embd
};

ReferenceLlama::ReferenceLlama(ReferenceLlamaConfig config,
                               std::unique_ptr<Weights> weights,
                               bool round_kv_to_f16, bool quantize_kv_to_i8)
    : config_(std::move(config)),
      round_kv_to_f16_(round_kv_to_f16),
      quantize_kv_to_i8_(quantize_kv_to_i8),
      weights_(std::move(weights)),
      k_cache_(config_.n_layers),
      v_cache_(config_.n_layers) {}

ReferenceLlama::~ReferenceLlama() = default;

absl::StatusOr<std::unique_ptr<ReferenceLlama>> ReferenceLlama::Load(
    const std::string& gguf_path, ReferenceOptions options) {
  absl::StatusOr<std::unique_ptr<gguf::GgufFile>> file =
      gguf::GgufFile::Open(gguf_path);
  if (!file.ok()) return file.status();
  absl::StatusOr<ReferenceLlamaConfig> config = ReadConfig(**file);
  if (!config.ok()) {
    return absl::Status(config.status().code(),
                        absl::StrCat(gguf_path, ": ", config.status().message()));
  }
  ReferenceLlamaConfig& c = *config;
  const WeightReader reader(**file, options);
  const int q_dim = c.n_heads * c.head_dim;
  const int kv_dim = c.n_kv_heads * c.head_dim;

  auto weights = std::make_unique<Weights>();
  absl::Status status;
  // Loads into `out`, remembering the first failure.
  const auto load_matrix = [&](Matrix& out, const std::string& name, int n_out,
                               int n_in) {
    if (!status.ok()) return;
    absl::StatusOr<Matrix> m = reader.LoadMatrix(name, n_out, n_in);
    if (!m.ok()) {
      status = m.status();
      return;
    }
    out = *std::move(m);
    out.int8_inputs = options.int8_matmul_inputs && options.int8_matmul_inputs(name);
  };
  const auto load_vector = [&](std::vector<float>& out, const std::string& name,
                               int n) {
    if (!status.ok()) return;
    absl::StatusOr<std::vector<float>> v = reader.LoadVector(name, n);
    if (v.ok()) out = *std::move(v); else status = v.status();
  };

  load_matrix(weights->token_embd, "token_embd.weight", c.vocab_size, c.dim);
  weights->layers.resize(c.n_layers);
  for (int l = 0; l < c.n_layers; ++l) {
    Weights::Layer& layer = weights->layers[l];
    const std::string p = absl::StrCat("blk.", l, ".");
    load_vector(layer.attn_norm, p + "attn_norm.weight", c.dim);
    if (c.fused_projections) {
      // phi3: attn_qkv holds the Q, K and V rows in that order.
      Matrix qkv;
      load_matrix(qkv, p + "attn_qkv.weight", q_dim + 2 * kv_dim, c.dim);
      if (status.ok()) {
        layer.wq = RowsOf(qkv, 0, q_dim);
        layer.wk = RowsOf(qkv, q_dim, kv_dim);
        layer.wv = RowsOf(qkv, q_dim + kv_dim, kv_dim);
      }
    } else {
      load_matrix(layer.wq, p + "attn_q.weight", q_dim, c.dim);
      load_matrix(layer.wk, p + "attn_k.weight", kv_dim, c.dim);
      load_matrix(layer.wv, p + "attn_v.weight", kv_dim, c.dim);
    }
    if (c.architecture == "qwen2" || reader.Has(p + "attn_q.bias")) {
      load_vector(layer.bq, p + "attn_q.bias", q_dim);
      load_vector(layer.bk, p + "attn_k.bias", kv_dim);
      load_vector(layer.bv, p + "attn_v.bias", kv_dim);
    }
    if (c.qk_norm) {
      load_vector(layer.q_norm, p + "attn_q_norm.weight", c.head_dim);
      load_vector(layer.k_norm, p + "attn_k_norm.weight", c.head_dim);
    }
    load_matrix(layer.wo, p + "attn_output.weight", c.dim, q_dim);
    if (c.gemma) {
      load_vector(layer.post_attention_norm, p + "post_attention_norm.weight", c.dim);
      load_vector(layer.post_ffw_norm, p + "post_ffw_norm.weight", c.dim);
    }
    load_vector(layer.ffn_norm, p + "ffn_norm.weight", c.dim);
    if (c.fused_projections) {
      // phi3: ffn_up holds the gate rows, then the up rows.
      Matrix gate_up;
      load_matrix(gate_up, p + "ffn_up.weight", 2 * c.ffn_dim, c.dim);
      if (status.ok()) {
        layer.w_gate = RowsOf(gate_up, 0, c.ffn_dim);
        layer.w_up = RowsOf(gate_up, c.ffn_dim, c.ffn_dim);
      }
    } else {
      load_matrix(layer.w_gate, p + "ffn_gate.weight", c.ffn_dim, c.dim);
      load_matrix(layer.w_up, p + "ffn_up.weight", c.ffn_dim, c.dim);
    }
    load_matrix(layer.w_down, p + "ffn_down.weight", c.dim, c.ffn_dim);
  }
  load_vector(weights->output_norm, "output_norm.weight", c.dim);
  if (reader.Has("rope_freqs.weight")) {
    load_vector(c.rope_freq_factors, "rope_freqs.weight", c.rope_dim / 2);
  }
  // LongRoPE: the long factors once the context exceeds the trained one.
  const char* longrope = options.context_length > c.rope_original_context
                             ? "rope_factors_long.weight"
                             : "rope_factors_short.weight";
  if (c.fused_projections && reader.Has(longrope)) {
    load_vector(c.rope_freq_factors, longrope, c.rope_dim / 2);
  }
  if (!c.tied_embeddings) {
    load_matrix(weights->output, "output.weight", c.vocab_size, c.dim);
  }
  if (!status.ok()) {
    return absl::Status(status.code(),
                        absl::StrCat(gguf_path, ": ", status.message()));
  }
  return std::unique_ptr<ReferenceLlama>(
      new ReferenceLlama(*std::move(config), std::move(weights),
                         options.round_kv_to_f16, options.quantize_kv_to_i8));
}

const ReferenceLlamaConfig& ReferenceLlama::config() const { return config_; }

int ReferenceLlama::position() const { return position_; }

void ReferenceLlama::Reset() {
  for (auto& k : k_cache_) k.clear();
  for (auto& v : v_cache_) v.clear();
  position_ = 0;
}

std::vector<float> ReferenceLlama::Forward(int32_t token) {
  const ReferenceLlamaConfig& c = config_;
  if (token < 0 || token >= c.vocab_size) {
    Die(absl::StrFormat("token %d is outside the vocabulary [0, %d)", token,
                        c.vocab_size));
  }
  const int pos = position_;
  const int kv_dim = c.n_kv_heads * c.head_dim;
  const int group = c.n_heads / c.n_kv_heads;
  const double score_scale =
      c.gemma ? c.query_scale : 1.0 / std::sqrt(static_cast<double>(c.head_dim));
  // Gemma's soft cap: cap * tanh(s / cap); cap 0 leaves s.
  const auto soft_cap = [](double s, double cap) { return cap > 0 ? cap * std::tanh(s / cap) : s; };
  // Adds a block's output to the residual stream, Gemma normalizing it first.
  const auto add_to_residual = [&](std::vector<float>& x, const std::vector<float>& out,
                                   const std::vector<float>& post_norm) {
    const std::vector<float> added = c.gemma ? RmsNorm(out, post_norm, c.norm_eps) : out;
    for (int i = 0; i < c.dim; ++i) x[i] += added[i];
  };

  const float* embedding = weights_->token_embd.Row(token);
  std::vector<float> x(embedding, embedding + c.dim);
  if (c.gemma) {
    const double normalizer = std::sqrt(static_cast<double>(c.dim));
    for (float& e : x) e = static_cast<float>(e * normalizer);
  }

  for (int l = 0; l < c.n_layers; ++l) {
    const Weights::Layer& layer = weights_->layers[l];

    // Attention block.
    const std::vector<float> xn = RmsNorm(x, layer.attn_norm, c.norm_eps);
    std::vector<float> q = MatVec(layer.wq, xn);
    std::vector<float> k = MatVec(layer.wk, xn);
    std::vector<float> v = MatVec(layer.wv, xn);
    if (!layer.bq.empty()) {
      for (size_t i = 0; i < q.size(); ++i) q[i] += layer.bq[i];
      for (size_t i = 0; i < k.size(); ++i) k[i] += layer.bk[i];
      for (size_t i = 0; i < v.size(); ++i) v[i] += layer.bv[i];
    }
    if (c.qk_norm) {
      NormalizeEachHead(q, layer.q_norm, c.head_dim, c.norm_eps);
      NormalizeEachHead(k, layer.k_norm, c.head_dim, c.norm_eps);
    }
    const bool local = c.sliding_window > 0 &&
                       l % c.local_layer_period != c.local_layer_period - 1;
    if (c.nope_every == 0 || (l + 1) % c.nope_every != 0) {
      const float theta = c.gemma && local ? c.rope_theta_local : c.rope_theta;
      ApplyRope(q, c, c.n_heads, pos, theta);
      ApplyRope(k, c, c.n_kv_heads, pos, theta);
    }
    // The cache keeps each row as stored (f16-rounded with that option),
    // and the current token reads its own row from there too.
    if (round_kv_to_f16_) {
      for (float& e : k) e = RoundToHalf(e);
      for (float& e : v) e = RoundToHalf(e);
    }
    if (quantize_kv_to_i8_) {
      QuantizeDequantizeInt8PerHead(k, c.head_dim);
      QuantizeDequantizeInt8PerHead(v, c.head_dim);
    }
    std::vector<float>& k_cache = k_cache_[l];
    std::vector<float>& v_cache = v_cache_[l];
    k_cache.insert(k_cache.end(), k.begin(), k.end());
    v_cache.insert(v_cache.end(), v.begin(), v.end());

    const int n_positions = pos + 1;
    // A local layer sees only the last sliding_window positions.
    const int first_position = local ? std::max(0, pos + 1 - c.sliding_window) : 0;
    std::vector<float> attn(static_cast<size_t>(c.n_heads) * c.head_dim);
    std::vector<double> scores(n_positions);
    for (int h = 0; h < c.n_heads; ++h) {
      const float* q_head = q.data() + static_cast<size_t>(h) * c.head_dim;
      const size_t kv_offset = static_cast<size_t>(h / group) * c.head_dim;
      double max_score = -INFINITY;
      for (int t = 0; t < n_positions; ++t) {
        const float* k_row = k_cache.data() + static_cast<size_t>(t) * kv_dim + kv_offset;
        scores[t] = soft_cap(Dot(q_head, k_row, c.head_dim) * score_scale, c.attn_softcap);
        if (t < first_position) scores[t] = -INFINITY;
        max_score = std::max(max_score, scores[t]);
      }
      double denominator = 0.0;
      for (double& s : scores) {
        s = std::exp(s - max_score);
        denominator += s;
      }
      float* out = attn.data() + static_cast<size_t>(h) * c.head_dim;
      for (int d = 0; d < c.head_dim; ++d) {
        double acc = 0.0;
        for (int t = 0; t < n_positions; ++t) {
          acc += scores[t] * v_cache[static_cast<size_t>(t) * kv_dim + kv_offset + d];
        }
        out[d] = static_cast<float>(acc / denominator);
      }
    }
    add_to_residual(x, MatVec(layer.wo, attn), layer.post_attention_norm);

    // SwiGLU (Gemma: GeGLU) feed-forward block.
    const std::vector<float> hn = RmsNorm(x, layer.ffn_norm, c.norm_eps);
    const std::vector<float> gate = MatVec(layer.w_gate, hn);
    const std::vector<float> up = MatVec(layer.w_up, hn);
    std::vector<float> act(c.ffn_dim);
    for (int i = 0; i < c.ffn_dim; ++i) {
      const double g = gate[i];
      const double activated =
          c.gemma ? 0.5 * g * (1.0 + std::tanh(std::sqrt(2.0 / std::numbers::pi) * (g + 0.044715 * g * g * g)))
                  : g / (1.0 + std::exp(-g));
      act[i] = static_cast<float>(activated * up[i]);
    }
    add_to_residual(x, MatVec(layer.w_down, act), layer.post_ffw_norm);
  }

  ++position_;
  const std::vector<float> xn = RmsNorm(x, weights_->output_norm, c.norm_eps);
  std::vector<float> logits =
      MatVec(c.tied_embeddings ? weights_->token_embd : weights_->output, xn);
  for (float& logit : logits) logit = static_cast<float>(soft_cap(logit, c.final_softcap));
  return logits;
}

std::vector<int32_t> ReferenceLlama::GenerateGreedy(
    absl::Span<const int32_t> prompt, int n_new, int32_t stop_token) {
  if (prompt.empty()) Die("GenerateGreedy needs a non-empty prompt");
  Reset();
  std::vector<float> logits;
  for (int32_t token : prompt) logits = Forward(token);
  std::vector<int32_t> generated;
  for (int i = 0; i < n_new; ++i) {
    const int32_t next = ArgmaxLowestIndex(logits);
    if (next == stop_token) break;
    generated.push_back(next);
    if (i + 1 < n_new) logits = Forward(next);
  }
  return generated;
}

int32_t ArgmaxLowestIndex(absl::Span<const float> logits) {
  if (logits.empty()) Die("ArgmaxLowestIndex needs at least one logit");
  int32_t best = 0;
  for (size_t i = 1; i < logits.size(); ++i) {
    if (logits[i] > logits[best]) best = static_cast<int32_t>(i);
  }
  return best;
}

}  // namespace lnpu::reference
