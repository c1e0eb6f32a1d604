// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// datinfo: what the DAT registry offers and what each IA reports, as ibv_devinfo and fi_info do
// for verbs devices and libfabric providers. It opens each IA through the stock libdat2 (any
// provider, not only softdat) and prints its IA and provider attributes.
//
// Usage: datinfo [-l | -v | --json] [IA ...]   (datinfo --help says more; man page datinfo(1))
#include <dat2/udat.h>
#include <getopt.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "base/version.h"
#include "tools/dat_conf_file.h"
#include "tools/datinfo_report.h"

namespace softdat::tools {
namespace {

constexpr char kUsage[] =
    "usage: datinfo [options] [IA ...]\n"
    "\n"
    "Shows the IAs (interface adapters) of the dat.conf in use and what each reports when opened\n"
    "through the stock DAT registry, libdat2. Without IA names: every IA of that dat.conf.\n"
    "\n"
    "  -l, --list       list the IAs of the dat.conf in use (name, library, params), opening none\n"
    "  -v, --verbose    every IA and provider attribute, the SRQ limits and the provider-specific\n"
    "                   attributes (for softdat: SRQ growth, RNR waiting, the transport and its\n"
    "                   options in force)\n"
    "      --json       one JSON document with every attribute of each IA\n"
    "  -V, --version    print the version and exit\n"
    "  -h, --help       print this text and exit\n"
    "\n"
    "The dat.conf in use is $DAT_OVERRIDE when set, else /etc/dat.conf.\n"
    "Exit status: 0 every IA shown opened (or was listed); 1 an IA could not be opened, or the\n"
    "dat.conf could not be read (a line on stderr says which and why); 2 usage error.\n";

struct Options {
  bool list = false;
  bool verbose = false;
  bool json = false;
  std::vector<std::string> names;
};

// 0: run; 2: usage error (`error` says why); 3: --help; 4: --version.
int Parse(int argc, char** argv, Options& out, std::string& error) {
  enum : int { kJson = 1000 };
  static const option kLong[] = {{"list", no_argument, nullptr, 'l'},    {"verbose", no_argument, nullptr, 'v'},
                                 {"json", no_argument, nullptr, kJson},  {"version", no_argument, nullptr, 'V'},
                                 {"help", no_argument, nullptr, 'h'},    {nullptr, 0, nullptr, 0}};
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, "lvVh", kLong, nullptr)) != -1) {
    switch (c) {
      case 'l': out.list = true; break;
      case 'v': out.verbose = true; break;
      case kJson: out.json = true; break;
      case 'V': return 4;
      case 'h': return 3;
      default: return error = std::string("unknown option ") + argv[optind - 1], 2;
    }
  }
  for (int i = optind; i < argc; ++i) out.names.emplace_back(argv[i]);
  if (out.list + out.verbose + out.json > 1) return error = "-l, -v and --json exclude each other", 2;
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

IaReport Describe(const std::string& name, const std::vector<DatConfEntry>& entries) {
  IaReport report;
  report.name = name;
  if (const DatConfEntry* entry = Entry(entries, name)) {
    report.in_dat_conf = true;
    report.library = entry->library;
    report.ia_params = entry->ia_params;
  }
  DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
  DAT_EVD_HANDLE async_evd = DAT_HANDLE_NULL;
  std::fflush(stdout);  // keep our output and the provider's stderr lines in order
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
  if (!report.opened) {
    const char* major = "";
    const char* minor = "";
    dat_strerror(status, &major, &minor);
    report.status = std::string(major) + (minor != nullptr && *minor != '\0' ? std::string(" ") + minor : "");
    std::fprintf(stderr, "datinfo: %s: cannot open: %s%s\n", name.c_str(), report.status.c_str(),
                 report.in_dat_conf ? "" : " (no line of that name in the dat.conf in use)");
  }
  return report;
}

int List(const std::string& path, const std::vector<DatConfEntry>& entries) {
  const std::vector<std::string> registered = RegisteredNames();
  std::printf("dat.conf: %s\n", path.c_str());
  std::printf("%-24s  %-40s  %s\n", "ia_name", "library", "ia_params");
  for (const DatConfEntry& entry : entries) {
    bool loaded = false;
    for (const std::string& name : registered) loaded |= name == entry.ia_name;
    std::printf("%-24s  %-40s  \"%s\"%s\n", entry.ia_name.c_str(), entry.library.c_str(), entry.ia_params.c_str(),
                loaded ? "" : "  (not loaded: libdat2 takes only u2.0 default lines, the first of a name)");
  }
  return 0;
}

int Run(int argc, char** argv) {
  Options options;
  std::string error;
  switch (Parse(argc, argv, options, error)) {
    case 0: break;
    case 3: std::fputs(kUsage, stdout); return 0;
    case 4: std::printf("datinfo (softdat) %s\n", kVersionText); return 0;
    default: std::fprintf(stderr, "datinfo: %s; try --help\n", error.c_str()); return 2;
  }
  const std::string path = DatConfPath();
  std::vector<DatConfEntry> entries;
  if (!ReadDatConf(path, entries, error)) {
    std::fprintf(stderr, "datinfo: %s\n", error.c_str());
    return 1;
  }
  if (options.list) return List(path, entries);
  std::vector<std::string> names = options.names;
  if (names.empty()) names = RegisteredNames();
  if (names.empty()) {
    std::fprintf(stderr, "datinfo: %s registers no IA\n", path.c_str());
    return 1;
  }
  std::vector<IaReport> reports;
  bool all_opened = true;
  for (const std::string& name : names) {
    reports.push_back(Describe(name, entries));
    all_opened &= reports.back().opened;
  }
  if (options.json) {
    PrintJson(stdout, path, reports);
  } else if (options.verbose) {
    for (std::size_t i = 0; i < reports.size(); ++i) {
      if (i) std::fputc('\n', stdout);
      PrintVerbose(stdout, reports[i]);
    }
  } else {
    PrintTableHeader(stdout);
    for (const IaReport& report : reports) PrintTableRow(stdout, report);
  }
  return all_opened ? 0 : 1;
}

}  // namespace
}  // namespace softdat::tools

int main(int argc, char** argv) { return softdat::tools::Run(argc, argv); }
