#!/usr/bin/env python3
"""Counts test cases in JUnit files; the last line printed is 'N passed, N failed'.

Usage: count_tests.py JUNIT.xml...

With protocol 'gtest', meson records each GoogleTest case as a testcase;
a suite that crashed before reporting its cases counts as one failure.
A file that is missing or does not parse counts as one failure.
Each failed case is named (FILE: SUITE.CASE) before the counts, so that a
log cut to its last lines still says what failed. Exits 1 when anything
failed or nothing ran.
"""
import os
import sys
import xml.etree.ElementTree as ET


def main(paths):
    passed = skipped = 0
    failures = []
    for path in paths:
        run = os.path.splitext(os.path.basename(path))[0]
        try:
            root = ET.parse(path).getroot()
        except (OSError, ET.ParseError) as error:
            print(f"count_tests: {path}: {error}", file=sys.stderr)
            failures.append(f"{run}: unreadable results ({error})")
            continue
        suite_of = {case: suite for suite in root.iter("testsuite") for case in suite}
        for case in root.iter("testcase"):
            if case.find("failure") is not None or case.find("error") is not None:
                suite = suite_of.get(case)
                classname = case.get("classname") or (suite.get("name") if suite is not None else "?")
                failures.append(f"{run}: {classname}.{case.get('name', '?')}")
            elif case.find("skipped") is not None:
                skipped += 1
            else:
                passed += 1
    failed = len(failures)
    # The last line is exactly "N passed, N failed" (CI reads it); skipped
    # cases, which are neither, are reported on the line before.
    for failure in failures:
        print(f"failed: {failure}")
    if skipped:
        print(f"{skipped} skipped (not counted below)")
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 and passed > 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
