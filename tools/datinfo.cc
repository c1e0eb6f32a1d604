// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// datinfo: what the DAT registry offers and what each IA reports, as ibv_devinfo and fi_info do
// for verbs devices and libfabric providers. It opens each IA through the stock libdat2 (any
// provider, not only softdat) and prints its IA and provider attributes.
//
// Usage: datinfo [-a] [-l | -v | --json] [IA ...] | -e | -V   (datinfo --help; datinfo(1))
//
// Standard output is datinfo's own: other providers write to it while their IAs open (OFED's
// libdaplofa prints "open_hca: getaddr_netdev ERROR" there), so fd 1 points at stderr for the
// whole run and the report goes to a copy of the original fd 1; what a provider writes while one
// of its IAs opens is captured and shown with that IA (tools/datinfo_capture.h).
#include <dat2/udat.h>
#include <dlfcn.h>
#include <getopt.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "base/build_info.h"
#include "base/log.h"
#include "tools/dat_conf_file.h"
#include "tools/datinfo_capture.h"
#include "tools/datinfo_report.h"
#include "transport/ia_params.h"

namespace softdat::tools {
namespace {

constexpr char kUsage[] =
    "usage: datinfo [options] [IA ...]\n"
    "\n"
    "Shows the IAs (interface adapters) of the dat.conf in use and what each reports when opened\n"
    "through the stock DAT registry, libdat2. Without IA names: every IA of that dat.conf that\n"
    "opens, and one line counting those that do not (by reason).\n"
    "\n"
    "  -a, --all        also show each IA that does not open, with its reason and what its\n"
    "                   provider said\n"
    "  -l, --list       list the IAs of the dat.conf in use (name, library, params), opening none\n"
    "  -v, --verbose    every IA and provider attribute, the SRQ limits and the provider-specific\n"
    "                   attributes (for softdat: SRQ growth, RNR waiting, the transport and every\n"
    "                   option in force)\n"
    "      --json       one JSON document with every attribute of each IA (those that do not\n"
    "                   open too, with their reason)\n"
    "  -e, --env        list softdat's environment variables (SOFTDAT_*) with their defaults\n"
    "                   and meaning\n"
    "  -V, --version    print the version and the git commit this datinfo was built from\n"
    "  -h, --help       print this text and exit\n"
    "\n"
    "The dat.conf in use is $DAT_OVERRIDE when set, else /etc/dat.conf.\n"
    "Exit status: 0 an IA opened (every one named, when IAs are named; with -l, -e: the dat.conf\n"
    "was read); 1 none opened, a named one did not, or the dat.conf could not be read (a line on\n"
    "stderr says which and why); 2 usage error.\n";

struct Options {
  bool list = false;
  bool verbose = false;
  bool json = false;
  bool all = false;
  bool env = false;
  std::vector<std::string> names;
};

// 0: run; 2: usage error (`error` says why); 3: --help; 4: --version.
int Parse(int argc, char** argv, Options& out, std::string& error) {
  enum : int { kJson = 1000 };
  static const option kLong[] = {{"list", no_argument, nullptr, 'l'},    {"verbose", no_argument, nullptr, 'v'},
                                 {"json", no_argument, nullptr, kJson},  {"all", no_argument, nullptr, 'a'},
                                 {"env", no_argument, nullptr, 'e'},     {"version", no_argument, nullptr, 'V'},
                                 {"help", no_argument, nullptr, 'h'},    {nullptr, 0, nullptr, 0}};
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, "lvaeVh", kLong, nullptr)) != -1) {
    switch (c) {
      case 'l': out.list = true; break;
      case 'v': out.verbose = true; break;
      case 'a': out.all = true; break;
      case 'e': out.env = true; break;
      case kJson: out.json = true; break;
      case 'V': return 4;
      case 'h': return 3;
      default: return error = std::string("unknown option ") + argv[optind - 1], 2;
    }
  }
  for (int i = optind; i < argc; ++i) out.names.emplace_back(argv[i]);
  if (out.list + out.verbose + out.json + out.env > 1) return error = "-l, -v, --json and -e exclude each other", 2;
  if (out.env && !out.names.empty()) return error = "-e takes no IA names", 2;
  return 0;
}

const DatConfEntry* Entry(const std::vector<DatConfEntry>& entries, const std::string& name) {
  for (const DatConfEntry& entry : entries)
    if (entry.ia_name == name) return &entry;  // libdat2 takes the first line of a name
  return nullptr;
}

