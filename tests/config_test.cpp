#include "config/config.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <limits>
#include <map>

#include "core/events/event_types.hpp"
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
  EXPECT_EQ(r.value->http_unauthenticated_timeout_seconds, 10);
  EXPECT_EQ(r.value->http_max_unauthenticated_per_address, 32);
  EXPECT_EQ(r.value->event_streams_per_operator, 16);
  EXPECT_DOUBLE_EQ(r.value->login_failures.capacity, 10);
  EXPECT_DOUBLE_EQ(r.value->login_failures.refill_per_second, 0.1);
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
       max_buffered_request_bytes: 33554432, worker_reply_deadline_ms: 2500, unauthenticated_timeout_seconds: 3,
       max_unauthenticated_connections_per_address: 8}
limits: {login_failures_burst: 5, login_failures_per_second: 0.5, event_streams_per_operator: 4}
event_log: {group_commit_max_events: 100, min_free_mb: 32}
log_level: debug
workers: {heartbeat_interval_seconds: 5, heartbeat_timeout_multiplier: 1.5, reaper_interval_seconds: 2, accept_shared_token: true}
jobs: {max_attempts: 3, default_worker_image: gromacs}
)",
                            "/etc/baton.yaml", no_env);
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
  EXPECT_EQ(s.http_unauthenticated_timeout_seconds, 3);
  EXPECT_EQ(s.http_max_unauthenticated_per_address, 8);
  EXPECT_DOUBLE_EQ(s.login_failures.capacity, 5);
  EXPECT_DOUBLE_EQ(s.login_failures.refill_per_second, 0.5);
  EXPECT_EQ(s.event_streams_per_operator, 4);
  EXPECT_EQ(s.group_commit_max_events, 100);
  EXPECT_EQ(s.min_free_mb, 32);
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
  EXPECT_EQ(error_of("event_log: {min_free_mb: -1}\n").key, "event_log.min_free_mb");
  EXPECT_EQ(error_of("http: {read_timeout_seconds: 0}\n").key, "http.read_timeout_seconds");
  EXPECT_EQ(error_of("http: {idle_timeout_seconds: soon}\n").key, "http.idle_timeout_seconds");
  EXPECT_EQ(error_of("http: {max_connections: 0}\n").key, "http.max_connections");
  auto small = error_of("http: {max_buffered_request_bytes: 1000}\n");  // below one largest request
  EXPECT_EQ(small.key, "http.max_buffered_request_bytes");
  EXPECT_NE(small.message.find("1000"), std::string::npos) << small.message;
  EXPECT_EQ(error_of("http: {worker_reply_deadline_ms: -5}\n").key, "http.worker_reply_deadline_ms");
  EXPECT_EQ(error_of("http: {reply_deadline: 5}\n").key, "http.reply_deadline");
  EXPECT_EQ(error_of("http: {unauthenticated_timeout_seconds: 0}\n").key, "http.unauthenticated_timeout_seconds");
  EXPECT_EQ(error_of("http: {max_unauthenticated_connections_per_address: 0}\n").key,
            "http.max_unauthenticated_connections_per_address");
  EXPECT_EQ(error_of("limits: {login_failures_burst: 0}\n").key, "limits.login_failures_burst");
  EXPECT_EQ(error_of("limits: {login_failures_per_second: -1}\n").key, "limits.login_failures_per_second");
  EXPECT_EQ(error_of("limits: {event_streams_per_operator: 0}\n").key, "limits.event_streams_per_operator");
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

