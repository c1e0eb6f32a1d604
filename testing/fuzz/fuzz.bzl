# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""softdat_fuzz_target: one libFuzzer target, its replay binary and its corpus test."""

def softdat_fuzz_target(name, srcs, deps, data = [], copts = []):
    """Declares the targets of fuzz target `name` (e.g. "fpdu").

    :<name>_fuzzer_lib      the harness (LLVMFuzzerTestOneInput), alwayslink
    :<name>_fuzzer          with --config=fuzz a libFuzzer binary; otherwise the replay main
                            (runs the files it is given once: crash inputs under any --config)
    :<name>_corpus_test     GoogleTest: every input in corpus/<name>/ runs clean
    """
    native.cc_library(
        name = name + "_fuzzer_lib",
        testonly = True,
        srcs = srcs,
        copts = copts,
        deps = deps,
        alwayslink = True,
    )
    native.cc_binary(
        name = name + "_fuzzer",
        testonly = True,
        data = data,
        linkopts = select({
            ":libfuzzer": ["-fsanitize=fuzzer"],
            "//conditions:default": [],
        }),
        deps = [":" + name + "_fuzzer_lib"] + select({
            ":libfuzzer": [],
            "//conditions:default": [":replay_main"],
        }),
    )
    native.cc_test(
        name = name + "_corpus_test",
        size = "small",
        args = ["testing/fuzz/corpus/" + name],
        data = native.glob(["corpus/" + name + "/**"]) + data,
        deps = [
            ":" + name + "_fuzzer_lib",
            ":corpus_test_main",
        ],
    )
