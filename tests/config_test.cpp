#include "config/config.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "support/temp_dir.hpp"

using namespace baton::config;

namespace {

env_lookup env_of(std::map<std::string, std::string> vars) {
  return [vars](const std::string& k) -> std::optional<std::string> {
    auto it = vars.find(k);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

const env_lookup no_env = env_of({});

config_error error_of(const std::string& yaml) {
  auto r = load_from_string(yaml, "/etc/baton.yaml", no_env);
  EXPECT_FALSE(r.value) << "accepted: " << yaml;
  return r.error.value_or(config_error{});
}

}  // namespace

TEST(Config, MissingFileMeansDefaultsAndAWarning) {
  auto r = load("/nonexistent/baton.yaml", no_env);
  ASSERT_TRUE(r.value);
  EXPECT_EQ(r.value->listen.host, "127.0.0.1");
  EXPECT_EQ(r.value->listen.port, 36158);
  EXPECT_EQ(r.value->data_dir, "./var/baton");
  EXPECT_EQ(r.value->actor_threads, 2);
  EXPECT_EQ(r.value->http_read_timeout_seconds, 30);
  EXPECT_EQ(r.value->http_idle_timeout_seconds, 120);
  EXPECT_EQ(r.value->http_max_connections, 20000);
  EXPECT_EQ(r.value->http_max_buffered_request_bytes, 256 << 20);
  EXPECT_EQ(r.value->http_worker_reply_deadline_ms, 10000);
  EXPECT_EQ(r.value->source, "");
  ASSERT_EQ(r.value->warnings.size(), 1u);
  EXPECT_NE(r.value->warnings[0].find("/nonexistent/baton.yaml"), std::string::npos);
}

TEST(Config, ReadsEveryKey) {
  auto r = load_from_string(R"(
listen: {host: 0.0.0.0, port: 8080}
data_dir: /srv/baton
threads: {actors: 4, http: 128}
http: {keep_alive_max: 50, read_timeout_seconds: 7, idle_timeout_seconds: 60, max_connections: 500,
       max_buffered_request_bytes: 33554432, worker_reply_deadline_ms: 2500}
event_log: {group_commit_max_events: 100}
log_level: debug
workers: {heartbeat_interval_seconds: 5, heartbeat_timeout_multiplier: 1.5, reaper_interval_seconds: 2, accept_shared_token: true}
jobs: {max_attempts: 3, default_worker_image: gromacs}
)", "/etc/baton.yaml", no_env);
  ASSERT_TRUE(r.value) << r.error->what();
  const auto& s = *r.value;
  EXPECT_EQ(s.listen.host, "0.0.0.0");
  EXPECT_EQ(s.listen.port, 8080);
  EXPECT_EQ(s.data_dir, "/srv/baton");
  EXPECT_EQ(s.actor_threads, 4);
  EXPECT_EQ(s.http_threads, 128);
  EXPECT_EQ(s.keep_alive_max, 50);
  EXPECT_EQ(s.http_read_timeout_seconds, 7);
  EXPECT_EQ(s.http_idle_timeout_seconds, 60);
  EXPECT_EQ(s.http_max_connections, 500);
  EXPECT_EQ(s.http_max_buffered_request_bytes, 33554432);
  EXPECT_EQ(s.http_worker_reply_deadline_ms, 2500);
  EXPECT_EQ(s.group_commit_max_events, 100);
  EXPECT_EQ(s.log_level, "debug");
  EXPECT_EQ(s.heartbeat_interval_seconds, 5);
  EXPECT_EQ(s.heartbeat_timeout_multiplier, 1.5);
  EXPECT_EQ(s.reaper_interval_seconds, 2);
  EXPECT_TRUE(s.accept_shared_token);
  EXPECT_EQ(s.max_attempts, 3);
  EXPECT_EQ(s.default_worker_image, "gromacs");
  EXPECT_EQ(s.source, "/etc/baton.yaml");
}

TEST(Config, EmptyOrCommentOnlyFileMeansDefaults) {
  for (auto text : {"", "# nothing here\n", "\n\n"}) {
    auto r = load_from_string(text, "/etc/baton.yaml", no_env);
    ASSERT_TRUE(r.value) << text;
    EXPECT_EQ(r.value->listen.port, 36158);
  }
}

TEST(Config, WrongTypesNameTheKeyAndFile) {
  auto e = error_of("listen:\n  port: abc\n");
  EXPECT_EQ(e.key, "listen.port");
  EXPECT_EQ(e.file, "/etc/baton.yaml");
  EXPECT_NE(e.what().find("/etc/baton.yaml"), std::string::npos);
  EXPECT_NE(e.what().find("'listen.port'"), std::string::npos);
  EXPECT_NE(e.what().find("'abc'"), std::string::npos);
  EXPECT_EQ(error_of("threads: 3\n").key, "threads");
  EXPECT_EQ(error_of("data_dir: [1, 2]\n").key, "data_dir");
  EXPECT_EQ(error_of("listen:\n  port: 8080.5\n").key, "listen.port");
  EXPECT_EQ(error_of("threads:\n  http: {a: 1}\n").key, "threads.http");
  EXPECT_EQ(error_of("workers: {accept_shared_token: maybe}\n").key, "workers.accept_shared_token");
  EXPECT_EQ(error_of("workers: {heartbeat_timeout_multiplier: 0.5}\n").key, "workers.heartbeat_timeout_multiplier");
  EXPECT_EQ(error_of("- a\n- b\n").key, "(top level)");
}

TEST(Config, OutOfRangeAndUnknownValues) {
  EXPECT_EQ(error_of("listen: {port: 70000}\n").key, "listen.port");
  EXPECT_EQ(error_of("listen: {port: -1}\n").key, "listen.port");
  EXPECT_EQ(error_of("threads: {actors: 0}\n").key, "threads.actors");
  EXPECT_EQ(error_of("event_log: {group_commit_max_events: 0}\n").key, "event_log.group_commit_max_events");
  EXPECT_EQ(error_of("http: {read_timeout_seconds: 0}\n").key, "http.read_timeout_seconds");
  EXPECT_EQ(error_of("http: {idle_timeout_seconds: soon}\n").key, "http.idle_timeout_seconds");
  EXPECT_EQ(error_of("http: {max_connections: 0}\n").key, "http.max_connections");
  auto small = error_of("http: {max_buffered_request_bytes: 1000}\n");  // below one largest request
  EXPECT_EQ(small.key, "http.max_buffered_request_bytes");
  EXPECT_NE(small.message.find("1000"), std::string::npos) << small.message;
  EXPECT_EQ(error_of("http: {worker_reply_deadline_ms: -5}\n").key, "http.worker_reply_deadline_ms");
  EXPECT_EQ(error_of("http: {reply_deadline: 5}\n").key, "http.reply_deadline");
  auto e = error_of("log_level: loud\n");
  EXPECT_EQ(e.key, "log_level");
  EXPECT_NE(e.message.find("'loud'"), std::string::npos);
}

TEST(Config, UnknownKeysAreTypos) {
  auto e = error_of("listne:\n  port: 1\n");
  EXPECT_EQ(e.key, "listne");
  EXPECT_NE(e.message.find("unknown key"), std::string::npos);
  EXPECT_EQ(error_of("listen: {prot: 1}\n").key, "listen.prot");
}

TEST(Config, SecretsAreRefusedInTheFile) {
  auto e = error_of("api_token: hunter2\n");
  EXPECT_EQ(e.key, "api_token");
  EXPECT_NE(e.message.find("BATON_API_TOKEN"), std::string::npos);
  EXPECT_EQ(e.what().find("hunter2"), std::string::npos) << "the secret leaked into the error";
}

TEST(Config, BadYamlSyntaxIsReportedWithItsPosition) {
  auto e = error_of("listen: {host: [unclosed\n");
  EXPECT_EQ(e.key, "");
  EXPECT_NE(e.message.find("invalid YAML"), std::string::npos);
  EXPECT_NE(e.message.find("line"), std::string::npos) << e.message;
}

TEST(Config, EnvironmentOverridesTheFile) {
  auto env = env_of({{"BATON_API_TOKEN", "s3cret"},
                     {"BATON_DATA_DIR", "/env/data"},
                     {"BATON_LISTEN", "10.1.2.3:9000"},
                     {"BATON_LOG_LEVEL", "warn"}});
  auto r = load_from_string("data_dir: /file/data\nlisten: {port: 1}\nlog_level: debug\n", "/f.yaml", env);
  ASSERT_TRUE(r.value) << r.error->what();
  EXPECT_EQ(r.value->api_token, "s3cret");
  EXPECT_EQ(r.value->data_dir, "/env/data");
  EXPECT_EQ(r.value->listen.host, "10.1.2.3");
  EXPECT_EQ(r.value->listen.port, 9000);
  EXPECT_EQ(r.value->log_level, "warn");
  // Empty variables count as unset.
  auto empty = load_from_string("data_dir: /file/data\n", "/f.yaml", env_of({{"BATON_DATA_DIR", ""}}));
  EXPECT_EQ(empty.value->data_dir, "/file/data");
}

TEST(Config, BadEnvironmentValuesNameTheVariable) {
  for (auto bad : {"nocolon", ":80", "host:", "host:99999", "host:8o"}) {
    auto r = load_from_string("", "/f.yaml", env_of({{"BATON_LISTEN", bad}}));
    ASSERT_FALSE(r.value) << bad;
    EXPECT_EQ(r.error->key, "BATON_LISTEN");
    EXPECT_EQ(r.error->file, "");
    EXPECT_NE(r.error->what().find("environment"), std::string::npos);
  }
  auto r = load_from_string("", "/f.yaml", env_of({{"BATON_LOG_LEVEL", "chatty"}}));
  ASSERT_FALSE(r.value);
  EXPECT_EQ(r.error->key, "BATON_LOG_LEVEL");
}

TEST(Config, ConfigPathFollowsBatonConfigThenHome) {
  EXPECT_EQ(config_path(env_of({{"BATON_CONFIG", "/x/y.yaml"}, {"HOME", "/home/u"}})), "/x/y.yaml");
  EXPECT_EQ(config_path(env_of({{"BATON_CONFIG", ""}, {"HOME", "/home/u"}})), "/home/u/.config/baton/config.yaml");
  EXPECT_EQ(config_path(env_of({{"HOME", "/home/u"}})), "/home/u/.config/baton/config.yaml");
}

TEST(Config, ReadsARealFileAndRefusesADirectory) {
  baton::test::temp_dir dir;
  std::ofstream(dir / "c.yaml") << "listen:\n  port: 4242\n";
  auto r = load(dir / "c.yaml", no_env);
  ASSERT_TRUE(r.value);
  EXPECT_EQ(r.value->listen.port, 4242);
  EXPECT_EQ(r.value->source, dir / "c.yaml");
  EXPECT_TRUE(r.value->warnings.empty());
  auto d = load(dir.path(), no_env);
  ASSERT_FALSE(d.value);
  EXPECT_EQ(d.error->file, dir.path());
  EXPECT_NE(d.error->what().find("directory"), std::string::npos);
}

TEST(Config, KillInvalidDependenciesDefaultsOnAndIsRecordedOnlyWhenOff) {
  auto defaults = load_from_string("", "/etc/baton.yaml", no_env);
  ASSERT_TRUE(defaults.value);
  EXPECT_TRUE(defaults.value->priority.kill_invalid_dependencies);
  EXPECT_FALSE(baton::core::to_json(defaults.value->priority).contains("kill_invalid_dependencies"))
      << "policies recorded before the key existed must re-derive unchanged";
  auto off = load_from_string("scheduling: {kill_invalid_dependencies: false}\n", "/etc/baton.yaml", no_env);
  ASSERT_TRUE(off.value) << off.error->what();
  EXPECT_FALSE(off.value->priority.kill_invalid_dependencies);
  auto recorded = baton::core::to_json(off.value->priority);
  EXPECT_EQ(recorded["kill_invalid_dependencies"], false);
  EXPECT_FALSE(baton::core::policy_from_json(recorded).kill_invalid_dependencies);
  EXPECT_EQ(error_of("scheduling: {kill_invalid_dependencies: maybe}\n").key, "scheduling.kill_invalid_dependencies");
}
