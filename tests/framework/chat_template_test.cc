#include "framework/chat_template.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace lnpu::framework {
namespace {

using ::testing::HasSubstr;

// tokenizer.chat_template of the reference models, as their GGUF files
// carry them (Jinja source: "\n" inside string literals is a backslash and
// an n).

// Qwen/Qwen2.5-*-Instruct.
constexpr char kQwen25[] = R"({%- if tools %}
    {{- '<|im_start|>system\n' }}
    {%- if messages[0]['role'] == 'system' %}
        {{- messages[0]['content'] }}
    {%- else %}
        {{- 'You are Qwen, created by Alibaba Cloud. You are a helpful assistant.' }}
    {%- endif %}
    {{- "\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>" }}
    {%- for tool in tools %}
        {{- "\n" }}
        {{- tool | tojson }}
    {%- endfor %}
    {{- "\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n" }}
{%- else %}
    {%- if messages[0]['role'] == 'system' %}
        {{- '<|im_start|>system\n' + messages[0]['content'] + '<|im_end|>\n' }}
    {%- else %}
        {{- '<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n' }}
    {%- endif %}
{%- endif %}
{%- for message in messages %}
    {%- if (message.role == "user") or (message.role == "system" and not loop.first) or (message.role == "assistant" and not message.tool_calls) %}
        {{- '<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>' + '\n' }}
    {%- elif message.role == "assistant" %}
        {{- '<|im_start|>' + message.role }}
        {%- if message.content %}
            {{- '\n' + message.content }}
        {%- endif %}
        {%- for tool_call in message.tool_calls %}
            {%- if tool_call.function is defined %}
                {%- set tool_call = tool_call.function %}
            {%- endif %}
            {{- '\n<tool_call>\n{"name": "' }}
            {{- tool_call.name }}
            {{- '", "arguments": ' }}
            {{- tool_call.arguments | tojson }}
            {{- '}\n</tool_call>' }}
        {%- endfor %}
        {{- '<|im_end|>\n' }}
    {%- elif message.role == "tool" %}
        {%- if (loop.index0 == 0) or (messages[loop.index0 - 1].role != "tool") %}
            {{- '<|im_start|>user' }}
        {%- endif %}
        {{- '\n<tool_response>\n' }}
        {{- message.content }}
        {{- '\n</tool_response>' }}
        {%- if loop.last or (messages[loop.index0 + 1].role != "tool") %}
            {{- '<|im_end|>\n' }}
        {%- endif %}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\n' }}
{%- endif %}
)";

// Qwen/Qwen2-*-Instruct.
constexpr char kQwen2[] =
    R"({% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system
You are a helpful assistant.<|im_end|>
' }}{% endif %}{{'<|im_start|>' + message['role'] + '
' + message['content'] + '<|im_end|>' + '
'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant
' }}{% endif %})";

// teknium/OpenHermes-2.5-Mistral-7B: ChatML without a default system prompt.
constexpr char kOpenHermes[] =
    R"({% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %})";

// meta-llama/Meta-Llama-3-8B-Instruct.
constexpr char kLlama3[] =
    R"({% set loop_messages = messages %}{% for message in loop_messages %}{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %})";

// meta-llama/Llama-3.1-8B-Instruct (3.2 and 3.3 differ only in the tool
// and date details).
constexpr char kLlama31[] = R"({{- bos_token }}
{%- if custom_tools is defined %}
    {%- set tools = custom_tools %}
{%- endif %}
{%- if not tools_in_user_message is defined %}
    {%- set tools_in_user_message = true %}
{%- endif %}
{%- if not date_string is defined %}
    {%- set date_string = "26 Jul 2024" %}
{%- endif %}
{%- if not tools is defined %}
    {%- set tools = none %}
{%- endif %}

