// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Running a fuzz target's inputs without libFuzzer: the files of a corpus or crash folder, each
// handed once to LLVMFuzzerTestOneInput. The replay main (normal builds of every fuzz target)
// and the corpus tests (GoogleTest, part of `bazel test //...`) share it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);
extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) __attribute__((weak));

namespace softdat::fuzz {

// The regular files under each path (a file stands for itself), sorted; missing paths give none.
std::vector<std::string> InputFiles(const std::vector<std::string>& paths);

// Reads `path` whole and runs it through the target; false (with `why`) if it cannot be read.
bool ReplayFile(const std::string& path, std::string& why);

}  // namespace softdat::fuzz
