// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// datinfo's output: attribute structures turned into named fields, and the three ways of showing
// them (see datinfo_report.h).
#include "tools/datinfo_report.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cinttypes>
#include <string>

namespace softdat::tools {
namespace {

using Kind = Field::Kind;

std::string Hex(std::uint64_t value) {
  char text[32];
  std::snprintf(text, sizeof text, "0x%" PRIx64, value);
  return text;
}

Field Number(const char* name, long long value, std::string comment = "") {
  return {name, Kind::kNumber, std::to_string(value), std::move(comment)};
}
Field Unsigned(const char* name, unsigned long long value, std::string comment = "") {
  return {name, Kind::kNumber, std::to_string(value), std::move(comment)};
}
// DAT_COUNT limits: DAT_VALUE_UNKNOWN is a value of its own.
Field Count(const char* name, DAT_COUNT value) {
  return Number(name, value, value == DAT_VALUE_UNKNOWN ? "DAT_VALUE_UNKNOWN" : "");
}
Field String(const char* name, const char* value) { return {name, Kind::kString, value != nullptr ? value : "", ""}; }
Field Boolean(const char* name, DAT_BOOLEAN value) {
  return {name, Kind::kBoolean, value ? "true" : "false", ""};
}
// Flag sets: the number, and the names of the bits set for people (a name of value 0 is
// always there: DAT_MEM_TYPE_VIRTUAL and DAT_QOS_BEST_EFFORT are 0).
Field Flags(const char* name, std::uint64_t value, std::initializer_list<std::pair<std::uint64_t, const char*>> bits) {
  std::string names;
  for (const auto& [bit, bit_name] : bits)
    if (bit == 0 || (value & bit) != 0) names += (names.empty() ? "" : " | ") + std::string(bit_name);
  return Unsigned(name, value, Hex(value) + (names.empty() ? "" : ": " + names));
}
Field Choice(const char* name, long long value, std::initializer_list<const char*> names) {
  const char* chosen = value >= 0 && static_cast<std::size_t>(value) < names.size() ? names.begin()[value] : "";
  return Number(name, value, chosen);
}

std::string Address(const DAT_IA_ADDRESS_PTR address) {
  if (address == nullptr) return "";
  char text[INET6_ADDRSTRLEN] = "";
  if (address->sa_family == AF_INET)
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(address)->sin_addr, text, sizeof text);
  else if (address->sa_family == AF_INET6)
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(address)->sin6_addr, text, sizeof text);
  else
    return "family " + std::to_string(address->sa_family);
  return text;
}

std::string JsonObject(const std::vector<Field>& fields);

std::string JsonValue(const Field& field) {
  switch (field.kind) {
    case Kind::kString: return JsonString(field.text);
    default: return field.text;
  }
}

std::string JsonObject(const std::vector<Field>& fields) {
  std::string text = "{";
  for (std::size_t i = 0; i < fields.size(); ++i)
    text += (i ? ", " : "") + JsonString(fields[i].name) + ": " + JsonValue(fields[i]);
  return text + "}";
}

const Field* Find(const std::vector<Field>& fields, const char* name) {
  for (const Field& field : fields)
    if (field.name == name) return &field;
  return nullptr;
}

const char* Value(const std::vector<Field>& fields, const char* name) {
  const Field* field = Find(fields, name);
  return field != nullptr ? field->text.c_str() : "?";
}

void PrintGroup(std::FILE* out, const char* title, const std::vector<Field>& fields) {
  std::fprintf(out, "  %s:\n", title);
  for (const Field& field : fields) {
    if (field.kind == Kind::kJson && field.comment.empty()) continue;  // shown by its comment only
    const std::string& shown = field.kind == Kind::kJson ? field.comment : field.text;
    std::fprintf(out, "    %-38s %s", (field.name + ":").c_str(), shown.c_str());
    if (field.kind != Kind::kJson && !field.comment.empty()) std::fprintf(out, "  (%s)", field.comment.c_str());
    std::fputc('\n', out);
  }
}

}  // namespace

