#include "tests/serve/serve_test_support.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <fstream>
#include <regex>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "tests/tools/tool_test_support.h"

extern char** environ;

namespace lnpu::serve::testing {

using tools::testing::ExeWrapper;
using tools::testing::ReadFileOrEmpty;
using tools::testing::TestDirectory;

ServerProcess::ServerProcess(const std::string& artifact, const std::string& name,
                             const std::vector<std::string>& args,
                             const std::vector<std::string>& env)
    : log_path_(TestDirectory::Path(name + ".log")) {
  const char* program = std::getenv("LNPU_NPU_SERVE");
  if (program == nullptr) {
    ADD_FAILURE() << "LNPU_NPU_SERVE is not set: run through meson test";
    return;
  }
  // In a cross build the program runs under the exe wrapper (qemu-aarch64).
  std::vector<std::string> argv_storage = ExeWrapper();
  const std::vector<std::string> command = {program,  "-m",        artifact, "--device", "soft",
                                            "--host", "127.0.0.1", "--port", "0"};
  argv_storage.insert(argv_storage.end(), command.begin(), command.end());
  argv_storage.insert(argv_storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : argv_storage) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_storage(env.begin(), env.end());
  for (char** e = environ; *e != nullptr; ++e) env_storage.emplace_back(*e);
  std::vector<char*> envp;
  for (std::string& e : env_storage) envp.push_back(e.data());
  envp.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 2, log_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  const int spawned = posix_spawnp(&pid_, argv[0], &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) {
    ADD_FAILURE() << "cannot start " << program;
    pid_ = -1;
    return;
  }
  const std::regex listening("listening on http://127\\.0\\.0\\.1:([0-9]+)");
  const absl::Time deadline = absl::Now() + absl::Seconds(60);
  std::smatch match;
  std::string log;
  while (absl::Now() < deadline) {
    log = ReadFileOrEmpty(log_path_);
    if (std::regex_search(log, match, listening)) break;
    absl::SleepFor(absl::Milliseconds(20));
  }
  if (match.empty()) {
    ADD_FAILURE() << "npu-serve did not start:\n" << log;
    return;
  }
  port_ = std::stoi(match[1]);
  while (absl::Now() < deadline) {
    httplib::Result health = Client().Get("/health");
    if (health && health->status == 200) return;
    absl::SleepFor(absl::Milliseconds(20));
  }
  ADD_FAILURE() << "npu-serve did not become ready:\n" << ReadFileOrEmpty(log_path_);
}

std::string ServerProcess::log() const { return ReadFileOrEmpty(log_path_); }

ServerProcess::~ServerProcess() {
  if (pid_ > 0 && !stopped_) {
    EXPECT_EQ(Stop(), 0) << log();
  }
}

int ServerProcess::Stop() {
  stopped_ = true;
  kill(pid_, SIGTERM);
  const absl::Time deadline = absl::Now() + absl::Seconds(60);
  int status = 0;
  while (absl::Now() < deadline) {
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
  kill(pid_, SIGKILL);
  waitpid(pid_, &status, 0);
  return -1;
}

httplib::Client ServerProcess::Client(bool with_key) const {
  httplib::Client client("127.0.0.1", port_);
  client.set_read_timeout(60, 0);
  if (with_key) client.set_default_headers({{"Authorization", absl::StrCat("Bearer ", kKey)}});
  return client;
}

double ServerProcess::Metric(const std::string& name) const {
  httplib::Result res = Client().Get("/metrics");
  if (!res || res->status != 200) return -1;
  for (absl::string_view line : absl::StrSplit(res->body, '\n')) {
    if (line.size() > name.size() && line.substr(0, name.size()) == name &&
        line[name.size()] == ' ') {
      double value = -1;
      if (absl::SimpleAtod(line.substr(name.size() + 1), &value)) return value;
    }
  }
  return 0;  // a labelled counter not seen yet
}

bool ServerProcess::MetricReaches(const std::string& name, double value) const {
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (absl::Now() < deadline) {
    if (Metric(name) == value) return true;
    absl::SleepFor(absl::Milliseconds(20));
  }
  return false;
}

int64_t ServerProcess::RssKib() const {
  std::ifstream status(absl::StrCat("/proc/", pid_, "/status"));
  std::string line;
  while (std::getline(status, line)) {
    int64_t kib = 0;
    if (line.starts_with("VmRSS:") &&
        absl::SimpleAtoi(
            absl::StripAsciiWhitespace(absl::string_view(line).substr(6, line.size() - 6 - 3)),
            &kib)) {
      return kib;
    }
  }
  return -1;
}

Stream PostStream(httplib::Client client, const std::string& path, const nlohmann::json& body,
                  const std::function<bool(const Stream&)>& keep_reading) {
  Stream stream;
  std::string buffer;
  httplib::Request req;
  req.method = "POST";
  req.path = path;
  req.body = body.dump();
  req.set_header("Content-Type", "application/json");
  req.response_handler = [&](const httplib::Response& res) {
    stream.status = res.status;
    return true;
  };
  req.content_receiver = [&](const char* data, size_t size, uint64_t, uint64_t) {
    buffer.append(data, size);
    size_t end;
    while ((end = buffer.find("\n\n")) != std::string::npos) {
      const std::string event = buffer.substr(0, end);
      buffer.erase(0, end + 2);
      if (!event.starts_with("data: ")) continue;
      EXPECT_FALSE(stream.done) << "an event after [DONE]";
      if (event == "data: [DONE]") {
        stream.done = true;
        continue;
      }
      nlohmann::json chunk = nlohmann::json::parse(event.substr(6));
      if (chunk.contains("choices") && !chunk["choices"].empty()) {
        const nlohmann::json& choice = chunk["choices"][0];
        if (choice.contains("delta")) {
          stream.text += choice["delta"].value("content", "");
        } else {
          stream.text += choice.value("text", "");
        }
      }
      stream.chunks.push_back(std::move(chunk));
    }
    return !keep_reading || keep_reading(stream);
  };
  client.send(req);
  return stream;
}

}  // namespace lnpu::serve::testing
