#!/usr/bin/env bash
# The main job: build, compile the bundled stories260K model for the NPU and
# generate a story on the default device (the software NPU when no lnpu
# device node exists).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
source "$repo/tools/scripts/setup.sh"
"$build_dir/tools/npu-info/npu-info"
"$build_dir/tools/npu-compile/npu-compile" "$repo/models/stories260K.gguf" \
  -o "$build_dir/stories260K.lnpu"
"$build_dir/tools/npu-llm/npu-llm" -m "$build_dir/stories260K.lnpu" \
  -p "${PROMPT:-Once upon a time}" -n "${TOKENS:-200}"