// The names the registry loaded (those of the u2.0 lines it accepted), in dat.conf order.
std::vector<std::string> RegisteredNames() {
  constexpr int kMax = 256;
  static DAT_PROVIDER_INFO infos[kMax];
  DAT_PROVIDER_INFO* pointers[kMax];
  for (int i = 0; i < kMax; ++i) pointers[i] = &infos[i];
  DAT_COUNT count = 0;
  std::vector<std::string> names;
  if (dat_registry_list_providers(kMax, &count, pointers) != DAT_SUCCESS) return names;
  for (DAT_COUNT i = 0; i < count; ++i) names.emplace_back(infos[i].ia_name);
  return names;
}

// Whether the dynamic linker has `library` loaded (libdat2 loaded it, so it is there); it loads
// nothing itself.
bool LibraryLoaded(const std::string& library) {
  if (library.empty()) return false;
  void* handle = ::dlopen(library.c_str(), RTLD_LAZY | RTLD_NOLOAD);
  if (handle == nullptr) return false;
  ::dlclose(handle);
  return true;
}

IaReport Describe(const std::string& name, const std::vector<DatConfEntry>& entries, OutputCapture& capture) {
  IaReport report;
  report.name = name;
  if (const DatConfEntry* entry = Entry(entries, name)) {
    report.in_dat_conf = true;
    report.library = entry->library;
    report.ia_params = entry->ia_params;
  }
  capture.Begin();
  DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
  DAT_EVD_HANDLE async_evd = DAT_HANDLE_NULL;
  DAT_RETURN status = dat_ia_open(const_cast<char*>(name.c_str()), 8, &async_evd, &ia);
  if (status == DAT_SUCCESS) {
    DAT_IA_ATTR ia_attr{};
    DAT_PROVIDER_ATTR provider_attr{};
    status = dat_ia_query(ia, nullptr, DAT_IA_FIELD_ALL, &ia_attr, DAT_PROVIDER_FIELD_ALL, &provider_attr);
    if (status == DAT_SUCCESS) {
      // Captured now: the attributes point into the provider, which may free them at close.
      report.opened = true;
      report.ia_attr = IaAttrFields(ia_attr);
      report.provider_attr = ProviderAttrFields(provider_attr);
      report.provider_specific_attr =
          NamedAttrFields(provider_attr.provider_specific_attr, provider_attr.num_provider_specific_attr);
    }
    dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG);
  }
  report.provider_output = capture.End();
  if (!report.opened) {
    const char* major = "";
    const char* minor = "";
    dat_strerror(status, &major, &minor);
    report.status = std::string(major) + (minor != nullptr && *minor != '\0' ? std::string(" ") + minor : "");
    report.reason = ReasonClass(status, report.in_dat_conf, LibraryLoaded(report.library));
  }
  return report;
}

int List(std::FILE* out, const std::string& path, const std::vector<DatConfEntry>& entries) {
  const std::vector<std::string> registered = RegisteredNames();
  std::fprintf(out, "dat.conf: %s\n", path.c_str());
  std::fprintf(out, "%-24s  %-40s  %s\n", "ia_name", "library", "ia_params");
  for (const DatConfEntry& entry : entries) {
    bool loaded = false;
    for (const std::string& name : registered) loaded |= name == entry.ia_name;
    std::fprintf(out, "%-24s  %-40s  \"%s\"%s\n", entry.ia_name.c_str(), entry.library.c_str(), entry.ia_params.c_str(),
                 loaded ? "" : "  (not loaded: libdat2 takes only u2.0 default lines, the first of a name)");
  }
  return 0;
}

