#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""Checks that every C/C++ target which includes a system library's headers declares it, and that
no include runs from a lower layer up to a higher one.

The system libraries come from /usr through new_local_repository (WORKSPACE), so the compiler
finds their headers whether or not a target depends on them, and Bazel cannot tell an undeclared
include. This does: for every cc_* rule in the workspace, each `#include <prefix/...>` of a
library below must be matched by a direct dependency on one of that library's targets.
Exit status 1 and one line per offence ("file: includes <...> but target ... does not depend on
...", or "file: includes "..." of a higher layer ...") when any is found. The layers are those of
docs/ARCHITECTURE.md (MAY_INCLUDE below); Bazel visibility cannot tell a header that is only
included, nor a testonly helper kept in a lower package that reaches up to testing/. Run by `tools/dev test` before the tests; `--self-test` checks the
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
QUOTED_INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.MULTILINE)

# The layers of docs/ARCHITECTURE.md: which layers the code of each (every rule but a cc_test) may
# include. A transport backend (transport/tcp, transport/verbs, ...) is one layer; backends sit
# side by side. Layers not named here (testing, tools, examples) may include anything.
BACKEND = "transport/<backend>"
MAY_INCLUDE = {
    "base": {"base"},
    "evd": {"evd", "base"},
    "srq": {"srq", "base"},
    "transport": {"transport", "base"},
    BACKEND: {BACKEND, "transport", "base"},
    "core": {"core", "srq", "evd", "transport", "base"},
    "dat": {"dat", "core", "transport", "base"},
}
# The one switch that names the backends (transport/factory.cc).
MAY_ALSO_INCLUDE = {"//transport:factory": {BACKEND}}


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


def layer(path):
    parts = path.split("/")
    if parts[0] == "transport" and len(parts) > 2:
        return BACKEND
    return parts[0]


def layering_offences(rule_name, rule_class, sources, read):
    """The upward includes of one rule (none for a test: tests sit above every layer)."""
    if rule_class == "cc_test":
        return []
    found = []
    for path in sources:
        allowed = MAY_INCLUDE.get(layer(path))
        text = read(path)
        if allowed is None or text is None:
            continue
        allowed = allowed | MAY_ALSO_INCLUDE.get(rule_name, set())
        for header in QUOTED_INCLUDE.findall(text):
            if "/" in header and layer(header) not in allowed:
                found.append(f'{path}: includes "{header}" of a higher layer ({layer(header)}); '
                             f'{rule_name} is in {layer(path)}, which may include '
                             f'{", ".join(sorted(allowed))}')
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
        problems += layering_offences(rule.get("name"), rule.get("class"), sources, read_file)
    return problems


def self_test():
    files = {"a/x.cc": "#include <dat2/udat.h>\n#include <vector>\n", "a/y.h": '#include "a/x.h"\n'}
    bad = offences("//a:x", ["//base:status"], ["a/x.cc", "a/y.h"], files.get)
    good = offences("//a:x", ["@dat2//:headers"], ["a/x.cc"], files.get)
    shorthand = offences("//a:t", ["@gtest"], ["a/t.cc"], {"a/t.cc": "#include <gtest/gtest.h>"}.get)
    assert len(bad) == 1 and "dat2/udat.h" in bad[0], bad
    assert good == [] and shorthand == [], (good, shorthand)
    layered = {"core/f.h": '#include "testing/x/y.h"\n#include "srq/z.h"\n',
               "transport/tcp/a.cc": '#include "transport/verbs/b.h"\n#include "core/ep.h"\n',
               "transport/f.cc": '#include "transport/tcp/t.h"\n'}
    upward = layering_offences("//core:f", "cc_library", ["core/f.h"], layered.get)
    from_test = layering_offences("//core:f_test", "cc_test", ["core/f.h"], layered.get)
    backend = layering_offences("//transport/tcp:a", "cc_library", ["transport/tcp/a.cc"], layered.get)
    switch = layering_offences("//transport:factory", "cc_library", ["transport/f.cc"], layered.get)
    elsewhere = layering_offences("//transport:x", "cc_library", ["transport/f.cc"], layered.get)
    assert len(upward) == 1 and "testing/x/y.h" in upward[0], upward
    assert from_test == [] and switch == [], (from_test, switch)
    assert len(backend) == 1 and "core/ep.h" in backend[0], backend
    assert len(elsewhere) == 1 and "transport/tcp/t.h" in elsewhere[0], elsewhere
    print("check_includes: self-test passed")


def main():
    if sys.argv[1:] == ["--self-test"]:
        self_test()
        return 0
    problems = check_workspace()
    for line in problems:
        print(line)
    if problems:
        print(f"check_includes: {len(problems)} undeclared system or upward include(s)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
