// npu-serve as a child process for the serve tests: start it on a free
// loopback port, talk to it, stop it, and read streamed responses.
#ifndef TESTS_SERVE_SERVE_TEST_SUPPORT_H_
#define TESTS_SERVE_SERVE_TEST_SUPPORT_H_

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "httplib.h"
#include "nlohmann/json.hpp"

namespace lnpu::serve::testing {

// The API key the tests start servers with.
inline constexpr char kKey[] = "test-key";

// A running npu-serve child process on a free loopback port.
class ServerProcess {
 public:
  // Starts npu-serve -m `artifact` --device soft --port 0 `args`, with
  // `env` added, and waits until /health is ready. The log goes to
  // TestDirectory::Path(name + ".log").
  ServerProcess(const std::string& artifact, const std::string& name,
                const std::vector<std::string>& args, const std::vector<std::string>& env = {});
  // Stops the server (SIGTERM) unless Stop() was called; a failure when it
  // does not exit with 0.
  ~ServerProcess();

  // SIGTERM, then the exit code (-1 when it did not exit within 60 s).
  int Stop();

  httplib::Client Client(bool with_key = true) const;

  // A value of GET /metrics ("name" or "name{labels}"), or -1.
  double Metric(const std::string& name) const;

  // Waits up to 10 s for Metric(name) == value.
  bool MetricReaches(const std::string& name, double value) const;

  // Resident memory in KiB.
  int64_t RssKib() const;

  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  std::string log() const;

 private:
  std::string log_path_;
  pid_t pid_ = -1;
  int port_ = 0;
  bool stopped_ = false;
};

// A streamed response split into its events.
struct Stream {
  int status = 0;
  std::vector<nlohmann::json> chunks;  // the data events before [DONE]
  bool done = false;                   // [DONE] arrived last
  std::string text;                    // the concatenated deltas
};

// POSTs `body` to `path` and reads the server-sent events while
// `keep_reading` (when given) returns true.
Stream PostStream(httplib::Client client, const std::string& path, const nlohmann::json& body,
                  const std::function<bool(const Stream&)>& keep_reading = nullptr);

}  // namespace lnpu::serve::testing

#endif  // TESTS_SERVE_SERVE_TEST_SUPPORT_H_
