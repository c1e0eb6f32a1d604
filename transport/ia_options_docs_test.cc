// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The documentation of the IA options is held to the parser's own table (IaOptionSpecs): README's
// option table has one row per option, with its key, values, variable and default exactly as the
// parser has them, and no row the parser does not know; softdat(7) documents each option and its
// variable. A new option, or a changed default, fails here until the docs say so.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "transport/ia_params.h"

namespace softdat {
namespace {

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// "thread|poll" as a Markdown table cell writes it: "thread\|poll".
std::string MarkdownCell(std::string text) {
  for (std::size_t at = text.find('|'); at != std::string::npos; at = text.find('|', at + 2)) text.insert(at, "\\");
  return text;
}

TEST(IaOptionsDocs, ReadmeTableIsTheParsersTable) {
  const std::string readme = Read("README.md");
  ASSERT_FALSE(readme.empty()) << "README.md is not in the test's runfiles";
  // Rows of the option table: "| `key=values` (`VARIABLE`) | default | meaning |".
  const std::regex row(R"(\n\| `([a-z_]+)=([^`]*)` \(`(SOFTDAT_[A-Z_]+)`\) \| ([^|]*) \| )");
  std::set<std::string> documented;
  for (auto it = std::sregex_iterator(readme.begin(), readme.end(), row); it != std::sregex_iterator(); ++it) {
    const std::smatch& m = *it;
    const std::string key = m[1];
    documented.insert(key);
    const IaOptionSpec* spec = nullptr;
    for (const IaOptionSpec& candidate : IaOptionSpecs())
      if (key == candidate.key) spec = &candidate;
    ASSERT_NE(spec, nullptr) << "README documents an option the parser does not know: " << key;
    EXPECT_EQ(m[2].str(), MarkdownCell(spec->values)) << key;
    EXPECT_EQ(m[3].str(), spec->variable) << key;
    EXPECT_EQ(m[4].str(), spec->default_value) << key;
  }
  for (const IaOptionSpec& spec : IaOptionSpecs())
    EXPECT_TRUE(documented.count(spec.key)) << "README's option table lacks " << spec.key << " (" << spec.variable << ")";
}

TEST(IaOptionsDocs, SoftdatManPageDocumentsEachOptionAndItsVariable) {
  const std::string page = Read("docs/man/softdat.7");
  ASSERT_FALSE(page.empty()) << "softdat.7 is not in the test's runfiles";
  for (const IaOptionSpec& spec : IaOptionSpecs()) {
    SCOPED_TRACE(spec.key);
    // The option's own paragraph: ".BI key= N" or ".BR key=thread | poll".
    EXPECT_TRUE(std::regex_search(page, std::regex(std::string("\n\\.B[IR] ") + spec.key + "="))) << spec.key;
    // Its variable in ENVIRONMENT, saying which option it sets.
    EXPECT_NE(page.find(std::string("\n.B ") + spec.variable + "\nThe default of the\n.B " + spec.key + "\noption."),
              std::string::npos)
        << spec.variable;
  }
}

}  // namespace
}  // namespace softdat
