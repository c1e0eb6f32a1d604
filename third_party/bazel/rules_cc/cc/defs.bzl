# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# Offline stand-in for @rules_cc: Bazel 4.2.3 (Debian bazel-bootstrap) asks for this repository
# for every cc_* rule; re-exporting the native rules keeps the build free of downloads.
cc_binary = native.cc_binary
cc_import = native.cc_import
cc_library = native.cc_library
cc_test = native.cc_test
cc_toolchain = native.cc_toolchain
cc_toolchain_suite = native.cc_toolchain_suite
