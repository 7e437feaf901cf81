// The nearest known field to a misspelt one (http/request_parsing.hpp), as a pure function:
// what the 422 for an unknown field suggests.
#include <gtest/gtest.h>

#include "http/request_parsing.hpp"

using baton::http::check_known_fields;
using baton::http::closest_name;
using baton::http::invalid_field;

namespace {
const baton::http::field_names job = {
    "id",   "title",     "input_bundle",       "input_bundle_path", "comment",    "user",         "qos",       "nice",
    "hold", "gpu_count", "time_limit_seconds", "checkpoints",       "depends_on", "max_attempts", "partition", "account"};
}

TEST(closest_name, SpellingCaseSeparatorsAndSharedWords) {
  EXPECT_EQ(closest_name("gpus", job), "gpu_count") << "a shared word, not qos at three edits";
  EXPECT_EQ(closest_name("GPU-Count", job), "gpu_count");
  EXPECT_EQ(closest_name("gpuCount", job), "gpu_count");
  EXPECT_EQ(closest_name("titel", job), "title") << "a swap of neighbours is one edit";
  EXPECT_EQ(closest_name("checkpoint", job), "checkpoints");
  EXPECT_EQ(closest_name("attempts", job), "max_attempts");
  EXPECT_EQ(closest_name("bundle", job), "input_bundle") << "of two sharing the word, the nearer";
  EXPECT_EQ(closest_name("time", job), "time_limit_seconds");
  EXPECT_EQ(closest_name("walltime", job), "");
  EXPECT_EQ(closest_name("xy", job), "");
  EXPECT_EQ(closest_name(std::string(100, 'g'), job), "") << "no suggestion for a name no one types";
}

TEST(check_known_fields, NamesTheFirstUnknownFieldWithItsPlace) {
  EXPECT_NO_THROW(check_known_fields(nlohmann::json{{"title", "t"}, {"hold", true}}, job));
  EXPECT_NO_THROW(check_known_fields(nlohmann::json::array(), job)) << "not an object: its shape is checked elsewhere";
  try {
    check_known_fields(nlohmann::json{{"title", "t"}, {"sise", 1}}, {"sha256", "size"}, "input_bundle.");
    FAIL() << "sise is not a field";
  } catch (const invalid_field& e) {
    EXPECT_EQ(e.field, "input_bundle.sise");
    EXPECT_EQ(e.status, 422);
    EXPECT_STREQ(e.what(), "unknown field 'sise'; did you mean 'size'?");
  }
  try {
    check_known_fields(nlohmann::json{{std::string(300, 'z'), 1}}, {"a", "b"});
    FAIL();
  } catch (const invalid_field& e) {
    EXPECT_EQ(e.field, std::string(64, 'z') + "...") << "a long name is cut in the answer";
    EXPECT_STREQ(e.what(), ("unknown field '" + std::string(64, 'z') + "...'; the fields here are a, b").c_str());
  }
}
