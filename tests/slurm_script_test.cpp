// The sbatch script and the Slurm client helpers: quoting keeps hostile values inert when a
// real bash runs the rendered script; squeue's exit-code quirks; batond's secrets kept from what it runs.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "slurm/cluster_client.hpp"
#include "slurm/sbatch_script.hpp"
#include "slurm/shell_quote.hpp"
#include "slurm/squeue.hpp"
#include "support/temp_dir.hpp"

using namespace baton::slurm;
using baton::test::temp_dir;
using baton::util::run_result;

namespace {

const std::vector<std::string> hostile = {"plain",
                                          "it's",
                                          "a'b'c",
                                          "$HOME",
                                          "${PATH}",
                                          "`touch CANARY`",
                                          "$(touch CANARY)",
                                          "; touch CANARY;",
                                          "'; touch CANARY; '",
                                          "\"; touch CANARY; \"",
                                          "a\nb",
                                          "back\\slash",
                                          "*",
                                          "&& touch CANARY",
                                          "| touch CANARY",
                                          ""};

std::map<std::string, std::string> env_lines(const std::string& out) {
  std::map<std::string, std::string> m;
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line, '\0')) {  // env -0: values may hold newlines
    auto eq = line.find('=');
    if (eq != std::string::npos) m[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return m;
}

}  // namespace

TEST(ShellQuote, EveryValueComesBackExactlyThroughBash) {
  temp_dir dir;
  for (const auto& v : hostile) {
    auto r = run_here({"bash", "-c", "cd " + shell_quote(dir.path()) + " && printf %s " + shell_quote(v)}, "",
                      std::chrono::seconds(10));
    EXPECT_EQ(r.exit_code, 0) << v;
    EXPECT_EQ(r.out, v);
  }
  EXPECT_FALSE(std::filesystem::exists(dir / "CANARY"));
}

TEST(SbatchScript, HostileValuesInEveryInjectedFieldStayInert) {
  temp_dir dir;
  for (const auto& v : hostile) {
    script_values s;
    s.job_name = "baton-1";
    s.partition = "debug";
    s.daemon_url = "http://x/" + v;
    s.api_token_file = v;
    s.ca_file = v;
    s.cluster_name = v;
    s.image_key = v;
    s.placeholder_id = v;
    s.worker_command = "env -0";
    s.handoff_margin_seconds = 900;
    auto r = render_script(default_template, s);
    ASSERT_TRUE(r.error.empty()) << r.error;
    std::ofstream(dir / "job.sh") << r.text;
    auto out = run_here(
        {"env", "-i", "PATH=/usr/bin:/bin", "SLURM_JOB_ID=1", "bash", "-c", "cd " + shell_quote(dir.path()) + " && bash job.sh"},
        "", std::chrono::seconds(20));
    ASSERT_EQ(out.exit_code, 0) << v << "\n" << out.err;
    auto env = env_lines(out.out);
    EXPECT_EQ(env["BATON_URL"], "http://x/" + v);
    EXPECT_EQ(env["BATON_API_TOKEN_FILE"], v);
    EXPECT_EQ(env["BATON_CA_FILE"], v);
    EXPECT_EQ(env.count("BATON_API_TOKEN"), 0u);
    EXPECT_EQ(env["BATON_CLUSTER_NAME"], v);
    EXPECT_EQ(env["BATON_WORKER_IMAGE_KEY"], v);
    EXPECT_EQ(env["BATON_PLACEHOLDER_ID"], v);
    EXPECT_EQ(env["BATON_PROACTIVE_HANDOFF_MARGIN_SECONDS"], "900");
    EXPECT_FALSE(std::filesystem::exists(dir / "CANARY")) << v;
  }
}

