#!/usr/bin/env python3
"""The chat page of npu-serve in headless Chromium: loads /, sends a
message, and checks that the streamed reply appears with a tokens/s
readout. Chromium is driven through the DevTools protocol over
--remote-debugging-pipe (no extra packages). When Chromium is missing it is
installed with tools/scripts/install_packages.sh (as the README's test
command installs what it needs); the test fails if that is not possible.

Usage (meson test sets these): chat_page_test.py NPU_SERVE NPU_COMPILE
MODELS_DIR REPO_ROOT
"""
import fcntl
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

TIMEOUT_S = 60


def ensure_chromium(repo):
    if shutil.which("chromium"):
        return shutil.which("chromium")
    script = os.path.join(repo, "tools/scripts/install_packages.sh")
    subprocess.run(["bash", "-c", f'source "{script}" && install_missing_packages chromium'],
                   check=True)
    path = shutil.which("chromium")
    if not path:
        sys.exit("FAIL: chromium is still missing after install_missing_packages")
    return path


def start_server(npu_serve, artifact, log_path):
    log = open(log_path, "w")
    server = subprocess.Popen(
        [npu_serve, "-m", artifact, "--device", "soft", "--host", "127.0.0.1", "--port", "0",
         "--chat-template", "chatml", "--sessions", "1"], stderr=log)
    deadline = time.time() + TIMEOUT_S
    while time.time() < deadline:
        text = open(log_path).read()
        ready = re.search(r"listening on http://127\.0\.0\.1:(\d+)", text)
        if ready and "npu-serve: ready" in text:
            return server, int(ready.group(1))
        if server.poll() is not None:
            break
        time.sleep(0.05)
    server.kill()
    sys.exit("FAIL: npu-serve did not become ready:\n" + open(log_path).read())


def high_fd(fd):
    """A copy of `fd` numbered 10 or more; `fd` is closed."""
    high = fcntl.fcntl(fd, fcntl.F_DUPFD, 10)
    os.close(fd)
    return high


class DevTools:
    """The DevTools protocol over Chromium's fds 3 (commands) and 4 (replies)."""

    def __init__(self, chromium, url, profile):
        self.profile = profile
        os.makedirs(profile, exist_ok=True)
        to_chrome_r, self.to_chrome = os.pipe()
        self.from_chrome, from_chrome_w = os.pipe()
        # Above 4, so that moving them to 3 and 4 in the child overwrites
        # neither.
        to_chrome_r, from_chrome_w = high_fd(to_chrome_r), high_fd(from_chrome_w)

        def child_fds():
            # A process group of its own, so that close() ends its helper
            # processes (zygote, renderer, utility) with it.
            os.setsid()
            os.dup2(to_chrome_r, 3)
            os.dup2(from_chrome_w, 4)

        self.process = subprocess.Popen(
            [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
             "--no-first-run", "--disable-background-networking", "--disable-component-update",
             "--disable-sync", "--disable-dev-shm-usage", "--remote-debugging-pipe",
             "--user-data-dir=" + profile, url],
            preexec_fn=child_fds, pass_fds=(3, 4, to_chrome_r, from_chrome_w),
            # Chromium's own temporary files go with the profile.
            env=dict(os.environ, TMPDIR=profile),
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self.next_id = 0
        self.buffer = b""

    def call(self, method, params=None, session=None):
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self.to_chrome, json.dumps(message).encode() + b"\0")
        while True:
            while b"\0" not in self.buffer:
                chunk = os.read(self.from_chrome, 65536)
                if not chunk:
                    raise RuntimeError("chromium closed the DevTools pipe")
                self.buffer += chunk
            raw, self.buffer = self.buffer.split(b"\0", 1)
            reply = json.loads(raw)
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply["result"]

    def close(self):
        """Ends Chromium and its helpers, and removes the profile: helpers
        that were exiting on their own may still write into it for a moment
        (once a cleanup failed with 'Directory not empty: Default')."""
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.process.wait()
        deadline = time.time() + TIMEOUT_S
        while True:
            try:
                shutil.rmtree(self.profile)
                return
            except FileNotFoundError:
                return
            except OSError:
                if time.time() > deadline:
                    raise
                time.sleep(0.05)


def main():
    npu_serve, npu_compile, models_dir, repo = sys.argv[1:5]
    chromium = ensure_chromium(repo)
    with tempfile.TemporaryDirectory(prefix="npu_serve_page_") as tmp:
        artifact = os.path.join(tmp, "stories.lnpu")
        subprocess.run([npu_compile, os.path.join(models_dir, "stories260K.gguf"), "-o", artifact,
                        "--max-prompt-len", "128", "--min-response-len", "64",
                        "--prefill-chunks", "16,64"], check=True, stdout=subprocess.DEVNULL)
        log_path = os.path.join(tmp, "server.log")
        server, port = start_server(npu_serve, artifact, log_path)
        devtools = None
        try:
            devtools = DevTools(chromium, f"http://127.0.0.1:{port}/", os.path.join(tmp, "profile"))
            deadline = time.time() + TIMEOUT_S
            page = None
            while page is None and time.time() < deadline:
                targets = devtools.call("Target.getTargets")["targetInfos"]
                page = next((t for t in targets if t["type"] == "page" and
                             t["url"].startswith(f"http://127.0.0.1:{port}")), None)
                time.sleep(0.05)
            assert page, "the page did not open"
            session = devtools.call("Target.attachToTarget",
                                    {"targetId": page["targetId"], "flatten": True})["sessionId"]

            def evaluate(expression):
                result = devtools.call("Runtime.evaluate",
                                       {"expression": expression, "returnByValue": True},
                                       session)
                return result["result"].get("value")

            while time.time() < deadline and not evaluate(
                    "document.readyState === 'complete' && !!document.getElementById('form')"):
                time.sleep(0.05)
            evaluate("document.getElementById('temp').value = '0';"
                     "document.getElementById('max').value = '40';"
                     "document.getElementById('input').value = 'Tell me a story';"
                     "document.getElementById('form').requestSubmit(); true")
            reply, status, seen_partial = "", "", False
            while time.time() < deadline:
                reply = evaluate("(document.getElementById('reply-1') || {}).textContent || ''")
                status = evaluate("document.getElementById('status').textContent")
                if reply and "first token" not in status:
                    seen_partial = True  # text on the page while still streaming
                if reply and "first token" in status:
                    break
                time.sleep(0.02)
            log = open(log_path).read()
            assert reply, "no reply text appeared; server log:\n" + log
            assert "tokens/s" in status, "no tokens/s readout: " + repr(status)
            assert "POST /v1/chat/completions 200" in log, log
            print(f"reply: {reply!r}\nstatus: {status!r}\nseen while streaming: {seen_partial}")
        finally:
            if devtools:
                devtools.close()
            server.send_signal(signal.SIGTERM)
            code = server.wait(timeout=TIMEOUT_S)
        assert code == 0, f"npu-serve exited with {code}"
    print("PASS")


if __name__ == "__main__":
    main()