{#- This block extracts the system message, so we can slot it into the right place. #}
{%- if messages[0]['role'] == 'system' %}
    {%- set system_message = messages[0]['content']|trim %}
    {%- set messages = messages[1:] %}
{%- else %}
    {%- set system_message = "" %}
{%- endif %}

{#- System message + builtin tools #}
{{- "<|start_header_id|>system<|end_header_id|>\n\n" }}
{%- if builtin_tools is defined or tools is not none %}
    {{- "Environment: ipython\n" }}
{%- endif %}
{%- if builtin_tools is defined %}
    {{- "Tools: " + builtin_tools | reject('equalto', 'code_interpreter') | join(", ") + "\n\n"}}
{%- endif %}
{{- "Cutting Knowledge Date: December 2023\n" }}
{{- "Today Date: " + date_string + "\n\n" }}
{%- if tools is not none and not tools_in_user_message %}
    {{- "You have access to the following functions. To call a function, please respond with JSON for a function call." }}
    {{- 'Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}.' }}
    {{- "Do not use variables.\n\n" }}
    {%- for t in tools %}
        {{- t | tojson(indent=4) }}
        {{- "\n\n" }}
    {%- endfor %}
{%- endif %}
{{- system_message }}
{{- "<|eot_id|>" }}

{%- for message in messages %}
    {%- if not (message.role == 'ipython' or message.role == 'tool' or 'tool_calls' in message) %}
        {{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + '<|eot_id|>' }}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|start_header_id|>assistant<|end_header_id|>\n\n' }}
{%- endif %}
)";

// meta-llama/Llama-2-7b-chat-hf.
constexpr char kLlama2[] =
    R"({% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}{% set system_message = messages[0]['content'] %}{% else %}{% set loop_messages = messages %}{% set system_message = false %}{% endif %}{% for message in loop_messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}{% if loop.index0 == 0 and system_message != false %}{% set content = '<<SYS>>\n' + system_message + '\n<</SYS>>\n\n' + message['content'] %}{% else %}{% set content = message['content'] %}{% endif %}{% if message['role'] == 'user' %}{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}{% elif message['role'] == 'assistant' %}{{ ' '  + content.strip() + ' ' + eos_token }}{% endif %}{% endfor %})";

// HuggingFaceH4/zephyr-7b-beta; TinyLlama/TinyLlama-1.1B-Chat-v1.0 ships
// the same text.
constexpr char kZephyr[] = R"({% for message in messages %}
{% if message['role'] == 'user' %}
{{ '<|user|>
' + message['content'] + eos_token }}
{% elif message['role'] == 'system' %}
{{ '<|system|>
' + message['content'] + eos_token }}
{% elif message['role'] == 'assistant' %}
{{ '<|assistant|>
'  + message['content'] + eos_token }}
{% endif %}
{% if loop.last and add_generation_prompt %}
{{ '<|assistant|>' }}
{% endif %}
{% endfor %})";
constexpr char kTinyLlamaChat[] = R"({% for message in messages %}
{% if message['role'] == 'user' %}
{{ '<|user|>
' + message['content'] + eos_token }}
{% elif message['role'] == 'system' %}
{{ '<|system|>
' + message['content'] + eos_token }}
{% elif message['role'] == 'assistant' %}
{{ '<|assistant|>
'  + message['content'] + eos_token }}
{% endif %}
{% if loop.last and add_generation_prompt %}
{{ '<|assistant|>' }}
{% endif %}
{% endfor %})";

// microsoft/Phi-3-mini-4k-instruct.
constexpr char kPhi3[] =
    R"({% for message in messages %}{% if message['role'] == 'system' %}{{'<|system|>
' + message['content'] + '<|end|>
'}}{% elif message['role'] == 'user' %}{{'<|user|>
' + message['content'] + '<|end|>
'}}{% elif message['role'] == 'assistant' %}{{'<|assistant|>
' + message['content'] + '<|end|>
'}}{% endif %}{% endfor %}{% if add_generation_prompt %}{{ '<|assistant|>
' }}{% else %}{{ eos_token }}{% endif %})";

// mistralai/Mistral-7B-Instruct-v0.2: [INST] without <<SYS>>.
constexpr char kMistral[] =
    R"({{ bos_token }}{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}{% if message['role'] == 'user' %}{{ '[INST] ' + message['content'] + ' [/INST]' }}{% elif message['role'] == 'assistant' %}{{ message['content'] + eos_token}}{% else %}{{ raise_exception('Only user and assistant roles are supported!') }}{% endif %}{% endfor %})";

// google/gemma-2-2b-it.
constexpr char kGemma2[] =
    R"({{ bos_token }}{% if messages[0]['role'] == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}{% if (message['role'] == 'assistant') %}{% set role = 'model' %}{% else %}{% set role = message['role'] %}{% endif %}{{ '<start_of_turn>' + role + '
' + message['content'] | trim + '<end_of_turn>
' }}{% endfor %}{% if add_generation_prompt %}{{'<start_of_turn>model
'}}{% endif %})";

// google/gemma-3-1b-it.
constexpr char kGemma3[] = R"({{ bos_token }}
{%- if messages[0]['role'] == 'system' -%}
    {%- if messages[0]['content'] is string -%}
        {%- set first_user_prefix = messages[0]['content'] + '\n\n' -%}
    {%- else -%}
        {%- set first_user_prefix = messages[0]['content'][0]['text'] + '\n\n' -%}
    {%- endif -%}
    {%- set loop_messages = messages[1:] -%}
{%- else -%}
    {%- set first_user_prefix = "" -%}
    {%- set loop_messages = messages -%}
{%- endif -%}
{%- for message in loop_messages -%}
    {%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) -%}
        {{ raise_exception("Conversation roles must alternate user/assistant/user/assistant/...") }}
    {%- endif -%}
    {%- if (message['role'] == 'assistant') -%}
        {%- set role = "model" -%}
    {%- else -%}
        {%- set role = message['role'] -%}
    {%- endif -%}
    {{ '<start_of_turn>' + role + '\n' + (first_user_prefix if loop.first else "") }}
    {%- if message['content'] is string -%}
        {{ message['content'] | trim }}
    {%- elif message['content'] is iterable -%}
        {%- for item in message['content'] -%}
            {%- if item['type'] == 'image' -%}
                {{ '<start_of_image>' }}
            {%- elif item['type'] == 'text' -%}
                {{ item['text'] | trim }}
            {%- endif -%}
        {%- endfor -%}
    {%- else -%}
        {{ raise_exception("Invalid content type") }}
    {%- endif -%}
    {{ '<end_of_turn>\n' }}
{%- endfor -%}
{%- if add_generation_prompt -%}
    {{'<start_of_turn>model\n'}}
{%- endif -%}
)";

// Qwen/Qwen3-0.6B (the tool branches left out).
constexpr char kQwen3[] = R"({%- if messages[0].role == 'system' %}
    {{- '<|im_start|>system\n' + messages[0].content + '<|im_end|>\n' }}
{%- endif %}
{%- set ns = namespace(multi_step_tool=true, last_query_index=messages|length - 1) %}
{%- for message in messages[::-1] %}
    {%- set index = (messages|length - 1) - loop.index0 %}
    {%- if ns.multi_step_tool and message.role == "user" and not(message.content.startswith('<tool_response>') and message.content.endswith('</tool_response>')) %}
        {%- set ns.multi_step_tool = false %}
        {%- set ns.last_query_index = index %}
    {%- endif %}
{%- endfor %}
{%- for message in messages %}
    {%- if (message.role == "user") or (message.role == "system" and not loop.first) %}
        {{- '<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>' + '\n' }}
    {%- elif message.role == "assistant" %}
        {%- set content = message.content %}
        {%- set reasoning_content = '' %}
        {%- if message.reasoning_content is defined and message.reasoning_content is not none %}
            {%- set reasoning_content = message.reasoning_content %}
        {%- else %}
            {%- if '</think>' in message.content %}
                {%- set content = message.content.split('</think>')[-1].lstrip('\n') %}
                {%- set reasoning_content = message.content.split('</think>')[0].rstrip('\n').split('<think>')[-1].lstrip('\n') %}
            {%- endif %}
        {%- endif %}
        {%- if loop.index0 > ns.last_query_index %}
            {%- if loop.last or (not loop.last and reasoning_content) %}
                {{- '<|im_start|>' + message.role + '\n<think>\n' + reasoning_content.strip('\n') + '\n</think>\n\n' + content.lstrip('\n') }}
            {%- else %}
                {{- '<|im_start|>' + message.role + '\n' + content }}
            {%- endif %}
        {%- else %}
            {{- '<|im_start|>' + message.role + '\n' + content }}
        {%- endif %}
        {{- '<|im_end|>\n' }}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\n' }}
    {%- if enable_thinking is defined and enable_thinking is false %}
        {{- '<think>\n\n</think>\n\n' }}
    {%- endif %}
{%- endif %})";

// HuggingFaceTB/SmolLM2-1.7B-Instruct: ChatML with a default system prompt.
constexpr char kSmolLm2[] =
    R"({% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system
You are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>
' }}{% endif %}{{'<|im_start|>' + message['role'] + '
' + message['content'] + '<|im_end|>' + '
'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant
' }}{% endif %})";

// mistralai/Mistral-7B-Instruct-v0.3 (the tool branches left out).
constexpr char kMistralV3[] = R"({%- if messages[0]["role"] == "system" %}
    {%- set system_message = messages[0]["content"] %}
    {%- set loop_messages = messages[1:] %}
{%- else %}
    {%- set loop_messages = messages %}
{%- endif %}
{{- bos_token }}
{%- for message in loop_messages %}
    {%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}
        {{- raise_exception('After the optional system message, conversation roles must alternate user/assistant/user/assistant/...') }}
    {%- endif %}
    {%- if message["role"] == "user" %}
        {%- if loop.last and system_message is defined %}
            {{- "[INST] " + system_message + "\n\n" + message["content"] + "[/INST]" }}
        {%- else %}
            {{- "[INST] " + message["content"] + "[/INST]" }}
        {%- endif %}
    {%- elif message["role"] == "assistant" %}
        {{- " " + message["content"]|trim + eos_token}}
    {%- else %}
        {{- raise_exception("Only user and assistant roles are supported, with the exception of an initial optional system message!") }}
    {%- endif %}
{%- endfor %}
)";

// mistralai/Mistral-Nemo-Instruct-2407 (tekken; the tool branches left
// out).
constexpr char kMistralNemo[] = R"({%- if messages[0]["role"] == "system" %}
    {%- set system_message = messages[0]["content"] %}
    {%- set loop_messages = messages[1:] %}
{%- else %}
    {%- set loop_messages = messages %}
{%- endif %}
{{- bos_token }}
{%- for message in loop_messages %}
    {%- if message["role"] == "user" %}
        {%- if loop.last and system_message is defined %}
            {{- "[INST]" + system_message + "\n\n" + message["content"] + "[/INST]" }}
        {%- else %}
            {{- "[INST]" + message["content"] + "[/INST]" }}
        {%- endif %}
    {%- elif message["role"] == "assistant" %}
        {{- message["content"] + eos_token}}
    {%- endif %}
{%- endfor %}
)";

// microsoft/Phi-4-mini-instruct.
constexpr char kPhi4Mini[] =
    R"({% for message in messages %}{% if message['role'] == 'system' and 'tools' in message and message['tools'] is not none %}{{ '<|' + message['role'] + '|>' + message['content'] + '<|tool|>' + message['tools'] + '<|/tool|>' + '<|end|>' }}{% else %}{{ '<|' + message['role'] + '|>' + message['content'] + '<|end|>' }}{% endif %}{% endfor %}{% if add_generation_prompt %}{{ '<|assistant|>' }}{% else %}{{ eos_token }}{% endif %})";

const ChatSpecialTokens kSentencePieceTokens{"<s>", "</s>", /*add_bos=*/true};
const ChatSpecialTokens kLlama3Tokens{"<|begin_of_text|>", "<|eot_id|>",
                                      /*add_bos=*/true};
const ChatSpecialTokens kQwenTokens{"", "<|im_end|>", /*add_bos=*/false};

// llama.cpp's test-chat-template conversation.
const std::vector<ChatMessage> kConversation = {
    {"system", "You are a helpful assistant"},
    {"user", "Hello"},
    {"assistant", "Hi there"},
    {"user", "Who are you"},
    {"assistant", "   I am an assistant   "},
    {"user", "Another question"},
};
const std::vector<ChatMessage> kNoSystem(kConversation.begin() + 1,
                                         kConversation.end());
const std::vector<ChatMessage> kOneQuestion = {{"user", "Hi"}};

ChatTemplate Detected(const char* jinja, const ChatSpecialTokens& tokens) {
  absl::StatusOr<ChatTemplate> chat = ChatTemplate::Detect(jinja, tokens);
  EXPECT_TRUE(chat.ok()) << chat.status();
  return chat.ok() ? *chat : ChatTemplate::ForFamily(ChatFamily::kChatMl, tokens);
}

std::string Render(const ChatTemplate& chat,
                   const std::vector<ChatMessage>& messages,
                   bool add_generation_prompt = true) {
  absl::StatusOr<std::string> text = chat.Render(messages, add_generation_prompt);
  EXPECT_TRUE(text.ok()) << text.status();
  return text.ok() ? *text : "";
}

TEST(ChatTemplateTest, DetectsTheFamilyOfRealTemplates) {
  const struct {
    const char* name;
    const char* jinja;
    ChatFamily family;
  } cases[] = {
      {"qwen2.5", kQwen25, ChatFamily::kChatMl},
      {"qwen2", kQwen2, ChatFamily::kChatMl},
      {"openhermes", kOpenHermes, ChatFamily::kChatMl},
      {"llama3", kLlama3, ChatFamily::kLlama3},
      {"llama3.1", kLlama31, ChatFamily::kLlama31},
      {"llama2", kLlama2, ChatFamily::kLlama2},
      {"zephyr", kZephyr, ChatFamily::kZephyr},
      {"tinyllama", kTinyLlamaChat, ChatFamily::kZephyr},
      {"phi3", kPhi3, ChatFamily::kPhi3},
      {"phi4-mini", kPhi4Mini, ChatFamily::kPhi4},
      {"gemma2", kGemma2, ChatFamily::kGemma},
      {"gemma3", kGemma3, ChatFamily::kGemma},
      {"qwen3", kQwen3, ChatFamily::kQwen3},
      {"smollm2", kSmolLm2, ChatFamily::kChatMl},
      {"mistral-v3", kMistralV3, ChatFamily::kMistralV3},
      {"mistral-nemo", kMistralNemo, ChatFamily::kMistralTekken},
  };
  for (const auto& c : cases) {
    absl::StatusOr<ChatTemplate> chat =
        ChatTemplate::Detect(c.jinja, kSentencePieceTokens);
    ASSERT_TRUE(chat.ok()) << c.name << ": " << chat.status();
    EXPECT_EQ(chat->family(), c.family) << c.name;
  }
}

TEST(ChatTemplateTest, ChatMlTakesOverTheTemplatesDefaultSystemPrompt) {
  EXPECT_EQ(Detected(kQwen25, kQwenTokens).default_system_prompt(),
            "You are Qwen, created by Alibaba Cloud. You are a helpful "
            "assistant.");
  EXPECT_EQ(Detected(kQwen2, kQwenTokens).default_system_prompt(),
            "You are a helpful assistant.");
  EXPECT_EQ(Detected(kOpenHermes, kQwenTokens).default_system_prompt(),
            std::nullopt);
  EXPECT_EQ(Detected(kSmolLm2, kQwenTokens).default_system_prompt(),
            "You are a helpful AI assistant named SmolLM, trained by Hugging "
            "Face");
}

TEST(ChatTemplateTest, Qwen25) {
  const ChatTemplate chat = Detected(kQwen25, kQwenTokens);
  EXPECT_EQ(Render(chat, kConversation),
            "<|im_start|>system\nYou are a helpful assistant<|im_end|>\n"
            "<|im_start|>user\nHello<|im_end|>\n"
            "<|im_start|>assistant\nHi there<|im_end|>\n"
            "<|im_start|>user\nWho are you<|im_end|>\n"
            "<|im_start|>assistant\n   I am an assistant   <|im_end|>\n"
            "<|im_start|>user\nAnother question<|im_end|>\n"
            "<|im_start|>assistant\n");
  EXPECT_EQ(Render(chat, kOneQuestion),
            "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You "
            "are a helpful assistant.<|im_end|>\n"
            "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(Render(chat, kOneQuestion, /*add_generation_prompt=*/false),
            "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You "
            "are a helpful assistant.<|im_end|>\n"
            "<|im_start|>user\nHi<|im_end|>\n");
}

TEST(ChatTemplateTest, PlainChatMlHasNoDefaultSystemPrompt) {
  EXPECT_EQ(Render(Detected(kOpenHermes, kQwenTokens), kOneQuestion),
            "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(
      Render(ChatTemplate::ForFamily(ChatFamily::kChatMl, kQwenTokens),
             kOneQuestion),
      "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
}

TEST(ChatTemplateTest, Llama3) {
  const std::string turns =
      "<|start_header_id|>user<|end_header_id|>\n\nHello<|eot_id|>"
      "<|start_header_id|>assistant<|end_header_id|>\n\nHi there<|eot_id|>"
      "<|start_header_id|>user<|end_header_id|>\n\nWho are you<|eot_id|>"
      "<|start_header_id|>assistant<|end_header_id|>\n\nI am an "
      "assistant<|eot_id|>"
      "<|start_header_id|>user<|end_header_id|>\n\nAnother question<|eot_id|>";
  const std::string system =
      "<|start_header_id|>system<|end_header_id|>\n\nYou are a helpful "
      "assistant<|eot_id|>";
  const std::string prompt = "<|start_header_id|>assistant<|end_header_id|>\n\n";
  // The tokenizer adds <|begin_of_text|>: the text does not repeat it.
  const ChatTemplate chat = Detected(kLlama3, kLlama3Tokens);
  EXPECT_EQ(Render(chat, kConversation), system + turns + prompt);
  EXPECT_EQ(Render(chat, kNoSystem, false), turns);
  // A tokenizer that does not add BOS gets it as text.
  ChatSpecialTokens no_bos = kLlama3Tokens;
  no_bos.add_bos = false;
  EXPECT_EQ(Render(Detected(kLlama3, no_bos), kNoSystem),
            "<|begin_of_text|>" + turns + prompt);
}

TEST(ChatTemplateTest, Llama31AlwaysHasTheDatedSystemTurn) {
  const ChatTemplate chat = Detected(kLlama31, kLlama3Tokens);
  EXPECT_EQ(Render(chat, kOneQuestion),
            "<|start_header_id|>system<|end_header_id|>\n\n"
            "Cutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n"
            "<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
  ChatSpecialTokens no_bos = kLlama3Tokens;
  no_bos.add_bos = false;
  EXPECT_EQ(Render(Detected(kLlama31, no_bos).WithDateString("05 Mar 2025"),
                   {{"system", "  Be brief.\n"}, {"user", " Hi "}}, false),
            "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n"
            "Cutting Knowledge Date: December 2023\nToday Date: 05 Mar 2025\n\n"
            "Be brief.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\n"
            "Hi<|eot_id|>");
}

TEST(ChatTemplateTest, Llama2FoldsTheSystemMessageIntoTheFirstUserTurn) {
  const ChatTemplate chat = Detected(kLlama2, kSentencePieceTokens);
  EXPECT_EQ(Render(chat, kConversation),
            "[INST] <<SYS>>\nYou are a helpful assistant\n<</SYS>>\n\nHello "
            "[/INST] Hi there </s><s>[INST] Who are you [/INST] I am an "
            "assistant </s><s>[INST] Another question [/INST]");
  ChatSpecialTokens no_bos = kSentencePieceTokens;
  no_bos.add_bos = false;
  EXPECT_EQ(Render(Detected(kLlama2, no_bos), kOneQuestion),
            "<s>[INST] Hi [/INST]");
}

TEST(ChatTemplateTest, Llama2RejectsConversationsItCannotExpress) {
  const ChatTemplate chat = Detected(kLlama2, kSentencePieceTokens);
  for (const std::vector<ChatMessage>& bad :
       std::vector<std::vector<ChatMessage>>{
           {{"assistant", "Hi"}},
           {{"user", "a"}, {"user", "b"}},
           {{"user", "a"}, {"system", "late"}},
           {{"system", "only a system message"}},
       }) {
    absl::StatusOr<std::string> text = chat.Render(bad, true);
    EXPECT_EQ(text.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(text.status().message()),
                ::testing::AnyOf(HasSubstr("alternate"), HasSubstr("user message")));
  }
}

TEST(ChatTemplateTest, Zephyr) {
  const ChatTemplate chat = Detected(kTinyLlamaChat, kSentencePieceTokens);
  EXPECT_EQ(Render(chat, kConversation),
            "<|system|>\nYou are a helpful assistant</s>\n"
            "<|user|>\nHello</s>\n<|assistant|>\nHi there</s>\n"
            "<|user|>\nWho are you</s>\n"
            "<|assistant|>\n   I am an assistant   </s>\n"
            "<|user|>\nAnother question</s>\n<|assistant|>\n");
  EXPECT_EQ(Render(chat, kOneQuestion, false), "<|user|>\nHi</s>\n");
}

TEST(ChatTemplateTest, Phi3) {
  const ChatTemplate chat =
      Detected(kPhi3, ChatSpecialTokens{"<s>", "<|endoftext|>", false});
  EXPECT_EQ(Render(chat, kConversation),
            "<|system|>\nYou are a helpful assistant<|end|>\n"
            "<|user|>\nHello<|end|>\n<|assistant|>\nHi there<|end|>\n"
            "<|user|>\nWho are you<|end|>\n"
            "<|assistant|>\n   I am an assistant   <|end|>\n"
            "<|user|>\nAnother question<|end|>\n<|assistant|>\n");
  // Without a generation prompt the template ends with EOS.
  EXPECT_EQ(Render(chat, kOneQuestion, false),
            "<|user|>\nHi<|end|>\n<|endoftext|>");
}

TEST(ChatTemplateTest, Phi4Mini) {
  const ChatTemplate chat =
      Detected(kPhi4Mini, ChatSpecialTokens{"<|endoftext|>", "<|endoftext|>", false});
  EXPECT_EQ(Render(chat, kConversation),
            "<|system|>You are a helpful assistant<|end|><|user|>Hello<|end|>"
            "<|assistant|>Hi there<|end|><|user|>Who are you<|end|>"
            "<|assistant|>   I am an assistant   <|end|>"
            "<|user|>Another question<|end|><|assistant|>");
  EXPECT_EQ(Render(chat, kOneQuestion, false), "<|user|>Hi<|end|><|endoftext|>");
}

TEST(ChatTemplateTest, GemmaFoldsTheSystemMessageIntoTheFirstUserTurn) {
  const ChatSpecialTokens gemma_tokens{"<bos>", "<eos>", /*add_bos=*/true};
  const std::string expected =
      "<start_of_turn>user\nYou are a helpful assistant\n\nHello<end_of_turn>\n"
      "<start_of_turn>model\nHi there<end_of_turn>\n"
      "<start_of_turn>user\nWho are you<end_of_turn>\n"
      "<start_of_turn>model\nI am an assistant<end_of_turn>\n"
      "<start_of_turn>user\nAnother question<end_of_turn>\n"
      "<start_of_turn>model\n";
  EXPECT_EQ(Render(Detected(kGemma3, gemma_tokens), kConversation), expected);
  // The template's bos_token stays when the tokenizer does not add BOS.
  ChatSpecialTokens no_bos = gemma_tokens;
  no_bos.add_bos = false;
  EXPECT_EQ(Render(Detected(kGemma2, no_bos), kOneQuestion, false),
            "<bos><start_of_turn>user\nHi<end_of_turn>\n");
  // Turns must alternate user/model.
  absl::StatusOr<std::string> bad = Detected(kGemma3, gemma_tokens)
                                        .Render({{"user", "a"}, {"user", "b"}}, true);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("message 1"));
}

TEST(ChatTemplateTest, Qwen3) {
  const ChatTemplate chat = Detected(kQwen3, kQwenTokens);
  const std::string turns =
      "<|im_start|>system\nYou are a helpful assistant<|im_end|>\n"
      "<|im_start|>user\nHello<|im_end|>\n"
      "<|im_start|>assistant\nHi there<|im_end|>\n"
      "<|im_start|>user\nWho are you<|im_end|>\n"
      "<|im_start|>assistant\n   I am an assistant   <|im_end|>\n"
      "<|im_start|>user\nAnother question<|im_end|>\n";
  EXPECT_TRUE(chat.thinking());
  EXPECT_EQ(Render(chat, kConversation), turns + "<|im_start|>assistant\n");
  // enable_thinking=false: an empty reasoning block makes the model answer.
  EXPECT_EQ(Render(chat.WithThinking(false), kConversation),
            turns + "<|im_start|>assistant\n<think>\n\n</think>\n\n");
  // Replies before the last user message lose their reasoning ...
  EXPECT_EQ(Render(chat,
                   {{"user", "Hi"},
                    {"assistant", "<think>\nGreet back.\n</think>\n\nHello!"},
                    {"user", "Bye"}}),
            "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHello!<|im_end|>\n"
            "<|im_start|>user\nBye<|im_end|>\n<|im_start|>assistant\n");
  // ... the reply after it keeps it, and, being the last message, gets an
  // empty block when it had none.
  EXPECT_EQ(Render(chat, {{"user", "Hi"}, {"assistant", "<think>\nGreet.\n</think>\n\nHello!"}},
                   false),
            "<|im_start|>user\nHi<|im_end|>\n"
            "<|im_start|>assistant\n<think>\nGreet.\n</think>\n\nHello!<|im_end|>\n");
  EXPECT_EQ(Render(chat, {{"user", "Hi"}, {"assistant", "Hello!"}}, false),
            "<|im_start|>user\nHi<|im_end|>\n"
            "<|im_start|>assistant\n<think>\n\n</think>\n\nHello!<|im_end|>\n");
}

// A tool round trip: the call, then two results.
const std::vector<ChatMessage> kToolConversation = {
    {"user", "Weather in Oslo?"},
    {"assistant", "", {{"get_weather", R"({"city":"Oslo"})"}}},
    {"tool", "3 C"},
    {"tool", "rain"},
};
const std::vector<std::string> kTools = {
    R"({"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}})"};
// Qwen2.5's and Qwen3's tools system text after its first line.
constexpr char kHermesTools[] =
    "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n"
    R"({"type": "function", "function": {"name": "get_weather", "parameters": {"type": )"
    R"("object", "properties": {"city": {"type": "string"}}}}})"
    "\n</tools>\n\nFor each function call, return a json object with function name and "
    "arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": "
    "<function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n";
constexpr char kHermesResults[] =
    "<|im_start|>user\n<tool_response>\n3 C\n</tool_response>\n<tool_response>\nrain\n"
    "</tool_response><|im_end|>\n<|im_start|>assistant\n";

std::string RenderWithTools(const ChatTemplate& chat, const std::vector<ChatMessage>& messages,
                            const std::vector<std::string>& tools = kTools) {
  absl::StatusOr<std::string> text = chat.Render(messages, true, tools);
  EXPECT_TRUE(text.ok()) << text.status();
  return text.ok() ? *text : "";
}

// The message of Render's error ("" when it renders).
std::string RenderError(const ChatTemplate& chat, const std::vector<ChatMessage>& messages,
                        const std::vector<std::string>& tools = {}) {
  return std::string(chat.Render(messages, true, tools).status().message());
}

TEST(ChatTemplateTest, Qwen25RendersToolsCallsAndResults) {
  const ChatTemplate chat = Detected(kQwen25, kQwenTokens);
  EXPECT_TRUE(chat.supports_tools());
  // The default system prompt, then the tools; the call's arguments as
  // tojson writes them.
  EXPECT_EQ(RenderWithTools(chat, kToolConversation),
            std::string("<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a "
                        "helpful assistant.\n\n") +
                kHermesTools +
                "<|im_start|>user\nWeather in Oslo?<|im_end|>\n"
                "<|im_start|>assistant\n<tool_call>\n{\"name\": \"get_weather\", "
                "\"arguments\": {\"city\": \"Oslo\"}}\n</tool_call><|im_end|>\n" +
                kHermesResults);
  // A system message replaces the default; content comes before the calls.
  EXPECT_EQ(
      RenderWithTools(chat, {{"system", "Be brief."},
                             {"user", "Hi"},
                             {"assistant", "Looking.", {{"f", "{}"}, {"g", "{\"a\":[1,2]}"}}}}),
      std::string("<|im_start|>system\nBe brief.\n\n") + kHermesTools +
          "<|im_start|>user\nHi<|im_end|>\n"
          "<|im_start|>assistant\nLooking.\n<tool_call>\n{\"name\": \"f\", \"arguments\": "
          "{}}\n</tool_call>\n<tool_call>\n{\"name\": \"g\", \"arguments\": "
          "{\"a\": [1, 2]}}\n</tool_call><|im_end|>\n<|im_start|>assistant\n");
}

TEST(ChatTemplateTest, Qwen3RendersToolsCallsAndResults) {
  const ChatTemplate chat = Detected(kQwen3, kQwenTokens);
  EXPECT_TRUE(chat.supports_tools());
  // No system message: the tools alone; the arguments text as given.
  EXPECT_EQ(RenderWithTools(chat, kToolConversation),
            std::string("<|im_start|>system\n") + kHermesTools +
                "<|im_start|>user\nWeather in Oslo?<|im_end|>\n"
                "<|im_start|>assistant\n<tool_call>\n{\"name\": \"get_weather\", "
                "\"arguments\": {\"city\":\"Oslo\"}}\n</tool_call><|im_end|>\n" +
                kHermesResults);
  // Tool results in the history render without tools too.
  EXPECT_EQ(RenderWithTools(chat, {{"user", "Hi"}, {"tool", "x"}}, {}),
            "<|im_start|>user\nHi<|im_end|>\n<|im_start|>user\n<tool_response>\nx\n"
            "</tool_response><|im_end|>\n<|im_start|>assistant\n");
}

TEST(ChatTemplateTest, Llama31PutsToolsIntoTheFirstUserMessage) {
  const ChatTemplate chat = Detected(kLlama31, kLlama3Tokens);
  EXPECT_TRUE(chat.supports_tools());
  EXPECT_EQ(RenderWithTools(chat, kToolConversation),
            "<|start_header_id|>system<|end_header_id|>\n\nEnvironment: ipython\n"
            "Cutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nGiven the following functions, please "
            "respond with a JSON for a function call with its proper arguments that best "
            "answers the given prompt.\n\nRespond in the format {\"name\": function name, "
            "\"parameters\": dictionary of argument name and its value}.Do not use "
            "variables.\n\n{\n    \"type\": \"function\",\n    \"function\": {\n        "
            "\"name\": \"get_weather\",\n        \"parameters\": {\n            \"type\": "
            "\"object\",\n            \"properties\": {\n                \"city\": {\n"
            "                    \"type\": \"string\"\n                }\n            }\n"
            "        }\n    }\n}\n\nWeather in Oslo?<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n{\"name\": \"get_weather\", "
            "\"parameters\": {\"city\": \"Oslo\"}}<|eot_id|>"
            "<|start_header_id|>ipython<|end_header_id|>\n\n\"3 C\"<|eot_id|>"
            "<|start_header_id|>ipython<|end_header_id|>\n\n\"rain\"<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
  // One call per message, and a user message to carry the tools.
  EXPECT_THAT(RenderError(chat, {{"user", "x"}, {"assistant", "", {{"f", "{}"}, {"g", "{}"}}}}),
              HasSubstr("one tool call per assistant message"));
  EXPECT_THAT(RenderError(chat, {{"assistant", "x"}}, kTools),
              HasSubstr("give a user message first"));
}

TEST(ChatTemplateTest, TemplatesWithoutToolCallingRefuseTools) {
  for (const ChatTemplate& chat :
       {Detected(kQwen2, kQwenTokens), Detected(kLlama3, kLlama3Tokens),
        ChatTemplate::ForFamily(ChatFamily::kChatMl, kQwenTokens),
        ChatTemplate::ForFamily(ChatFamily::kGemma, kSentencePieceTokens)}) {
    EXPECT_FALSE(chat.supports_tools());
    EXPECT_THAT(RenderError(chat, kOneQuestion, kTools), HasSubstr("does not define tool calling"));
    EXPECT_THAT(RenderError(chat, kToolConversation), HasSubstr("does not define tool calling"));
  }
  // Arguments and definitions must be JSON objects.
  const ChatTemplate qwen3 = Detected(kQwen3, kQwenTokens);
  EXPECT_THAT(RenderError(qwen3, {{"user", "x"}, {"assistant", "", {{"f", "[1]"}}}}),
              HasSubstr("not a JSON object"));
  EXPECT_THAT(RenderError(qwen3, kOneQuestion, {"[]"}), HasSubstr("tool 0 is not a JSON object"));
  EXPECT_THAT(RenderError(qwen3, {{"user", "x", {{"f", "{}"}}}}),
              HasSubstr("not an assistant message"));
}

void ExpectSplit(const std::string& reply, const std::string& reasoning,
                 const std::string& answer) {
  const ReasoningReply split = SplitReasoning(reply);
  EXPECT_EQ(split.reasoning, reasoning) << reply;
  EXPECT_EQ(split.answer, answer) << reply;
}

TEST(ChatTemplateTest, SplitReasoningSeparatesTheThinkBlockFromTheAnswer) {
  ExpectSplit("<think>\nStep 1.\nStep 2.\n</think>\n\nThe answer.", "Step 1.\nStep 2.",
              "The answer.");
  // The generation prompt may hold the opening tag already.
  ExpectSplit("Plan.\n</think>\n\nDone", "Plan.", "Done");
  // An empty block (enable_thinking=false) and no block at all.
  ExpectSplit("<think>\n\n</think>\n\nHi", "", "Hi");
  ExpectSplit("Just text <thinking>", "", "Just text <thinking>");
  // Generation stopped while the model was reasoning.
  ExpectSplit("<think>\nHalf a tho", "Half a tho", "");
}

TEST(ChatTemplateTest, MistralPutsTheSystemMessageBeforeTheLastUserMessage) {
  EXPECT_EQ(Render(Detected(kMistralV3, kSentencePieceTokens), kConversation),
            "[INST] Hello[/INST] Hi there</s>[INST] Who are you[/INST] I am an "
            "assistant</s>[INST] You are a helpful assistant\n\nAnother question[/INST]");
  EXPECT_EQ(Render(Detected(kMistralNemo, kSentencePieceTokens), kConversation),
            "[INST]Hello[/INST]Hi there</s>[INST]Who are you[/INST]   I am an "
            "assistant   </s>[INST]You are a helpful assistant\n\nAnother question[/INST]");
  ChatSpecialTokens no_bos = kSentencePieceTokens;
  no_bos.add_bos = false;
  EXPECT_EQ(Render(Detected(kMistralV3, no_bos), kOneQuestion), "<s>[INST] Hi[/INST]");
  absl::StatusOr<std::string> bad = Detected(kMistralNemo, kSentencePieceTokens)
                                        .Render({{"assistant", "a"}}, true);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("mistral-tekken"));
}

TEST(ChatTemplateTest, UnknownOrMissingTemplatesNameTheSupportedFamilies) {
  for (const char* jinja :
       {kMistral, "{{ messages[0]['content'] }}", "<|user|>{{ m }}"}) {
    absl::StatusOr<ChatTemplate> chat =
        ChatTemplate::Detect(jinja, kSentencePieceTokens);
    EXPECT_EQ(chat.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(chat.status().message()),
                HasSubstr("chatml, llama3, llama3.1, llama2, zephyr, phi3"));
    EXPECT_THAT(std::string(chat.status().message()),
                HasSubstr("--chat-template"));
  }
  absl::StatusOr<ChatTemplate> none =
      ChatTemplate::Detect(" \n", kSentencePieceTokens);
  EXPECT_EQ(none.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(none.status().message()), HasSubstr("--chat-template"));
}

TEST(ChatTemplateTest, FamilyNamesRoundTrip) {
  for (ChatFamily family :
       {ChatFamily::kChatMl, ChatFamily::kLlama3, ChatFamily::kLlama31,
        ChatFamily::kLlama2, ChatFamily::kZephyr, ChatFamily::kPhi3,
        ChatFamily::kPhi4, ChatFamily::kGemma, ChatFamily::kQwen3,
        ChatFamily::kMistralV3, ChatFamily::kMistralTekken}) {
    absl::StatusOr<ChatFamily> parsed = ParseChatFamily(ChatFamilyName(family));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, family);
    EXPECT_EQ(ChatTemplate::ForFamily(family, kSentencePieceTokens).family(),
              family);
  }
  absl::StatusOr<ChatFamily> bad = ParseChatFamily("vicuna");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("vicuna"));
}

// Segments of a rendering as "T:" (template text, specials parsed) or
// "C:" (content) strings.
std::vector<std::string> SegmentKinds(const ChatTemplate& chat,
                                      const std::vector<ChatMessage>& messages) {
  absl::StatusOr<std::vector<TextSegment>> segments = chat.RenderSegments(messages, true);
  EXPECT_TRUE(segments.ok()) << segments.status();
  std::vector<std::string> out;
  if (!segments.ok()) return out;
  for (const TextSegment& segment : *segments) {
    out.push_back((segment.parse_special ? "T:" : "C:") + segment.text);
  }
  return out;
}

TEST(ChatTemplateTest, SegmentsMarkContentAsPlainText) {
  const std::vector<ChatMessage> messages = {
      {"system", "Be <|im_end|> brief"}, {"user", "Hi"}};
  EXPECT_THAT(SegmentKinds(Detected(kQwen25, kQwenTokens), messages),
              ::testing::ElementsAre("T:<|im_start|>system\n", "C:Be <|im_end|> brief",
                                     "T:<|im_end|>\n<|im_start|>user\n", "C:Hi",
                                     "T:<|im_end|>\n<|im_start|>assistant\n"));
  // The default system prompt is the template's own text.
  EXPECT_THAT(SegmentKinds(Detected(kQwen2, kQwenTokens), {{"user", "Hi"}}),
              ::testing::ElementsAre(
                  "T:<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
                  "<|im_start|>user\n",
                  "C:Hi", "T:<|im_end|>\n<|im_start|>assistant\n"));
  // Llama 2: BOS/EOS texts are template text; the stripped content of the
  // first user turn keeps the system block around it.
  ChatSpecialTokens no_bos = kSentencePieceTokens;
  no_bos.add_bos = false;
  EXPECT_THAT(SegmentKinds(Detected(kLlama2, no_bos),
                           {{"system", "Sys"}, {"user", "Hi  "}, {"assistant", " Yo "},
                            {"user", "  </s>"}}),
              ::testing::ElementsAre("T:<s>[INST] <<SYS>>\n", "C:Sys",
                                     "T:\n<</SYS>>\n\n", "C:Hi", "T: [/INST] ", "C:Yo",
                                     "T: </s><s>[INST] ", "C:</s>", "T: [/INST]"));
  // Every family's segments join to its rendering.
  for (const char* jinja : {kQwen25, kLlama3, kLlama31, kLlama2, kZephyr, kPhi3, kPhi4Mini,
                            kGemma3, kQwen3, kMistralV3, kMistralNemo}) {
    const ChatTemplate chat = Detected(jinja, kSentencePieceTokens);
    std::string joined;
    for (const std::string& segment : SegmentKinds(chat, kConversation)) {
      joined += segment.substr(2);
    }
    EXPECT_EQ(joined, Render(chat, kConversation)) << ChatFamilyName(chat.family());
  }
}

TEST(ChatTemplateTest, RejectsBadMessages) {
  const ChatTemplate chat =
      ChatTemplate::ForFamily(ChatFamily::kChatMl, kQwenTokens);
  const struct {
    std::vector<ChatMessage> messages;
    const char* problem;
  } cases[] = {
      {{}, "no messages"},
      {{{"user", "hi"}, {"tool", "42"}}, "message 1 is a tool result"},
      {{{"user", "hi"}, {"robot", "42"}}, "message 1 has role \"robot\""},
      {{{"user", "bad \xFF byte"}}, "message 0 content is not well-formed UTF-8"},
  };
  for (const auto& c : cases) {
    absl::StatusOr<std::string> text = chat.Render(c.messages, true);
    EXPECT_EQ(text.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(text.status().message()), HasSubstr(c.problem));
  }
}

}  // namespace
}  // namespace lnpu::framework