TEST(SbatchScript, WorkerCommandAndImageReachApptainerAsSingleWords) {
  temp_dir dir;
  // A stand-in apptainer that prints the arguments it got, one per line.
  std::filesystem::create_directories(dir / "bin");
  std::ofstream(dir / "bin/apptainer") << "#!/bin/sh\nfor a in \"$@\"; do printf '[%s]\\n' \"$a\"; done\n"
                                          "echo \"token=$APPTAINERENV_BATON_API_TOKEN\"\n"
                                          "echo \"once=${APPTAINERENV_BATON_API_TOKEN_FILE_REMOVE:-}\"\n";
  std::filesystem::permissions(dir / "bin/apptainer", std::filesystem::perms::owner_all);
  script_values s;
  s.job_name = "j";
  s.partition = "p";
  s.apptainer_image = "/images/x y'$(touch CANARY).sif";
  s.worker_command = "baton-worker --flag 'a b' ; `touch CANARY`";
  // The container may not see the token file: the script reads it and passes the token in
  // the container's environment.
  std::ofstream(dir / "credential") << "pilot-token-7f3a\n";
  s.api_token_file = dir / "credential";
  auto r = render_script(default_template, s);
  std::ofstream(dir / "job.sh") << r.text;
  auto out = run_here({"env", "-i", "PATH=" + dir / "bin" + ":/usr/bin:/bin", "SLURM_JOB_ID=1", "bash", "-c",
                       "cd " + shell_quote(dir.path()) + " && bash job.sh"},
                      "", std::chrono::seconds(20));
  ASSERT_EQ(out.exit_code, 0) << out.err;
  EXPECT_NE(out.out.find("[" + s.apptainer_image + "]\n[/bin/sh]\n[-c]\n[" + s.worker_command + "]\n"), std::string::npos)
      << out.out;
  EXPECT_NE(out.out.find("token=pilot-token-7f3a\n"), std::string::npos) << out.out;
  EXPECT_NE(out.out.find("once=\n"), std::string::npos) << out.out;
  EXPECT_EQ(r.text.find("pilot-token-7f3a"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(dir / "CANARY"));
  EXPECT_TRUE(std::filesystem::exists(dir / "credential")) << "a shared token's file stays";
  // A pilot's one-time credential: read, removed before the container starts, and the worker
  // inside told it is one (so it retries a registration refused before sbatch's answer arrived).
  s.api_token_file_once = true;
  r = render_script(default_template, s);
  std::ofstream(dir / "job.sh") << r.text;
  out = run_here({"env", "-i", "PATH=" + dir / "bin" + ":/usr/bin:/bin", "SLURM_JOB_ID=1", "bash", "-c",
                  "cd " + shell_quote(dir.path()) + " && bash job.sh"},
                 "", std::chrono::seconds(20));
  ASSERT_EQ(out.exit_code, 0) << out.err;
  EXPECT_NE(out.out.find("token=pilot-token-7f3a\n"), std::string::npos) << out.out;
  EXPECT_NE(out.out.find("once=1\n"), std::string::npos) << out.out;
  EXPECT_FALSE(std::filesystem::exists(dir / "credential")) << "the spent credential's file is gone";
}

TEST(SbatchScript, NamesTheTokenFileNotTheTokenAndTemplateErrorsAreReported) {
  script_values s;
  s.job_name = "j";
  s.partition = "p";
  s.api_token_file = "/shared/baton/pilot_credential";
  auto r = render_script(default_template, s);
  EXPECT_NE(r.text.find("export BATON_API_TOKEN_FILE='/shared/baton/pilot_credential'\n"), std::string::npos) << r.text;
  EXPECT_EQ(r.text.find("export BATON_API_TOKEN="), std::string::npos) << r.text;
  EXPECT_EQ(r.text.find("BATON_CA_FILE"), std::string::npos) << "no CA file, no line";
  s.ca_file = "/shared/baton/ca.pem";
  EXPECT_NE(render_script(default_template, s).text.find("export BATON_CA_FILE='/shared/baton/ca.pem'\n"), std::string::npos);
  EXPECT_NE(r.text.find("#SBATCH --partition=p\n"), std::string::npos);
  EXPECT_EQ(r.text.find("--account"), std::string::npos);  // empty optional directives are left out

  auto bad = render_script("{{#open}} never closed", s);
  EXPECT_FALSE(bad.error.empty());
  EXPECT_FALSE(template_error("{{#a}}x{{/b}}").empty());
  EXPECT_TRUE(template_error(default_template).empty());
}

TEST(Squeue, ParsesStatesAndReasons) {
  auto m = parse_squeue("12|PENDING|JobHeldUser\n13|RUNNING|None\n14\n\n15|COMPLETING|(null)\n");
  ASSERT_EQ(m.size(), 4u);
  EXPECT_EQ(m["12"].state, "PENDING");
  EXPECT_EQ(m["12"].reason, "JobHeldUser");
  EXPECT_EQ(m["13"].reason, "");
  EXPECT_EQ(m["14"].state, "UNKNOWN");
  EXPECT_EQ(m["15"].reason, "");
  EXPECT_EQ(squeue_args({"1", "2"}), (std::vector<std::string>{"--jobs", "1,2", "--noheader", "--format=%i|%T|%r"}));
}

TEST(Squeue, ExitCodeQuirks) {
  run_result one_unknown;
  one_unknown.exit_code = 1;
  one_unknown.err = "slurm_load_jobs error: Invalid job id specified\n";
  auto a = alive_from({"7"}, one_unknown);
  ASSERT_TRUE(a);
  EXPECT_TRUE(a->empty());                            // gone
  EXPECT_FALSE(alive_from({"7", "8"}, one_unknown));  // several ids never exit 1 for that: distrust
  run_result other;
  other.exit_code = 1;
  other.err = "slurm_load_jobs error: Unable to contact slurm controller\n";
  EXPECT_FALSE(alive_from({"7"}, other));  // controller down: reap nothing
  run_result timeout;
  timeout.timed_out = true;
  EXPECT_FALSE(alive_from({"7"}, timeout));
  run_result ok;
  ok.exit_code = 0;
  ok.out = "8|RUNNING|None\n";
  EXPECT_EQ(alive_from({"7", "8"}, ok)->count("8"), 1u);
}

// The launcher itself is tested in util_test; here that batond's way of running Slurm strips
// batond's secrets.
// (sbatch passes its environment on to the job, --export=ALL, and so to the payload.)
TEST(RunHere, BatondSecretsNeverReachTheChild) {
  const std::vector<std::string> secrets = {"BATON_API_TOKEN",
                                            "BATON_PILOT_TOKEN",
                                            "BATON_SALAD_API_KEY",
                                            "BATON_METRICS_TOKEN",
                                            "BATON_POSTGRES_PASSWORD",
                                            "BATON_S3_SECRET_ACCESS_KEY",
                                            "BATON_S3_UPLOAD_SECRET_ACCESS_KEY"};
  for (const auto& name : secrets) setenv(name.c_str(), "batond-secret", 1);
  setenv("BATON_HARMLESS", "kept", 1);
  auto r = run_here({"env"}, "", std::chrono::seconds(10));
  for (const auto& name : secrets) unsetenv(name.c_str());
  unsetenv("BATON_HARMLESS");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find("secret"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("BATON_HARMLESS=kept"), std::string::npos);
}

TEST(ClusterClient, SshCommandQuotesTheRemoteWords) {
  target t;
  t.ssh_host = "login1";
  t.ssh_user = "ops";
  t.ssh_port = 2222;
  t.ssh_key_file = "/k";
  auto argv = command_for(t, "squeue", {"--jobs", "1,2", "--format=%i|%T|%r"});
  ASSERT_GE(argv.size(), 3u);
  EXPECT_EQ(argv.front(), "ssh");
  EXPECT_EQ(argv[argv.size() - 2], "ops@login1");
  EXPECT_EQ(argv.back(), "'squeue' '--jobs' '1,2' '--format=%i|%T|%r'");
  EXPECT_EQ(command_for(target{}, "sbatch", {"--parsable"}), (std::vector<std::string>{"sbatch", "--parsable"}));
}
