#include "tools/npu-serve/chat_page.h"

namespace lnpu::serve {

std::string_view ChatPageHtml() {
  return R"html(<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>npu-serve chat</title>
<style>
  body { font-family: sans-serif; max-width: 48rem; margin: 1rem auto; padding: 0 1rem; }
  #log { border: 1px solid #ccc; border-radius: 4px; padding: .5rem; min-height: 12rem;
         white-space: pre-wrap; overflow-y: auto; max-height: 70vh; }
  .user { color: #0645ad; } .assistant { color: #222; } .error { color: #b00; }
  form { display: flex; gap: .5rem; margin-top: .5rem; }
  #input { flex: 1; } #status { color: #666; font-size: .9rem; margin-top: .25rem; }
</style>
</head>
<body>
<h1>npu-serve</h1>
<div id="log" aria-live="polite"></div>
<form id="form">
  <input id="input" autocomplete="off" placeholder="Message" required>
  <button id="send" type="submit">Send</button>
  <button id="stop" type="button" disabled>Stop</button>
</form>
<div id="status"></div>
<details><summary>Settings</summary>
  <label>API key <input id="key" type="password"></label>
  <label>max tokens <input id="max" type="number" value="256" min="1"></label>
  <label>temperature <input id="temp" type="number" value="0.7" min="0" max="2" step="0.1"></label>
</details>
<script>
"use strict";
const $ = (id) => document.getElementById(id);
const messages = [];
let controller = null;

function addLine(role, text) {
  const div = document.createElement("div");
  div.className = role;
  div.textContent = (role === "user" ? "You: " : "") + text;
  $("log").appendChild(div);
  $("log").scrollTop = $("log").scrollHeight;
  return div;
}

async function send(text) {
  messages.push({role: "user", content: text});
  addLine("user", text);
  const out = addLine("assistant", "");
  out.id = "reply-" + messages.length;
  controller = new AbortController();
  $("send").disabled = true; $("stop").disabled = false;
  const headers = {"Content-Type": "application/json"};
  if ($("key").value) headers["Authorization"] = "Bearer " + $("key").value;
  let reply = "", tokens = 0, first = 0;
  const start = performance.now();
  try {
    const res = await fetch("/v1/chat/completions", {
      method: "POST", headers, signal: controller.signal,
      body: JSON.stringify({messages, stream: true, max_tokens: Number($("max").value),
                            temperature: Number($("temp").value),
                            stream_options: {include_usage: true}})});
    if (!res.ok) {
      const body = await res.json().catch(() => ({}));
      throw new Error((body.error && body.error.message) || ("HTTP " + res.status));
    }
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const {value, done} = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, {stream: true});
      let end;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const event = buffer.slice(0, end); buffer = buffer.slice(end + 2);
        if (!event.startsWith("data: ")) continue;
        const data = event.slice(6);
        if (data === "[DONE]") continue;
        const chunk = JSON.parse(data);
        if (chunk.error) throw new Error(chunk.error.message);
        if (chunk.usage) tokens = chunk.usage.completion_tokens;
        const delta = chunk.choices && chunk.choices[0] && chunk.choices[0].delta;
        if (delta && delta.content) {
          if (!first) first = performance.now();
          reply += delta.content; out.textContent = reply;
          if (!chunk.usage) tokens += 1;
          const secs = (performance.now() - first) / 1000;
          $("status").textContent = tokens + " tokens" +
              (secs > 0 ? ", " + (tokens / secs).toFixed(1) + " tokens/s" : "");
        }
      }
    }
    const secs = (performance.now() - (first || start)) / 1000;
    $("status").textContent = tokens + " tokens, " +
        (secs > 0 ? (tokens / secs).toFixed(1) : "-") + " tokens/s, first token after " +
        ((first || start) - start).toFixed(0) + " ms";
  } catch (e) {
    if (e.name === "AbortError") {
      $("status").textContent = "stopped after " + tokens + " tokens";
    } else {
      addLine("error", "Error: " + e.message);
    }
  } finally {
    messages.push({role: "assistant", content: reply});
    controller = null;
    $("send").disabled = false; $("stop").disabled = true;
  }
}

$("form").addEventListener("submit", (e) => {
  e.preventDefault();
  const text = $("input").value.trim();
  if (!text || controller) return;
  $("input").value = "";
  send(text);
});
$("stop").addEventListener("click", () => { if (controller) controller.abort(); });
</script>
</body>
</html>
)html";
}

}  // namespace lnpu::serve