// YAML keeps both entries of a repeated key and a lookup finds the first: the second block
// would be dropped without a word (as an operator adding a second `projections:` found).
TEST(Config, AKeyGivenTwiceIsRefusedNamingItAndBothLines) {
  auto top = error_of("projections: {postgres: {dsn: \"host=/tmp\"}}\nlog_level: warn\nprojections: {sqlite: false}\n");
  EXPECT_EQ(top.key, "projections");
  EXPECT_NE(top.message.find("given twice (lines 1 and 3)"), std::string::npos) << top.message;
  EXPECT_EQ(error_of("event_log:\n  snapshot_every_events: 10\n  snapshot_every_events: 0\n").key,
            "event_log.snapshot_every_events");
  EXPECT_EQ(error_of("accounts: {a: {shares: 1}, a: {shares: 2}}\n").key, "accounts.a");
  EXPECT_EQ(error_of("scheduling: {partitions: {gpu: {}, gpu: {priority_tier: 2}}}\n").key, "scheduling.partitions.gpu");
  // Different keys, and the same key in two different maps, are fine.
  EXPECT_TRUE(load_from_string("listen: {port: 1}\nhttp: {}\nevent_log: {snapshot_every_events: 0}\n", "f.yaml", no_env)
                  .value.has_value());
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
  auto env = env_of({{"BATON_API_TOKEN", "s3cret-0123456789abcdef"},
                     {"BATON_DATA_DIR", "/env/data"},
                     {"BATON_LISTEN", "10.1.2.3:9000"},
                     {"BATON_LOG_LEVEL", "warn"}});
  auto r = load_from_string("data_dir: /file/data\nlisten: {port: 1}\nlog_level: debug\n", "/f.yaml", env);
  ASSERT_TRUE(r.value) << r.error->what();
  EXPECT_EQ(r.value->api_token, "s3cret-0123456789abcdef");
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

// BATON_API_TOKEN=a would start and fall to guessing; the same value as admin and pilot token
// would make every pilot an admin. batond refuses both at start, naming the variable
// (Batond.WeakOrRepeatedSecretsStopWithExitCode2NamingThem).
TEST(Config, WeakOrRepeatedSecretsAreRefusedNamingTheVariable) {
  const std::string strong = "0123456789abcdef", other = "fedcba9876543210";
  for (auto name : {"BATON_API_TOKEN", "BATON_PILOT_TOKEN", "BATON_METRICS_TOKEN"}) {
    auto e = check_secrets({{name, "a"}});
    ASSERT_TRUE(e) << name;
    EXPECT_EQ(e->key, name);
    EXPECT_NE(e->message.find("at least 16"), std::string::npos) << e->message;
    EXPECT_TRUE(check_secrets({{name, strong.substr(1)}})) << name;
    EXPECT_FALSE(check_secrets({{name, strong}})) << name;
  }
  auto same = check_secrets({{"BATON_API_TOKEN", strong}, {"BATON_PILOT_TOKEN", strong}});
  ASSERT_TRUE(same);
  EXPECT_EQ(same->key, "BATON_PILOT_TOKEN");
  EXPECT_NE(same->message.find("BATON_API_TOKEN"), std::string::npos) << same->message;
  auto scrape = check_secrets({{"BATON_API_TOKEN", ""}, {"BATON_PILOT_TOKEN", other}, {"BATON_METRICS_TOKEN", other}});
  ASSERT_TRUE(scrape);
  EXPECT_EQ(scrape->key, "BATON_METRICS_TOKEN");
  EXPECT_FALSE(check_secrets({{"BATON_API_TOKEN", strong}, {"BATON_PILOT_TOKEN", other}, {"BATON_METRICS_TOKEN", ""}}))
      << "unset ones are not compared";
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

TEST(Config, SchedulingAccountsAndLimitsAreReadIntoThePolicy) {
  auto r = load_from_string(R"(scheduling:
  policy: lattice:ml_training
  priority_calc_period_seconds: 30
  priority_max_age_days: 2.5
  weights: {age: 1, fairshare: 2, job_size: 3, partition: 4, qos: 5}
  partitions: {normal: {priority_tier: 1, priority_factor: 1}, test: {priority_tier: 100, priority_factor: 10}}
  default_partition: test
  qos: {normal: {priority_factor: 0}, short: {priority_factor: 100, max_running_per_user: 2}}
  max_jobs_per_user: 7
accounts:
  chem: {shares: 60, users: {ann: 1, bob: 2}}
  bio: {parent: chem, shares: 5}
  root: {users: {eve: 20}}
limits: {operator_requests_burst: 10, operator_requests_per_second: 0.5, worker_requests_per_second: 0}
)",
                            "/etc/baton.yaml", no_env);
  ASSERT_TRUE(r.value) << r.error->what();
  const auto& p = r.value->priority;
  EXPECT_EQ(baton::core::policy_name(p), "lattice:ml_training");
  EXPECT_EQ(p.calc_period, 30'000'000);
  EXPECT_EQ(p.multifactor.max_age, 216'000'000'000);
  EXPECT_EQ(p.multifactor.weights.qos, 5u);
  ASSERT_EQ(p.partitions.size(), 2u);
  EXPECT_EQ(p.partition("test")->priority_tier, 100);
  EXPECT_EQ(p.default_partition, "test");
  EXPECT_EQ(p.find_qos("short")->max_running_per_user, 2u);
  EXPECT_EQ(p.max_jobs_per_user, 7u);
  EXPECT_EQ(p.account("bio")->parent, "chem");
  EXPECT_EQ(p.accounts_of("bob"), std::vector<std::string>{"chem"});
  EXPECT_EQ(p.account("root")->users.at("eve"), 20u);
  EXPECT_DOUBLE_EQ(r.value->operator_requests.capacity, 10);
  EXPECT_DOUBLE_EQ(r.value->operator_requests.refill_per_second, 0.5);
  EXPECT_DOUBLE_EQ(r.value->worker_requests.refill_per_second, 0);
  auto defaults = load_from_string("", "", no_env);
  EXPECT_EQ(baton::core::policy_name(defaults.value->priority), "multifactor") << "the default policy";
  EXPECT_EQ(defaults.value->priority.multifactor.weights.partition, 1'000'000u) << "GWDG's weights";
}

TEST(Config, SchedulingErrorsNameTheKey) {
  EXPECT_EQ(error_of("scheduling: {policy: lattice:fast}\n").key, "scheduling.policy");
  EXPECT_EQ(error_of("scheduling: {default_partition: nope}\n").key, "scheduling.default_partition");
  EXPECT_EQ(error_of("scheduling: {partitions: {\"a b\": {}}}\n").key, "scheduling.partitions.a b");
  EXPECT_EQ(error_of("scheduling: {qos: {short: {max_running_per_user: -1}}}\n").key,
            "scheduling.qos.short.max_running_per_user");
  EXPECT_EQ(error_of("scheduling: {energy_prices: [1, 2]}\n").key, "scheduling.energy_prices");
  EXPECT_EQ(error_of("scheduling: {weights: {speed: 1}}\n").key, "scheduling.weights.speed");
  auto cycle = error_of("accounts: {a: {parent: b}, b: {parent: a}}\n");
  EXPECT_EQ(cycle.key, "accounts");
  EXPECT_NE(cycle.message.find("cycle"), std::string::npos) << cycle.message;
  EXPECT_NE(error_of("accounts: {a: {parent: nowhere}}\n").message.find("unknown parent"), std::string::npos);
  EXPECT_EQ(error_of("accounts: {a: {users: {ann: zero}}}\n").key, "accounts.a.users.ann.shares");
  EXPECT_EQ(error_of("limits: {operator_requests_per_second: fast}\n").key, "limits.operator_requests_per_second");
}

TEST(Config, DeadlineRuleKeysHaveDefaultsAndRanges) {
  auto defaults = load_from_string("", "", no_env);
  EXPECT_EQ(defaults.value->deadlines.default_time_limit_seconds, 3600);
  EXPECT_EQ(defaults.value->deadlines.min_useful_seconds, 600);
  auto set = load_from_string("scheduling: {default_time_limit_seconds: 7200, min_useful_seconds: 300}\n", "", no_env);
  ASSERT_TRUE(set.value) << set.error->what();
  EXPECT_EQ(set.value->deadlines.default_time_limit_seconds, 7200);
  EXPECT_EQ(set.value->deadlines.min_useful_seconds, 300);
  EXPECT_EQ(error_of("scheduling: {default_time_limit_seconds: 0}\n").key, "scheduling.default_time_limit_seconds");
  EXPECT_EQ(error_of("scheduling: {min_useful_seconds: soon}\n").key, "scheduling.min_useful_seconds");
}

TEST(Config, PreemptionRulesAreReadAndRecordedAndTheirErrorsNameTheKey) {
  auto r = load_from_string(R"(scheduling:
  partitions: {work1: {priority_tier: 1}, owner: {priority_tier: 10, preempt: [work1]}}
  qos: {normal: {}, scavenger: {}, urgent: {preempt: [scavenger, normal]}}
  preempt_grace_seconds: 90
)",
                            "/etc/baton.yaml", no_env);
  ASSERT_TRUE(r.value) << r.error->what();
  const auto& p = r.value->priority;
  EXPECT_EQ(p.partition("owner")->preempt, std::vector<std::string>{"work1"});
  EXPECT_EQ(p.find_qos("urgent")->preempt, (std::vector<std::string>{"scavenger", "normal"}));
  EXPECT_EQ(p.preempt_grace_seconds, 90);
  EXPECT_TRUE(p.may_preempt("owner", "normal", "work1", "normal"));
  EXPECT_TRUE(p.may_preempt("work1", "urgent", "owner", "scavenger")) << "the QOS alone allows it";
  EXPECT_FALSE(p.may_preempt("work1", "normal", "work1", "scavenger"));
  EXPECT_TRUE(p.may_preempt_any("work1", "urgent"));
  EXPECT_FALSE(p.may_preempt_any("work1", "scavenger"));
  // Recorded with the policy, and read back whole.
  auto back = baton::core::policy_from_json(baton::core::to_json(p));
  EXPECT_EQ(back.partition("owner")->preempt, p.partition("owner")->preempt);
  EXPECT_EQ(back.find_qos("urgent")->preempt, p.find_qos("urgent")->preempt);
  EXPECT_EQ(back.preempt_grace_seconds, 90);
  // A recorded grace outside the config's range (a damaged or hand-made log) reads as the
  // default: preemption adds it, in microseconds, to the time of the decision.
  for (int64_t recorded : {int64_t{-1}, int64_t{7 * 86400 + 1}, std::numeric_limits<int64_t>::max()}) {
    auto r = baton::core::to_record(p);
    r.preempt_grace_seconds = recorded;
    EXPECT_EQ(baton::core::policy_of(r).preempt_grace_seconds, 300) << recorded;
  }
  // The config's bound and the log's are one: a week is accepted by both, a second more by neither.
  auto week = load_from_string("scheduling: {qos: {low: {}, high: {preempt: [low]}}, preempt_grace_seconds: 604800}\n",
                               "/etc/baton.yaml", no_env);
  ASSERT_TRUE(week.value) << week.error->what();
  EXPECT_EQ(baton::core::policy_of(baton::core::to_record(week.value->priority)).preempt_grace_seconds, 604800);
  EXPECT_EQ(error_of("scheduling: {preempt_grace_seconds: 604801}\n").key, "scheduling.preempt_grace_seconds");
  auto none = load_from_string("", "", no_env);
  EXPECT_FALSE(none.value->priority.preemption_configured());
  EXPECT_FALSE(baton::core::to_json(none.value->priority).contains("preempt_grace_seconds"))
      << "a policy without preemption is recorded as before";

  EXPECT_EQ(error_of("scheduling: {partitions: {a: {preempt: [b]}}}\n").key, "scheduling.partitions.a.preempt[0]");
  auto self = error_of("scheduling: {qos: {normal: {}, q: {preempt: [normal, q]}}}\n");
  EXPECT_EQ(self.key, "scheduling.qos.q.preempt[1]");
  EXPECT_NE(self.message.find("itself"), std::string::npos) << self.message;
  EXPECT_EQ(error_of("scheduling: {qos: {q: {preempt: normal}}}\n").key, "scheduling.qos.q.preempt");
  EXPECT_EQ(error_of("scheduling: {preempt_grace_seconds: -1}\n").key, "scheduling.preempt_grace_seconds");
}

TEST(Config, TlsNeedsBothFilesAndNamesTheMissingOne) {
  auto off = load_from_string("", "/f.yaml", no_env);
  ASSERT_TRUE(off.value);
  EXPECT_FALSE(off.value->tls.enabled());
  auto on = load_from_string("tls: {cert_file: /etc/baton/cert.pem, key_file: /etc/baton/key.pem}\n", "/f.yaml", no_env);
  ASSERT_TRUE(on.value) << on.error->what();
  EXPECT_TRUE(on.value->tls.enabled());
  EXPECT_EQ(on.value->tls.cert_file, "/etc/baton/cert.pem");
  EXPECT_EQ(on.value->tls.key_file, "/etc/baton/key.pem");
  EXPECT_EQ(error_of("tls: {cert_file: /c.pem}\n").key, "tls.key_file");
  EXPECT_EQ(error_of("tls: {key_file: /k.pem}\n").key, "tls.cert_file");
  EXPECT_EQ(error_of("tls: {cert_file: /c.pem, key_file: /k.pem, ca: x}\n").key, "tls.ca");
}

// The upload key (docs/storage.md): its id from the file or the environment, its secret only
// from the environment; the two go together, and it is a key of its own.
TEST(ConfigS3, AnUploadKeyGoesWithItsSecretAndIsAKeyOfItsOwn) {
  const std::string yaml =
      "storage: {backend: s3, s3: {endpoint: \"http://127.0.0.1:9000\", bucket: b, access_key_id: OWNER, "
      "upload_access_key_id: UPLOAD}}\n";
  auto without_secret = load_from_string(yaml, "/etc/baton.yaml", env_of({{"BATON_S3_SECRET_ACCESS_KEY", "s"}}));
  ASSERT_TRUE(without_secret.error);
  EXPECT_EQ(without_secret.error->key, "BATON_S3_UPLOAD_SECRET_ACCESS_KEY");

  auto both = load_from_string(yaml, "/etc/baton.yaml",
                               env_of({{"BATON_S3_SECRET_ACCESS_KEY", "s"}, {"BATON_S3_UPLOAD_SECRET_ACCESS_KEY", "u"}}));
  ASSERT_TRUE(both.value) << both.error->message;
  EXPECT_EQ(both.value->storage.s3.upload_access_key_id, "UPLOAD");
  EXPECT_EQ(both.value->storage.s3.upload_secret_access_key, "u");

  const std::string no_id =
      "storage: {backend: s3, s3: {endpoint: \"http://127.0.0.1:9000\", bucket: b, access_key_id: OWNER}}\n";
  auto secret_alone = load_from_string(no_id, "/etc/baton.yaml",
                                       env_of({{"BATON_S3_SECRET_ACCESS_KEY", "s"}, {"BATON_S3_UPLOAD_SECRET_ACCESS_KEY", "u"}}));
  ASSERT_TRUE(secret_alone.error);
  EXPECT_EQ(secret_alone.error->key, "storage.s3.upload_access_key_id");
  auto from_env = load_from_string(no_id, "/etc/baton.yaml",
                                   env_of({{"BATON_S3_SECRET_ACCESS_KEY", "s"},
                                           {"BATON_S3_UPLOAD_ACCESS_KEY_ID", "UPLOAD"},
                                           {"BATON_S3_UPLOAD_SECRET_ACCESS_KEY", "u"}}));
  ASSERT_TRUE(from_env.value) << from_env.error->message;
  EXPECT_EQ(from_env.value->storage.s3.upload_access_key_id, "UPLOAD");

  const std::string same =
      "storage: {backend: s3, s3: {endpoint: \"http://127.0.0.1:9000\", bucket: b, access_key_id: OWNER, "
      "upload_access_key_id: OWNER}}\n";
  auto same_key = load_from_string(same, "/etc/baton.yaml",
                                   env_of({{"BATON_S3_SECRET_ACCESS_KEY", "s"}, {"BATON_S3_UPLOAD_SECRET_ACCESS_KEY", "u"}}));
  ASSERT_TRUE(same_key.error);
  EXPECT_EQ(same_key.error->key, "storage.s3.upload_access_key_id");
}
