// The CLI's own reading of batond's config file (cli/cli_config.hpp): the address, HTTPS and
// the data directory, with the environment over them; batond's other sections are not its
// business, whatever they hold.
#include <gtest/gtest.h>

#include <fstream>
#include <map>

#include "cli/cli_config.hpp"
#include "support/temp_dir.hpp"

using namespace baton::cli;

namespace {

baton::config::env_lookup env_of(std::map<std::string, std::string> vars) {
  return [vars](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

cli_config read(const std::string& yaml, std::map<std::string, std::string> vars = {}) {
  auto r = cli_config_from_string(yaml, "c.yaml", env_of(std::move(vars)));
  EXPECT_FALSE(r.error) << r.error->what();
  return r.value.value_or(cli_config{});
}

std::string error_of(const std::string& yaml, std::map<std::string, std::string> vars = {}) {
  auto r = cli_config_from_string(yaml, "c.yaml", env_of(std::move(vars)));
  return r.error ? r.error->what() : "";
}

}  // namespace

TEST(CliConfig, DefaultsAreBatondsOwn) {
  auto c = read("");
  EXPECT_EQ(c.listen.host, "127.0.0.1");
  EXPECT_EQ(c.listen.port, 36158);
  EXPECT_FALSE(c.https);
  EXPECT_EQ(c.data_dir, "./var/baton");
  EXPECT_EQ(c.api_token, "");
}

TEST(CliConfig, ItsKeysFromTheFileAndTheEnvironmentOverThem) {
  const std::string yaml =
      "listen: {host: 0.0.0.0, port: 4000}\ndata_dir: /srv/baton\ntls: {cert_file: c.pem, key_file: k.pem}\n";
  auto c = read(yaml);
  EXPECT_EQ(c.listen.host, "0.0.0.0");
  EXPECT_EQ(c.listen.port, 4000);
  EXPECT_EQ(c.data_dir, "/srv/baton");
  EXPECT_TRUE(c.https);
  c = read(yaml, {{"BATON_LISTEN", "10.0.0.1:5000"}, {"BATON_DATA_DIR", "/elsewhere"}, {"BATON_API_TOKEN", "t0ken"}});
  EXPECT_EQ(c.listen.host, "10.0.0.1");
  EXPECT_EQ(c.listen.port, 5000);
  EXPECT_EQ(c.data_dir, "/elsewhere");
  EXPECT_EQ(c.api_token, "t0ken");
  EXPECT_EQ(read(yaml, {{"BATON_API_TOKEN", ""}, {"BATON_DATA_DIR", ""}}).data_dir, "/srv/baton") << "empty counts as unset";
}

// batond refuses these files (or this environment); the CLI reads its keys and goes on.
TEST(CliConfig, BatondsOtherSectionsAreNotReadEvenWhenWrong) {
  auto c = read(
      "listen: {port: 4001}\nscheduling: {priority: nonsense}\nsalad: {organization: o, project: p}\n"
      "storage: {backend: s3}\nlog_level: loud\nnot_a_key: 1\n");
  EXPECT_EQ(c.listen.port, 4001);
  EXPECT_EQ(read("", {{"BATON_LOG_LEVEL", "loud"}}).listen.port, 36158);
}

TEST(CliConfig, MistakesInItsOwnKeysAreErrorsNamingThem) {
  EXPECT_NE(error_of("listen: {port: 70000}").find("key 'listen.port'"), std::string::npos);
  EXPECT_NE(error_of("listen: {prot: 1}").find("key 'listen.prot': unknown key"), std::string::npos);
  EXPECT_NE(error_of("tls: {cert_file: c.pem}").find("key 'tls.key_file'"), std::string::npos);
  EXPECT_NE(error_of("data_dir: [a]").find("key 'data_dir'"), std::string::npos);
  EXPECT_NE(error_of("listen: {port: 1}\nlisten: {port: 2}\n").find("given twice"), std::string::npos);
  EXPECT_NE(error_of("- a list\n").find("(top level)"), std::string::npos);
  EXPECT_NE(error_of("listen: {port: [1\n").find("invalid YAML"), std::string::npos);
  EXPECT_EQ(error_of("", {{"BATON_LISTEN", "nohost"}}),
            "config error in the environment: key 'BATON_LISTEN': expected HOST:PORT with PORT in 0..65535, got 'nohost'");
}

TEST(CliConfig, TheFileIsChosenAsBatondChoosesIt) {
  baton::test::temp_dir dir;
  std::ofstream(dir / "c.yaml") << "listen: {port: 4100}\n";
  auto env = env_of({{"BATON_CONFIG", dir / "c.yaml"}, {"HOME", dir.path()}});
  auto r = load_cli_config(baton::config::choose_config("", env), env);
  ASSERT_TRUE(r.value) << r.error->what();
  EXPECT_EQ(r.value->listen.port, 4100);
  auto missing = load_cli_config(baton::config::choose_config(dir / "typo.yaml", env), env);
  ASSERT_TRUE(missing.error);
  EXPECT_NE(missing.error->what().find("named by --config"), std::string::npos) << missing.error->what();
  auto home = env_of({{"HOME", dir.path()}});
  auto by_default = load_cli_config(baton::config::choose_config("", home), home);  // ~/.config/baton/config.yaml, absent
  ASSERT_TRUE(by_default.value);
  EXPECT_EQ(by_default.value->listen.port, 36158);
  EXPECT_EQ(by_default.value->warnings.size(), 1u);
  EXPECT_TRUE(load_cli_config(baton::config::choose_config(dir.path(), env), env).error) << "a directory";
}