std::string JsonString(const std::string& text) {
  std::string out = "\"";
  for (const unsigned char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char escaped[8];
          std::snprintf(escaped, sizeof escaped, "\\u%04x", c);
          out += escaped;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

std::vector<Field> IaAttrFields(const DAT_IA_ATTR& a) {
  std::vector<Field> fields = {
      String("adapter_name", a.adapter_name),
      String("vendor_name", a.vendor_name),
      Unsigned("hardware_version_major", a.hardware_version_major),
      Unsigned("hardware_version_minor", a.hardware_version_minor),
      Unsigned("firmware_version_major", a.firmware_version_major),
      Unsigned("firmware_version_minor", a.firmware_version_minor),
      String("ia_address_ptr", Address(a.ia_address_ptr).c_str()),
      Count("max_eps", a.max_eps),
      Count("max_dto_per_ep", a.max_dto_per_ep),
      Count("max_rdma_read_per_ep_in", a.max_rdma_read_per_ep_in),
      Count("max_rdma_read_per_ep_out", a.max_rdma_read_per_ep_out),
      Count("max_evds", a.max_evds),
      Count("max_evd_qlen", a.max_evd_qlen),
      Count("max_iov_segments_per_dto", a.max_iov_segments_per_dto),
      Count("max_lmrs", a.max_lmrs),
      Unsigned("max_lmr_block_size", a.max_lmr_block_size),
      Unsigned("max_lmr_virtual_address", a.max_lmr_virtual_address, Hex(a.max_lmr_virtual_address)),
      Count("max_pzs", a.max_pzs),
      Unsigned("max_message_size", a.max_message_size),
      Unsigned("max_rdma_size", a.max_rdma_size),
      Count("max_rmrs", a.max_rmrs),
      Unsigned("max_rmr_target_address", a.max_rmr_target_address, Hex(a.max_rmr_target_address)),
      Count("max_srqs", a.max_srqs),
      Count("max_ep_per_srq", a.max_ep_per_srq),
      Count("max_recv_per_srq", a.max_recv_per_srq),
      Count("max_iov_segments_per_rdma_read", a.max_iov_segments_per_rdma_read),
      Count("max_iov_segments_per_rdma_write", a.max_iov_segments_per_rdma_write),
      Count("max_rdma_read_in", a.max_rdma_read_in),
      Count("max_rdma_read_out", a.max_rdma_read_out),
      Boolean("max_rdma_read_per_ep_in_guaranteed", a.max_rdma_read_per_ep_in_guaranteed),
      Boolean("max_rdma_read_per_ep_out_guaranteed", a.max_rdma_read_per_ep_out_guaranteed),
      Boolean("zb_supported", a.zb_supported),
      Choice("extension_supported", a.extension_supported, {"DAT_EXTENSION_NONE", "DAT_EXTENSION_IB", "DAT_EXTENSION_IW"}),
      Count("extension_version", a.extension_version),
      Count("num_transport_attr", a.num_transport_attr),
  };
  Field transport{"transport_attr", Kind::kJson, "", ""};
  const std::vector<Field> transport_list = NamedAttrFields(a.transport_attr, a.num_transport_attr);
  transport.text = JsonObject(transport_list);
  fields.push_back(transport);
  fields.push_back(Count("num_vendor_attr", a.num_vendor_attr));
  Field vendor{"vendor_attr", Kind::kJson, "", ""};
  vendor.text = JsonObject(NamedAttrFields(a.vendor_attr, a.num_vendor_attr));
  fields.push_back(vendor);
  return fields;
}

std::vector<Field> ProviderAttrFields(const DAT_PROVIDER_ATTR& a) {
  std::vector<Field> fields = {
      String("provider_name", a.provider_name),
      Unsigned("provider_version_major", a.provider_version_major),
      Unsigned("provider_version_minor", a.provider_version_minor),
      Unsigned("dapl_version_major", a.dapl_version_major),
      Unsigned("dapl_version_minor", a.dapl_version_minor),
      Flags("lmr_mem_types_supported", a.lmr_mem_types_supported,
            {{DAT_MEM_TYPE_VIRTUAL, "VIRTUAL"}, {DAT_MEM_TYPE_LMR, "LMR"}, {DAT_MEM_TYPE_SHARED_VIRTUAL, "SHARED_VIRTUAL"}}),
      Choice("iov_ownership_on_return", a.iov_ownership_on_return,
             {"DAT_IOV_CONSUMER", "DAT_IOV_PROVIDER_NOMOD", "DAT_IOV_PROVIDER_MOD"}),
      Flags("dat_qos_supported", a.dat_qos_supported,
            {{DAT_QOS_BEST_EFFORT, "BEST_EFFORT"}, {DAT_QOS_HIGH_THROUGHPUT, "HIGH_THROUGHPUT"}, {DAT_QOS_LOW_LATENCY, "LOW_LATENCY"},
             {DAT_QOS_ECONOMY, "ECONOMY"}, {DAT_QOS_PREMIUM, "PREMIUM"}}),
      Flags("completion_flags_supported", a.completion_flags_supported,
            {{DAT_COMPLETION_SUPPRESS_FLAG, "SUPPRESS"}, {DAT_COMPLETION_SOLICITED_WAIT_FLAG, "SOLICITED_WAIT"},
             {DAT_COMPLETION_UNSIGNALLED_FLAG, "UNSIGNALLED"}, {DAT_COMPLETION_BARRIER_FENCE_FLAG, "BARRIER_FENCE"},
             {DAT_COMPLETION_EVD_THRESHOLD_FLAG, "EVD_THRESHOLD"}}),
      Boolean("is_thread_safe", a.is_thread_safe),
      Count("max_private_data_size", a.max_private_data_size),
      Boolean("supports_multipath", a.supports_multipath),
      Choice("ep_creator", a.ep_creator,
             {"DAT_PSP_CREATES_EP_NEVER", "DAT_PSP_CREATES_EP_IFASKED", "DAT_PSP_CREATES_EP_ALWAYS"}),
      Choice("pz_support", a.pz_support, {"DAT_PZ_UNIQUE", "DAT_PZ_SHAREABLE"}),
      Unsigned("optimal_buffer_alignment", a.optimal_buffer_alignment),
  };
  // Six event streams by six: which may share one EVD.
  std::string matrix = "[", rows;
  for (int i = 0; i < 6; ++i) {
    matrix += i ? ", [" : "[";
    for (int j = 0; j < 6; ++j) {
      matrix += std::string(j ? ", " : "") + (a.evd_stream_merging_supported[i][j] ? "true" : "false");
      rows += a.evd_stream_merging_supported[i][j] ? '1' : '0';
    }
    matrix += "]";
    if (i < 5) rows += ' ';
  }
  fields.push_back({"evd_stream_merging_supported", Kind::kJson, matrix + "]", rows});
  const std::vector<Field> more = {
      Boolean("srq_supported", a.srq_supported),
      Number("srq_watermarks_supported", a.srq_watermarks_supported, Hex(static_cast<std::uint32_t>(a.srq_watermarks_supported))),
      Boolean("srq_ep_pz_difference_supported", a.srq_ep_pz_difference_supported),
      Number("srq_info_supported", a.srq_info_supported, Hex(static_cast<std::uint32_t>(a.srq_info_supported))),
      Number("ep_recv_info_supported", a.ep_recv_info_supported, Hex(static_cast<std::uint32_t>(a.ep_recv_info_supported))),
      Boolean("lmr_sync_req", a.lmr_sync_req),
      Boolean("dto_async_return_guaranteed", a.dto_async_return_guaranteed),
      Boolean("rdma_write_for_rdma_read_req", a.rdma_write_for_rdma_read_req),
      Boolean("rdma_read_lmr_rmr_context_exposure", a.rdma_read_lmr_rmr_context_exposure),
      Choice("rmr_scope_supported", a.rmr_scope_supported, {"DAT_RMR_SCOPE_EP", "DAT_RMR_SCOPE_PZ", "DAT_RMR_SCOPE_ANY"}),
      Boolean("is_signal_safe", a.is_signal_safe),
      Boolean("ha_supported", a.ha_supported),
      Choice("ha_loadbalancing", a.ha_loadbalancing, {"DAT_HA_LB_NONE", "DAT_HA_LB_INTERCOMM", "DAT_HA_LB_INTRACOMM"}),
      Count("num_provider_specific_attr", a.num_provider_specific_attr),
  };
  fields.insert(fields.end(), more.begin(), more.end());
  return fields;
}

std::vector<Field> NamedAttrFields(const DAT_NAMED_ATTR* list, DAT_COUNT count) {
  std::vector<Field> fields;
  for (DAT_COUNT i = 0; list != nullptr && i < count; ++i)
    fields.push_back({list[i].name != nullptr ? list[i].name : "", Kind::kString,
                      list[i].value != nullptr ? list[i].value : "", ""});
  return fields;
}

void PrintTableHeader(std::FILE* out) {
  std::fprintf(out, "%-20s  %-10s %-4s  %-15s  %8s %8s %8s  %-3s %8s\n", "ia_name", "provider", "ver",
               "address", "max_eps", "max_evds", "evd_qlen", "srq", "max_srqs");
}

std::string ReasonClass(DAT_RETURN status, bool in_dat_conf, bool library_loaded) {
  switch (DAT_GET_TYPE(status)) {
    case DAT_PROVIDER_NOT_FOUND:
      return !in_dat_conf ? "no such IA name" : library_loaded ? "provider not registered" : "library not found";
    case DAT_INVALID_ADDRESS: return "no such address or interface";
    case DAT_INVALID_PARAMETER: return "bad IA params";
    case DAT_INTERNAL_ERROR: return "provider error";
    case DAT_INSUFFICIENT_RESOURCES: return "out of resources";
    case DAT_MODEL_NOT_SUPPORTED: return "not supported";
    default: break;
  }
  const char* major = "";
  const char* minor = "";
  dat_strerror(status, &major, &minor);
  return major != nullptr && *major != '\0' ? major : "unknown error";
}

void PrintNotOpenedSummary(std::FILE* out, const std::vector<IaReport>& reports) {
  struct Group {
    std::string reason;
    std::vector<std::string> libraries;
    int count = 0;
  };
  std::vector<Group> groups;
  int failed = 0;
  for (const IaReport& r : reports) {
    if (r.opened) continue;
    ++failed;
    Group* group = nullptr;
    for (Group& g : groups)
      if (g.reason == r.reason) group = &g;
    if (group == nullptr) group = &groups.emplace_back(Group{r.reason, {}, 0});
    ++group->count;
    // A library named by its path is named by its file name here: the line stays a line.
    const std::string library =
        r.library.empty() ? "no dat.conf line" : r.library.substr(r.library.find_last_of('/') + 1);
    bool known = false;
    for (const std::string& l : group->libraries) known |= l == library;
    if (!known) group->libraries.push_back(library);
  }
  if (failed == 0) return;
  std::stable_sort(groups.begin(), groups.end(), [](const Group& a, const Group& b) { return a.count > b.count; });
  std::string text;
  for (const Group& g : groups) {
    std::string libraries;
    for (std::size_t i = 0; i < g.libraries.size() && i < 3; ++i) libraries += (i ? ", " : "") + g.libraries[i];
    if (g.libraries.size() > 3) libraries += ", ...";
    text += (text.empty() ? "" : ", ") + std::to_string(g.count) + " " + g.reason + " (" + libraries + ")";
  }
  std::fprintf(out, "%d of %zu IAs did not open: %s; datinfo --all shows each\n", failed, reports.size(),
               text.c_str());
}

namespace {

// The provider's lines, indented under what they explain.
void PrintProviderOutput(std::FILE* out, const std::string& text, const char* indent) {
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::fprintf(out, "%s%s\n", indent, text.substr(start, end - start).c_str());
    start = end + 1;
  }
}

}  // namespace

void PrintTableRow(std::FILE* out, const IaReport& r) {
  if (!r.opened) {
    std::fprintf(out, "%-20s  cannot open: %s (%s)%s%s\n", r.name.c_str(), r.status.c_str(), r.reason.c_str(),
                 r.library.empty() ? "" : ", ", r.library.c_str());
    PrintProviderOutput(out, r.provider_output, "    | ");
    return;
  }
  const std::string version =
      std::string(Value(r.provider_attr, "provider_version_major")) + "." + Value(r.provider_attr, "provider_version_minor");
  std::fprintf(out, "%-20s  %-10s %-4s  %-15s  %8s %8s %8s  %-3s %8s\n", r.name.c_str(),
               Value(r.provider_attr, "provider_name"), version.c_str(), Value(r.ia_attr, "ia_address_ptr"),
               Value(r.ia_attr, "max_eps"), Value(r.ia_attr, "max_evds"), Value(r.ia_attr, "max_evd_qlen"),
               std::string(Value(r.provider_attr, "srq_supported")) == "true" ? "yes" : "no",
               Value(r.ia_attr, "max_srqs"));
}

void PrintVerbose(std::FILE* out, const IaReport& r) {
  std::fprintf(out, "ia_name: %s\n", r.name.c_str());
  if (r.in_dat_conf) {
    std::fprintf(out, "  library:   %s\n", r.library.c_str());
    std::fprintf(out, "  ia_params: \"%s\"\n", r.ia_params.c_str());
  }
  if (!r.opened) {
    std::fprintf(out, "  cannot open: %s (%s)\n", r.status.c_str(), r.reason.c_str());
    if (!r.provider_output.empty()) std::fprintf(out, "  the provider said:\n");
    PrintProviderOutput(out, r.provider_output, "    | ");
    return;
  }
  std::vector<Field> ia = r.ia_attr;
  for (Field& field : ia) {
    if (field.kind == Kind::kJson) field.comment = field.text == "{}" ? "none" : field.text;
  }
  PrintGroup(out, "IA attributes (DAT_IA_ATTR)", ia);
  PrintGroup(out, "provider attributes (DAT_PROVIDER_ATTR)", r.provider_attr);
  PrintGroup(out, "provider-specific attributes", r.provider_specific_attr);
}

void PrintJson(std::FILE* out, const std::string& dat_conf, const std::vector<IaReport>& reports) {
  std::fprintf(out, "{\n  \"dat_conf\": %s,\n  \"ias\": [", JsonString(dat_conf).c_str());
  for (std::size_t i = 0; i < reports.size(); ++i) {
    const IaReport& r = reports[i];
    std::fprintf(out, "%s\n    {\"ia_name\": %s", i ? "," : "", JsonString(r.name).c_str());
    if (r.in_dat_conf) {
      std::fprintf(out, ", \"library\": %s, \"ia_params\": %s", JsonString(r.library).c_str(),
                   JsonString(r.ia_params).c_str());
    }
    std::fprintf(out, ", \"opened\": %s", r.opened ? "true" : "false");
    if (!r.opened) {
      std::fprintf(out, ", \"error\": %s, \"reason\": %s, \"provider_output\": %s}", JsonString(r.status).c_str(),
                   JsonString(r.reason).c_str(), JsonString(r.provider_output).c_str());
      continue;
    }
    std::fprintf(out, ",\n     \"ia_attr\": %s", JsonObject(r.ia_attr).c_str());
    std::vector<Field> provider = r.provider_attr;
    provider.push_back({"provider_specific_attr", Kind::kJson, JsonObject(r.provider_specific_attr), ""});
    std::fprintf(out, ",\n     \"provider_attr\": %s}", JsonObject(provider).c_str());
  }
  std::fprintf(out, "%s]\n}\n", reports.empty() ? "" : "\n  ");
}

}  // namespace softdat::tools
