#include "tools/npu-serve/serve_options.h"

#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace lnpu::serve {
namespace {

absl::Status BadValue(absl::string_view flag, absl::string_view value, absl::string_view want) {
  return absl::InvalidArgumentError(
      absl::StrCat(flag, " is '", value, "': give ", want, " (npu-serve --help)"));
}

template <typename T>
absl::Status ParseNumber(absl::string_view flag, const std::string& value, T min, T& out) {
  T parsed{};
  bool ok;
  if constexpr (std::is_floating_point_v<T>) {
    ok = absl::SimpleAtod(value, &parsed);
  } else {
    ok = absl::SimpleAtoi(value, &parsed);
  }
  if (!ok || parsed < min) return BadValue(flag, value, absl::StrCat("a number >= ", min));
  out = parsed;
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadKeyFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return absl::NotFoundError(absl::StrCat("--api-key-file '", path, "' cannot be read"));
  }
  std::stringstream content;
  content << in.rdbuf();
  std::string key(absl::StripAsciiWhitespace(content.str()));
  if (key.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("--api-key-file '", path, "' is empty"));
  }
  return key;
}

}  // namespace

absl::StatusOr<ServeOptions> ParseServeOptions(const std::vector<std::string>& args) {
  ServeOptions o;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string flag = args[i];
    std::string value;
    bool has_value = false;
    if (const size_t eq = flag.find('='); flag.starts_with("--") && eq != std::string::npos) {
      value = flag.substr(eq + 1);
      flag.resize(eq);
      has_value = true;
    }
    if (flag == "-h" || flag == "--help") {
      o.help = true;
      continue;
    }
    if (flag == "--quiet") {
      o.api.log_requests = false;
      continue;
    }
    if (!has_value) {
      if (i + 1 >= args.size()) {
        return absl::InvalidArgumentError(
            absl::StrCat(flag, " needs a value (npu-serve --help)"));
      }
      value = args[++i];
    }
    absl::Status parsed = absl::OkStatus();
    if (flag == "-m" || flag == "--model") {
      o.model_path = value;
    } else if (flag == "--device") {
      o.device = value;
    } else if (flag == "--trace") {
      o.trace_path = value;
    } else if (flag == "--host") {
      o.host = value;
    } else if (flag == "--port") {
      parsed = ParseNumber(flag, value, 0, o.port);
      if (parsed.ok() && o.port > 65535) parsed = BadValue(flag, value, "a port in [0, 65535]");
    } else if (flag == "--chat-template") {
      o.chat_template = value;
    } else if (flag == "--http-threads") {
      parsed = ParseNumber(flag, value, 1, o.http_threads);
    } else if (flag == "--shutdown-timeout") {
      parsed = ParseNumber(flag, value, 0.0, o.shutdown_timeout_seconds);
    } else if (flag == "--sessions") {
      parsed = ParseNumber(flag, value, size_t{1}, o.scheduler.sessions);
    } else if (flag == "--decode-batch") {
      if (value == "on" || value == "off") {
        o.scheduler.batch_decode = value == "on";
      } else {
        parsed = BadValue(flag, value, "on or off");
      }
    } else if (flag == "--queue") {
      parsed = ParseNumber(flag, value, size_t{0}, o.scheduler.max_queue);
    } else if (flag == "--prefill-chunk") {
      parsed = ParseNumber(flag, value, uint32_t{0}, o.scheduler.prefill_chunk);
    } else if (flag == "--ctx-policy") {
      if (value == "finish") {
        o.scheduler.context_policy.on_full = runtime::CacheFullPolicy::OnFull::kFinish;
      } else if (value == "ring") {
        o.scheduler.context_policy.on_full = runtime::CacheFullPolicy::OnFull::kRing;
      } else {
        parsed = BadValue(flag, value, "finish or ring");
      }
    } else if (flag == "--sink-tokens") {
      parsed = ParseNumber(flag, value, uint32_t{0}, o.scheduler.context_policy.sink_tokens);
    } else if (flag == "--prefix-cache-entries") {
      parsed = ParseNumber(flag, value, size_t{0}, o.scheduler.prefix_cache_entries);
    } else if (flag == "--prefix-cache-mb") {
      uint64_t mb = 0;
      parsed = ParseNumber(flag, value, uint64_t{0}, mb);
      o.scheduler.prefix_cache_bytes = mb << 20;
    } else if (flag == "--api-key") {
      if (value.empty()) parsed = BadValue(flag, value, "a non-empty key");
      o.api.api_key = value;
    } else if (flag == "--api-key-file") {
      absl::StatusOr<std::string> key = ReadKeyFile(value);
      if (!key.ok()) return key.status();
      o.api.api_key = *key;
    } else if (flag == "--max-body-bytes") {
      parsed = ParseNumber(flag, value, size_t{1}, o.api.max_body_bytes);
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown flag '", flag, "' (npu-serve --help lists the flags)"));
    }
    if (!parsed.ok()) return parsed;
  }
  if (!o.help && o.model_path.empty()) {
    return absl::InvalidArgumentError("give the model: npu-serve -m MODEL.lnpu");
  }
  if (o.http_threads == 0) {
    o.http_threads = static_cast<int>(o.scheduler.sessions + o.scheduler.max_queue + 4);
  }
  return o;
}

std::string ServeUsage() {
  return R"(usage: npu-serve -m MODEL.lnpu [flags]

OpenAI-compatible HTTP server for a compiled model (docs/serve.md).

  -m, --model PATH          compiled model artifact (.lnpu), from npu-compile
  --device DEV              auto (default), soft, or a device node path
  --host ADDR               address to listen on (default 127.0.0.1)
  --port N                  port (default 8080; 0 picks a free one)
  --chat-template FAMILY    chat template family when the model has none
                            (chatml, llama3, llama3.1, llama2, zephyr, phi3)
  --sessions N              requests generating at once, each with its own
                            KV cache in device memory (default 4)
  --decode-batch on|off     run the decode steps of several sessions as one
                            batched step when the model has batched decode
                            graphs (npu-compile --decode-batch; default on)
  --queue N                 requests waiting for a session before 429 (default 16)
  --prefill-chunk N         prompt tokens per scheduling step (default: the
                            model's largest compiled prefill chunk)
  --ctx-policy finish|ring  full cache: end the reply (default) or keep a ring
  --sink-tokens N           tokens the ring never evicts (default 4)
  --prefix-cache-entries N  conversation prefixes kept for reuse (default 64; 0 = off)
  --prefix-cache-mb N       host memory for them (default 256)
  --api-key KEY             require 'Authorization: Bearer KEY' on /v1/* and /metrics
  --api-key-file PATH       the same, the key read from a file
  --max-body-bytes N        larger request bodies get 413 (default 1048576)
  --http-threads N          connection threads (default sessions + queue + 4)
  --shutdown-timeout S      on SIGTERM, seconds to let requests finish before
                            cancelling them (default 30)
  --quiet                   no log line per request
  --trace FILE.json         at shutdown, write a Chrome/Perfetto trace of every
                            graph run (jobs and commands on the NPU's engines,
                            submits and waits per session) to FILE.json
)";
}

}  // namespace lnpu::serve