// datinfo -e: every variable softdat reads, from the tables that read them.
int Environment(std::FILE* out) {
  std::fprintf(out, "softdat's environment variables (a key=value word in dat.conf's IA params wins over the\n"
                    "variable of that option; see softdat(7)):\n\n");
  const auto line = [out](const std::string& name, const std::string& values, const std::string& default_value,
                          const std::string& note, const char* meaning) {
    const char* now = std::getenv(name.c_str());
    std::fprintf(out, "%s=%s\n    default %s%s%s\n", name.c_str(), values.c_str(), default_value.c_str(),
                 note.c_str(), now != nullptr ? (std::string("; set here to \"") + now + "\"").c_str() : "");
    // The meaning, wrapped at 96 columns under the name.
    const std::string text = meaning;
    std::string wrapped = "   ";
    std::size_t column = 3;
    for (std::size_t start = 0; start < text.size();) {
      std::size_t end = text.find(' ', start);
      if (end == std::string::npos) end = text.size();
      const std::string word = text.substr(start, end - start);
      if (column + 1 + word.size() > 96 && column > 3) wrapped += "\n   ", column = 3;
      wrapped += " " + word;
      column += 1 + word.size();
      start = end + 1;
    }
    std::fprintf(out, "%s\n\n", wrapped.c_str());
  };
  for (const IaOptionSpec& spec : IaOptionSpecs())
    line(spec.variable, spec.values, spec.default_value,
         std::string("; IA option ") + spec.key + (spec.tcp_only ? ", tcp IAs" : ", every IA"), spec.meaning);
  for (const LogVariable& variable : kLogVariables) line(variable.name, "...", variable.default_value, "", variable.meaning);
  std::fprintf(out, "\nAlso read, by libdat2: DAT_OVERRIDE (the dat.conf to read instead of /etc/dat.conf).\n");
  return 0;
}

int Run(int argc, char** argv) {
  // From here on, fd 1 is stderr for everybody else and `out` is datinfo's own standard output.
  OutputCapture capture;
  std::FILE* out = capture.Report();
  Options options;
  std::string error;
  switch (Parse(argc, argv, options, error)) {
    case 0: break;
    case 3: std::fputs(kUsage, out); return 0;
    case 4:
      std::fprintf(out, "datinfo (softdat) %s, commit %s\n", kVersionText, kBuildCommit);
      return 0;
    default: std::fprintf(stderr, "datinfo: %s; try --help\n", error.c_str()); return 2;
  }
  if (options.env) return Environment(out);
  const std::string path = DatConfPath();
  std::vector<DatConfEntry> entries;
  if (!ReadDatConf(path, entries, error)) {
    std::fprintf(stderr, "datinfo: %s\n", error.c_str());
    return 1;
  }
  if (options.list) return List(out, path, entries);
  const bool named = !options.names.empty();
  std::vector<std::string> names = named ? options.names : RegisteredNames();
  if (names.empty()) {
    std::fprintf(stderr, "datinfo: %s registers no IA\n", path.c_str());
    return 1;
  }
  std::vector<IaReport> reports;
  for (const std::string& name : names) reports.push_back(Describe(name, entries, capture));

  bool any_opened = false, all_opened = true;
  for (const IaReport& report : reports) {
    any_opened |= report.opened;
    all_opened &= report.opened;
  }
  const bool show_failed = options.all || named;
  if (options.json) {
    PrintJson(out, path, reports);
  } else if (options.verbose) {
    bool first = true;
    for (const IaReport& report : reports) {
      if (!report.opened && !options.all) continue;
      if (!first) std::fputc('\n', out);
      first = false;
      PrintVerbose(out, report);
    }
  } else {
    PrintTableHeader(out);
    for (const IaReport& report : reports)
      if (report.opened || options.all) PrintTableRow(out, report);
  }
  if (!options.json && !show_failed) PrintNotOpenedSummary(out, reports);
  std::fflush(out);
  // Then what each IA's provider said while it opened, on stderr: for an IA that opened
  // (softdat's warnings) or that was named; the others' the report shows (--all) or counts.
  for (const IaReport& report : reports) {
    if (report.opened && !report.provider_output.empty()) std::fputs(report.provider_output.c_str(), stderr);
    if (!report.opened && named) {
      std::fputs(report.provider_output.c_str(), stderr);
      std::fprintf(stderr, "datinfo: %s: cannot open: %s (%s)%s\n", report.name.c_str(), report.status.c_str(),
                   report.reason.c_str(), report.in_dat_conf ? "" : "; no line of that name in the dat.conf in use");
    }
  }
  if (!any_opened && !named)
    std::fprintf(stderr, "datinfo: no IA of %s opened%s\n", path.c_str(), options.all ? "" : "; datinfo --all says why");
  return named ? (all_opened ? 0 : 1) : (any_opened ? 0 : 1);
}

}  // namespace
}  // namespace softdat::tools

int main(int argc, char** argv) {
  const int status = softdat::tools::Run(argc, argv);
  std::fflush(nullptr);
  return status;
}
