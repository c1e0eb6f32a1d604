// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// For tests that touch memory the provider places into or sends from, on purpose and without
// synchronizing, as a consumer may with an RNIC's DMA (a spin on memory an RDMA Write lands in): ThreadSanitizer is told to ignore
// this thread's accesses inside the scope, so the test runs under TSan with its meaning intact.
// Outside TSan builds the scopes do nothing.
#pragma once

#if defined(__SANITIZE_THREAD__)
extern "C" void AnnotateIgnoreReadsBegin(const char* file, int line);
extern "C" void AnnotateIgnoreReadsEnd(const char* file, int line);
extern "C" void AnnotateIgnoreWritesBegin(const char* file, int line);
extern "C" void AnnotateIgnoreWritesEnd(const char* file, int line);
#endif

namespace softdat::testing {

// This thread's reads in the scope race with the progress thread's placement by design.
class DeliberatelyRacyReads {
 public:
#if defined(__SANITIZE_THREAD__)
  DeliberatelyRacyReads() { AnnotateIgnoreReadsBegin(__FILE__, __LINE__); }
  ~DeliberatelyRacyReads() { AnnotateIgnoreReadsEnd(__FILE__, __LINE__); }
#else
  DeliberatelyRacyReads() {}  // user-provided: a scope object, never "unused"
#endif
  DeliberatelyRacyReads(const DeliberatelyRacyReads&) = delete;
  DeliberatelyRacyReads& operator=(const DeliberatelyRacyReads&) = delete;
};

// This thread's writes in the scope race with the progress thread's reads by design.
class DeliberatelyRacyWrites {
 public:
#if defined(__SANITIZE_THREAD__)
  DeliberatelyRacyWrites() { AnnotateIgnoreWritesBegin(__FILE__, __LINE__); }
  ~DeliberatelyRacyWrites() { AnnotateIgnoreWritesEnd(__FILE__, __LINE__); }
#else
  DeliberatelyRacyWrites() {}
#endif
  DeliberatelyRacyWrites(const DeliberatelyRacyWrites&) = delete;
  DeliberatelyRacyWrites& operator=(const DeliberatelyRacyWrites&) = delete;
};

}  // namespace softdat::testing
