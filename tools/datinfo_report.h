// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// What datinfo prints about one IA: every DAT_IA_ATTR and DAT_PROVIDER_ATTR field by its DAT name,
// captured while the IA is open (the attributes point into the provider's memory), then shown as
// a table row, as text (-v) or as JSON (--json) from the same fields.
#pragma once

#include <dat2/udat.h>

#include <cstdio>
#include <string>
#include <vector>

namespace softdat::tools {

struct Field {
  enum class Kind { kNumber, kString, kBoolean, kJson };  // kJson: text is already a JSON value
  std::string name;
  Kind kind = Kind::kNumber;
  std::string text;     // the value as JSON wants it (kString: unquoted)
  std::string comment;  // for people: what a number means (text output only), may be empty
};

struct IaReport {
  std::string name;
  bool in_dat_conf = false;  // the dat.conf in use has a line for it
  std::string library;       // from that line
  std::string ia_params;     // from that line
  bool opened = false;
  std::string status;        // dat_ia_open's failure: major and minor names
  std::string reason;        // ...and its class in words (ReasonClass)
  std::string provider_output;  // what the process wrote to stdout and stderr while it opened
  std::vector<Field> ia_attr;
  std::vector<Field> provider_attr;           // provider_specific_attr left out: see below
  std::vector<Field> provider_specific_attr;  // name = value, every one a string
};

// The fields of each attribute structure, in the order of <dat2/udat.h>.
std::vector<Field> IaAttrFields(const DAT_IA_ATTR& attr);
std::vector<Field> ProviderAttrFields(const DAT_PROVIDER_ATTR& attr);
std::vector<Field> NamedAttrFields(const DAT_NAMED_ATTR* list, DAT_COUNT count);

// What a failed dat_ia_open means, in a few words. DAT_PROVIDER_NOT_FOUND: "no such IA name"
// (no dat.conf line of that name), "library not found" (the registry could not load it) or
// "provider not registered" (it loaded, but registered no IA of that name); then "no such
// address or interface", "bad IA params", "provider error", "out of resources", "not supported",
// or the DAT type's name.
std::string ReasonClass(DAT_RETURN status, bool in_dat_conf, bool library_loaded);

// One line counting the IAs that did not open, by reason class and library, most first:
// "62 of 65 IAs did not open: 26 provider error (libdaploscm.so.2, libdaploucm.so.2), ...;
// datinfo --all shows each". Nothing when every IA opened.
void PrintNotOpenedSummary(std::FILE* out, const std::vector<IaReport>& reports);

// The one-row summary (its header: PrintTableHeader). An IA that did not open gets its reason,
// and what its provider said, indented below.
void PrintTableHeader(std::FILE* out);
void PrintTableRow(std::FILE* out, const IaReport& report);
// Every field, one a line, grouped (datinfo -v).
void PrintVerbose(std::FILE* out, const IaReport& report);
// One JSON document: {"dat_conf": ..., "ias": [...]}.
void PrintJson(std::FILE* out, const std::string& dat_conf, const std::vector<IaReport>& reports);

// A JSON string literal (quotes included) for `text`.
std::string JsonString(const std::string& text);

}  // namespace softdat::tools
