// npu-serve: an OpenAI-compatible HTTP server for a compiled model
// (docs/serve.md). Listens first (so /health can say "loading"), loads the
// model, then serves until SIGTERM or SIGINT, when it stops accepting
// completions (503), lets those in flight finish for --shutdown-timeout
// seconds, cancels the rest and exits 0.
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "framework/chat_template.h"
#include "framework/llm.h"
#include "framework/structured_output/token_trie.h"
#include "httplib.h"
#include "tools/npu-serve/api_server.h"
#include "tools/npu-serve/metrics.h"
#include "tools/npu-serve/scheduler.h"
#include "tools/npu-serve/serve_options.h"
#include "tools/common/trace_writer.h"

namespace {

using lnpu::serve::ServeOptions;

// Tells systemd (Type=notify) the service state, when NOTIFY_SOCKET is set.
void NotifySystemd(const char* state) {
  const char* path = std::getenv("NOTIFY_SOCKET");
  if (path == nullptr || path[0] == '\0') return;
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  const size_t length = std::min(std::strlen(path), sizeof(address.sun_path) - 1);
  std::memcpy(address.sun_path, path, length);
  if (address.sun_path[0] == '@') address.sun_path[0] = '\0';  // abstract socket
  const int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return;
  sendto(fd, state, std::strlen(state), MSG_NOSIGNAL, reinterpret_cast<sockaddr*>(&address),
         static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + length));
  close(fd);
}

// The chat template: --chat-template, else the model's.
absl::StatusOr<lnpu::framework::ChatTemplate> ChatTemplateOf(const lnpu::framework::Llm& llm,
                                                            const std::string& family_name) {
  if (family_name.empty()) return llm.GetChatTemplate();
  absl::StatusOr<lnpu::framework::ChatFamily> family =
      lnpu::framework::ParseChatFamily(family_name);
  if (!family.ok()) return family.status();
  return llm.GetChatTemplate(*family);
}

int Serve(const ServeOptions& options, const sigset_t& stop_signals) {
  // Opened before serving: the trace is written at shutdown, possibly
  // hours later, and would be lost then.
  std::unique_ptr<lnpu::tools::TraceWriter> trace;
  if (!options.trace_path.empty()) {
    absl::StatusOr<std::unique_ptr<lnpu::tools::TraceWriter>> opened =
        lnpu::tools::TraceWriter::Open(options.trace_path, {options.model_path});
    if (!opened.ok()) {
      std::cerr << "npu-serve: " << opened.status().message() << "\n";
      return 1;
    }
    trace = *std::move(opened);
  }
  lnpu::serve::Metrics metrics;
  lnpu::serve::ApiServer api(options.api, metrics);
  httplib::Server http;
  const int threads = options.http_threads;
  http.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  api.Register(http);
  // The listening socket, to raise its backlog after bind_to_port: 0.11
  // listens with a backlog of 5, and a burst of clients overflowing it gets
  // connections reset.
  int listen_fd = -1;
  http.set_socket_options([&listen_fd](int sock) {
    const int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    listen_fd = sock;
  });

  const int port = options.port == 0 ? http.bind_to_any_port(options.host)
                                     : (http.bind_to_port(options.host, options.port)
                                            ? options.port
                                            : -1);
  if (port < 0) {
    std::cerr << "npu-serve: cannot listen on " << options.host << ":" << options.port
              << " (in use, or not an address of this host)\n";
    return 1;
  }
  if (listen_fd >= 0) listen(listen_fd, SOMAXCONN);
  std::cerr << "npu-serve: listening on http://" << options.host << ":" << port << "\n";
  std::thread listener([&http] { http.listen_after_bind(); });

  int exit_code = 0;
  const absl::Time load_start = absl::Now();
  absl::StatusOr<std::unique_ptr<lnpu::framework::Llm>> llm =
      lnpu::framework::Llm::Load(options.model_path, {.device = options.device});
  std::unique_ptr<lnpu::serve::Scheduler> scheduler;
  lnpu::serve::ServedModel served;
  lnpu::serve::SchedulerOptions scheduler_options = options.scheduler;
  if (trace != nullptr) {
    scheduler_options.step_observer = [&trace](const std::string& who,
                                                const lnpu::runtime::StepTimeline& step) {
      trace->AddStep(step, who);
    };
    scheduler_options.span_observer = [&trace](absl::string_view name, absl::string_view track,
                                                const lnpu::runtime::TimeSpan& span) {
      trace->AddHostSpan(name, "scheduler", track, span);
    };
  }
  if (!llm.ok()) {
    std::cerr << "npu-serve: cannot load " << options.model_path << ": " << llm.status() << "\n";
    exit_code = 1;
  } else {
    absl::StatusOr<std::unique_ptr<lnpu::serve::Scheduler>> created =
        lnpu::serve::Scheduler::Create(**llm, scheduler_options, metrics);
    if (!created.ok()) {
      std::cerr << "npu-serve: " << created.status() << "\n";
      exit_code = 1;
    } else {
      scheduler = *std::move(created);
      served.llm = llm->get();
      served.scheduler = scheduler.get();
      served.chat_template = ChatTemplateOf(**llm, options.chat_template);
      served.token_trie =
          lnpu::framework::structured_output::TokenTrie::Create((*llm)->tokenizer());
      served.id = std::filesystem::path(options.model_path).stem().string();
      served.created = absl::ToUnixSeconds(absl::Now());
      served.ring_policy = options.scheduler.context_policy.on_full ==
                           lnpu::runtime::CacheFullPolicy::OnFull::kRing;
      if (!served.chat_template.ok()) {
        std::cerr << "npu-serve: /v1/chat/completions is unavailable: "
                  << served.chat_template.status().message() << "\n";
      }
      api.SetModel(&served);
      std::cerr << "npu-serve: ready: " << served.id << " (" << options.scheduler.sessions
                << " sessions, loaded in " << absl::ToInt64Milliseconds(absl::Now() - load_start)
                << " ms)\n";
      NotifySystemd("READY=1");

      int signal_number = 0;
      sigwait(&stop_signals, &signal_number);
      std::cerr << "npu-serve: " << strsignal(signal_number)
                << ": finishing the requests in flight\n";
      NotifySystemd("STOPPING=1");
      api.StopAccepting();
      scheduler->StopAccepting();
      scheduler->Drain(absl::Seconds(options.shutdown_timeout_seconds));
      api.WaitForStreams(absl::Seconds(5));
    }
  }
  http.stop();
  listener.join();
  scheduler.reset();  // its sessions before the Llm
  if (trace != nullptr) {
    if (absl::Status written = trace->Write(); !written.ok()) {
      std::cerr << "npu-serve: " << written.message() << "\n";
      exit_code = 1;
    } else {
      std::cerr << "npu-serve: trace written to " << trace->path() << "\n";
    }
  }
  return exit_code;
}

}  // namespace

int main(int argc, char** argv) {
  absl::StatusOr<ServeOptions> options =
      lnpu::serve::ParseServeOptions(std::vector<std::string>(argv + 1, argv + argc));
  if (!options.ok()) {
    std::cerr << "npu-serve: " << options.status().message() << "\n";
    return 2;
  }
  if (options->help) {
    std::cout << lnpu::serve::ServeUsage();
    return 0;
  }
  // The stop signals are taken by sigwait, SIGPIPE (a client that went
  // away) is ignored; blocked before any thread starts, so all inherit it.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  signal(SIGPIPE, SIG_IGN);
  return Serve(*options, stop_signals);
}
