# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# Offline stand-in for @rules_java (see rules_cc/cc/defs.bzl for why).
java_binary = native.java_binary
java_import = native.java_import
java_library = native.java_library
java_runtime = native.java_runtime
java_toolchain = native.java_toolchain
