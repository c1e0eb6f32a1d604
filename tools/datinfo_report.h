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
  std::vector<Field> ia_attr;
  std::vector<Field> provider_attr;           // provider_specific_attr left out: see below
  std::vector<Field> provider_specific_attr;  // name = value, every one a string
};

// The fields of each attribute structure, in the order of <dat2/udat.h>.
std::vector<Field> IaAttrFields(const DAT_IA_ATTR& attr);
std::vector<Field> ProviderAttrFields(const DAT_PROVIDER_ATTR& attr);
std::vector<Field> NamedAttrFields(const DAT_NAMED_ATTR* list, DAT_COUNT count);

// The one-row summary (its header: PrintTableHeader).
void PrintTableHeader(std::FILE* out);
void PrintTableRow(std::FILE* out, const IaReport& report);
// Every field, one a line, grouped (datinfo -v).
void PrintVerbose(std::FILE* out, const IaReport& report);
// One JSON document: {"dat_conf": ..., "ias": [...]}.
void PrintJson(std::FILE* out, const std::string& dat_conf, const std::vector<IaReport>& reports);

// A JSON string literal (quotes included) for `text`.
std::string JsonString(const std::string& text);

}  // namespace softdat::tools
