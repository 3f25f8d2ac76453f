#!/usr/bin/env python3
"""Counts test cases in JUnit files; the last line printed is 'N passed, N failed'.

Usage: count_tests.py JUNIT.xml...

With protocol 'gtest', meson records each GoogleTest case as a testcase;
a suite that crashed before reporting its cases counts as one failure.
A file that is missing or does not parse counts as one failure.
Exits 1 when anything failed or nothing ran.
"""
import sys
import xml.etree.ElementTree as ET


def main(paths):
    passed = failed = skipped = 0
    for path in paths:
        try:
            root = ET.parse(path).getroot()
        except (OSError, ET.ParseError) as error:
            print(f"count_tests: {path}: {error}", file=sys.stderr)
            failed += 1
            continue
        for case in root.iter("testcase"):
            if case.find("failure") is not None or case.find("error") is not None:
                failed += 1
            elif case.find("skipped") is not None:
                skipped += 1
            else:
                passed += 1
    # The last line is exactly "N passed, N failed" (CI reads it); skipped
    # cases, which are neither, are reported on the line before.
    if skipped:
        print(f"{skipped} skipped (not counted below)")
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 and passed > 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
