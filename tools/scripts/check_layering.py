#!/usr/bin/env python3
"""Fails when a library includes a header of a layer above it.

The layers, bottom up (DEVELOPERS.md): base, kernel_iface, compiler_artifacts,
runtime, framework, then tools and tests. Each rule below lists the folders
whose headers files under a folder may include; the longest matching folder
decides. Run by the build (meson custom target), so a wrong-way include
fails to build. Usage: check_layering.py SOURCE_ROOT STAMP_FILE
"""
import os
import re
import sys

RULES = {
    "base": ["base"],
    "kernel_iface/uapi": ["kernel_iface/uapi"],
    # The software NPU implements the driver's KernelFile seam.
    "kernel_iface/softnpu": ["base", "kernel_iface/uapi", "kernel_iface/softnpu",
                             "kernel_iface/driver/kernel_file.h"],
    "kernel_iface/driver": ["base", "kernel_iface/uapi", "kernel_iface/driver",
                            "kernel_iface/softnpu/soft_npu.h"],
    "compiler_artifacts/gguf": ["base", "compiler_artifacts/gguf"],
    "compiler_artifacts/format": ["base", "kernel_iface/uapi", "compiler_artifacts/format"],
    "compiler_artifacts": ["base", "kernel_iface/uapi", "compiler_artifacts"],
    # gguf: the Q6_K to Q8_0 conversion of a copy (runtime/model.cc).
    "runtime": ["base", "kernel_iface/uapi", "kernel_iface/driver",
                "compiler_artifacts/format", "compiler_artifacts/gguf", "runtime"],
    "framework/tokenizer": ["base", "framework/tokenizer"],
    "framework": ["base", "kernel_iface/driver", "runtime", "framework"],
}
LIBRARY_FOLDERS = ("base", "kernel_iface", "compiler_artifacts", "runtime", "framework")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def rule_for(path):
    best = None
    for folder in RULES:
        if path == folder or path.startswith(folder + "/"):
            if best is None or len(folder) > len(best):
                best = folder
    return best


def allowed(include, prefixes):
    return any(include == p or include.startswith(p + "/") for p in prefixes)


def main():
    root, stamp = sys.argv[1], sys.argv[2]
    errors = []
    for top in LIBRARY_FOLDERS:
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            for name in files:
                if not name.endswith((".h", ".cc", ".c", ".inc")):
                    continue
                path = os.path.relpath(os.path.join(dirpath, name), root)
                rule = rule_for(path)
                if rule is None:
                    continue
                with open(os.path.join(root, path), encoding="utf-8") as f:
                    text = f.read()
                for include in INCLUDE.findall(text):
                    # Project headers only: same-folder generated headers and
                    # third-party headers are not layer paths.
                    if "/" not in include or include.split("/")[0] not in LIBRARY_FOLDERS + ("tools", "tests"):
                        continue
                    if not allowed(include, RULES[rule]):
                        errors.append(f"{path}: includes \"{include}\", which is not in a layer "
                                      f"{rule}/ may use ({', '.join(RULES[rule])}); see DEVELOPERS.md")
    if errors:
        sys.stderr.write("layering violations:\n  " + "\n  ".join(errors) + "\n")
        return 1
    with open(stamp, "w") as f:
        f.write("ok\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
