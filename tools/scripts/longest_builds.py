#!/usr/bin/env python3
"""Prints the longest build edges of each build directory, one line each.

Usage: longest_builds.py COUNT BUILD_DIR...

Reads ninja's log (BUILD_DIR/.ninja_log, format v5: start and end in ms,
mtime, output, command hash per line) and takes the last record of each
output, i.e. its latest build. Wall times: an edge that shared the cores
with others took longer than its CPU time. test.sh prints this before its
totals so that a compile that grew by minutes shows in CI's log.
A directory without a log is named as such.
"""
import os
import sys


def longest(build_dir, count):
    path = os.path.join(build_dir, ".ninja_log")
    latest = {}
    try:
        with open(path, encoding="utf-8") as log:
            for line in log:
                if line.startswith("#"):
                    continue
                fields = line.rstrip("\n").split("\t")
                if len(fields) != 5 or not fields[0].isdigit() or not fields[1].isdigit():
                    continue
                latest[fields[3]] = (int(fields[1]) - int(fields[0])) / 1000
    except OSError as error:
        return f"no build log ({error.strerror})"
    if not latest:
        return "no edges in its log"
    edges = sorted(latest.items(), key=lambda item: -item[1])[:count]
    return ", ".join(f"{seconds:.0f} s {os.path.basename(output)}" for output, seconds in edges)


def main(argv):
    if len(argv) < 3 or not argv[1].isdigit():
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    count = int(argv[1])
    for build_dir in argv[2:]:
        print(f"longest edges of {os.path.basename(os.path.normpath(build_dir))}: "
              f"{longest(build_dir, count)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
