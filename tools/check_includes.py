#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""Checks that every C/C++ target which includes a system library's headers declares it.

The system libraries come from /usr through new_local_repository (WORKSPACE), so the compiler
finds their headers whether or not a target depends on them, and Bazel cannot tell an undeclared
include. This does: for every cc_* rule in the workspace, each `#include <prefix/...>` of a
library below must be matched by a direct dependency on one of that library's targets.
Exit status 1 and one line per offence ("file: includes <...> but target ... does not depend on
...") when any is found. Run by `tools/dev test` before the tests; `--self-test` checks the
checker on a made-up target.
"""
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

# Include prefix -> the labels a target may depend on to get it.
LIBRARIES = {
    "dat2/": ("@dat2//:headers", "@dat2//:registry"),
    "boost/": ("@boost//:asio",),
    "infiniband/": ("@ibverbs//:ibverbs",),
    "rdma/": ("@rdmacm//:rdmacm",),
    "gtest/": ("@gtest//:gtest", "@gtest//:gtest_main"),
    "gmock/": ("@gtest//:gtest", "@gtest//:gtest_main"),
    "benchmark/": ("@benchmark//:benchmark", "@benchmark//:benchmark_main"),
    "isa-l/": ("@isal//:isal",),
    "pcap/": ("@pcap//:pcap",),
}
INCLUDE = re.compile(r'^\s*#\s*include\s*<([^>]+)>', re.MULTILINE)


def normalize(label):
    # "@boost//:asio" and "@boost//:asio" are the same; "@gtest" means "@gtest//:gtest".
    if label.startswith("@") and "//" not in label:
        name = label[1:]
        return f"@{name}//:{name}"
    return label


def offences(rule_name, deps, sources, read):
    """The offence lines of one rule: `sources` are workspace paths, `read` returns their text."""
    declared = {normalize(d) for d in deps}
    found = []
    for path in sources:
        text = read(path)
        if text is None:
            continue
        for header in INCLUDE.findall(text):
            for prefix, labels in LIBRARIES.items():
                if header.startswith(prefix) and not declared.intersection(labels):
                    found.append(f"{path}: includes <{header}> but {rule_name} does not depend on "
                                 f"{' or '.join(labels)}")
    return found


def label_to_path(label):
    if not label.startswith("//"):
        return None
    package, _, name = label[2:].partition(":")
    return f"{package}/{name}" if package else name


def read_file(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return None


def check_workspace():
    xml = subprocess.run(
        ["bazel", "query", "--output=xml", 'kind("cc_(library|binary|test) rule", //...)'],
        check=True, capture_output=True, text=True).stdout
    problems = []
    for rule in ET.fromstring(xml).iter("rule"):
        sources, deps = [], []
        for attribute in rule.iter("list"):
            values = [e.get("value") for e in attribute.iter("label")]
            if attribute.get("name") in ("srcs", "hdrs"):
                sources += [p for p in map(label_to_path, values) if p]
            elif attribute.get("name") == "deps":
                deps += values
        problems += offences(rule.get("name"), deps, sources, read_file)
    return problems


def self_test():
    files = {"a/x.cc": "#include <dat2/udat.h>\n#include <vector>\n", "a/y.h": '#include "a/x.h"\n'}
    bad = offences("//a:x", ["//base:status"], ["a/x.cc", "a/y.h"], files.get)
    good = offences("//a:x", ["@dat2//:headers"], ["a/x.cc"], files.get)
    shorthand = offences("//a:t", ["@gtest"], ["a/t.cc"], {"a/t.cc": "#include <gtest/gtest.h>"}.get)
    assert len(bad) == 1 and "dat2/udat.h" in bad[0], bad
    assert good == [] and shorthand == [], (good, shorthand)
    print("check_includes: self-test passed")


def main():
    if sys.argv[1:] == ["--self-test"]:
        self_test()
        return 0
    problems = check_workspace()
    for line in problems:
        print(line)
    if problems:
        print(f"check_includes: {len(problems)} undeclared system include(s)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
