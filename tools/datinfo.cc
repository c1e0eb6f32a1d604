// datinfo: lists the DAT providers the registry knows (dat.conf or DAT_OVERRIDE), opens each
// softdat IA through the stock libdat2 and prints what it reports, as a table.
//
// Usage: datinfo [ia_name ...]   (no names: every IA in the registry)
#include <arpa/inet.h>
#include <dat2/udat.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

std::vector<std::string> RegisteredNames() {
  constexpr int kMax = 64;
  DAT_PROVIDER_INFO infos[kMax];
  DAT_PROVIDER_INFO* pointers[kMax];
  for (int i = 0; i < kMax; ++i) pointers[i] = &infos[i];
  DAT_COUNT count = 0;
  std::vector<std::string> names;
  if (dat_registry_list_providers(kMax, &count, pointers) != DAT_SUCCESS) return names;
  for (DAT_COUNT i = 0; i < count; ++i) names.emplace_back(infos[i].ia_name);
  return names;
}

const char* YesNo(DAT_BOOLEAN value) { return value ? "yes" : "no"; }

int Describe(const std::string& name) {
  DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
  DAT_EVD_HANDLE async_evd = DAT_HANDLE_NULL;
  std::fflush(stdout);  // keep our table and the provider's stderr lines in order
  DAT_RETURN status = dat_ia_open(const_cast<char*>(name.c_str()), 8, &async_evd, &ia);
  if (status != DAT_SUCCESS) {
    const char* major = "";
    const char* minor = "";
    dat_strerror(status, &major, &minor);
    std::printf("%-20s  cannot open: %s %s\n", name.c_str(), major, minor);
    return 1;
  }
  DAT_IA_ATTR ia_attr;
  DAT_PROVIDER_ATTR provider_attr{};
  status = dat_ia_query(ia, nullptr, DAT_IA_FIELD_ALL, &ia_attr, DAT_PROVIDER_FIELD_ALL, &provider_attr);
  if (status != DAT_SUCCESS) {
    std::printf("%-20s  dat_ia_query failed: 0x%x\n", name.c_str(), status);
    dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG);
    return 1;
  }
  char address[INET_ADDRSTRLEN] = "?";
  if (ia_attr.ia_address_ptr != nullptr && ia_attr.ia_address_ptr->sa_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(ia_attr.ia_address_ptr);
    inet_ntop(AF_INET, &in->sin_addr, address, sizeof address);
  }
  std::printf("%-20s  %-10s %u.%u  %-15s  %8d %8d %8d  %-3s %8d\n", name.c_str(),
              provider_attr.provider_name, provider_attr.provider_version_major,
              provider_attr.provider_version_minor, address, ia_attr.max_eps, ia_attr.max_evds,
              ia_attr.max_evd_qlen, YesNo(provider_attr.srq_supported), ia_attr.max_srqs);
  dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> names;
  for (int i = 1; i < argc; ++i) names.emplace_back(argv[i]);
  if (names.empty()) names = RegisteredNames();
  if (names.empty()) {
    std::printf("no DAT providers registered (check DAT_OVERRIDE or /etc/dat.conf)\n");
    return 1;
  }
  std::printf("%-20s  %-10s %-4s  %-15s  %8s %8s %8s  %-3s %8s\n", "ia_name", "provider", "ver",
              "address", "max_eps", "max_evds", "evd_qlen", "srq", "max_srqs");
  int failures = 0;
  for (const std::string& name : names) failures += Describe(name);
  return failures == 0 ? 0 : 1;
}
