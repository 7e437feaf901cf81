// batond over HTTPS (tls.cert_file + tls.key_file): the test makes its own CA with the
// openssl tool, then checks that clients holding that CA are served (httplib, baton-worker
// running a job, the baton CLI), that clients without it, with another CA or reaching a name
// the certificate does not carry are refused by their own verification, that plain HTTP and a
// silent client on the TLS port cost batond nothing, that only strong suites are offered and
// every answer carries HSTS, and that bad TLS files, or a key others can read, stop it at start.
#include <gtest/gtest.h>

#include <cstdlib>

#include "support/loopback_socket.hpp"
#include "support/worker_e2e.hpp"

using namespace baton::test;

namespace {

// Runs a shell line (the openssl tool); fails the test with its output when it fails.
void sh(const std::string& line, const std::string& log) {
  int rc = std::system(("(" + line + ") >" + log + " 2>&1").c_str());
  ASSERT_EQ(rc, 0) << line << "\n" << slurp(log);
}

// A CA (ca.pem, ca.key) under dir/name, and a server certificate it signed for the names in
// san (openssl's subjectAltName syntax).
void make_ca(const std::string& dir, const std::string& name) {
  fs::create_directories(dir);
  sh("cd " + dir +
         " && openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2"
         " -subj '/CN=" +
         name + "' -keyout " + name + "-ca.key -out " + name +
         "-ca.pem"
         " -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign",
     dir + "/openssl.log");
}

void make_server_cert(const std::string& dir, const std::string& ca, const std::string& out, const std::string& san) {
  std::ofstream(dir + "/" + out + ".ext") << "subjectAltName=" << san
                                          << "\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n";
  sh("cd " + dir +
         " && openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj '/CN=batond'"
         " -keyout " +
         out + ".key -out " + out +
         ".csr"
         " && openssl x509 -req -in " +
         out + ".csr -CA " + ca + "-ca.pem -CAkey " + ca +
         "-ca.key -CAcreateserial"
         " -days 2 -out " +
         out + ".pem -extfile " + out + ".ext",
     dir + "/openssl.log");
}

// Whether `openssl s_client` completes a handshake with batond when it offers only what args
// say (e.g. "-tls1_2 -cipher <suite>"); its output goes to log.
bool handshakes(int port, const std::string& args, const std::string& log) {
  return std::system(("timeout 60 openssl s_client -connect 127.0.0.1:" + std::to_string(port) + " " + args + " </dev/null >" +
                      log + " 2>&1")
                         .c_str()) == 0;
}

std::unique_ptr<httplib::Client> https_client(int port, const std::string& ca_file, const std::string& host = "127.0.0.1") {
  auto c = std::make_unique<httplib::Client>("https://" + host + ":" + std::to_string(port));
  c->enable_server_certificate_verification(true);
  if (!ca_file.empty()) c->set_ca_cert_path(ca_file.c_str());
  c->set_connection_timeout(5, 0);
  c->set_read_timeout(30, 0);
  c->set_default_headers({{"X-API-Token", test_token}});
  return c;
}

}  // namespace

struct Https : worker_e2e {
  std::string pki() const { return dir / "pki"; }
  std::string ca() const { return pki() + "/ours-ca.pem"; }

  std::string config() const override {
    return std::string(fast_config) + "http: {read_timeout_seconds: 2}\n" + "tls: {cert_file: " + pki() +
           "/server.pem, key_file: " + pki() + "/server.key}\n";
  }
  void SetUp() override {
    make_ca(pki(), "ours");
    make_ca(pki(), "theirs");
    make_server_cert(pki(), "ours", "server", "IP:127.0.0.1,DNS:localhost");
    if (HasFatalFailure()) return;
    worker_e2e::SetUp();
    if (HasFatalFailure()) return;
    op = https_client(b->port(), ca());  // the fixture's operator calls go over HTTPS too
  }
};

TEST_F(Https, ServesClientsThatTrustItsCaAndNoOneElse) {
  auto health = op->Get("/healthz");
  ASSERT_TRUE(health) << httplib::to_string(health.error()) << "\n" << b->err();
  EXPECT_EQ(health->status, 200);
  auto jobs = op->Get("/jobs");
  ASSERT_TRUE(jobs);
  EXPECT_EQ(jobs->status, 200) << jobs->body;
  auto by_name = https_client(b->port(), ca(), "localhost")->Get("/healthz");
  ASSERT_TRUE(by_name) << httplib::to_string(by_name.error());
  EXPECT_EQ(by_name->status, 200);

  // Clients refuse a batond they cannot verify: the system's CAs do not know ours, and a
  // certificate from another CA is no better.
  auto system_cas = https_client(b->port(), "")->Get("/healthz");
  ASSERT_FALSE(system_cas);
  EXPECT_EQ(system_cas.error(), httplib::Error::SSLServerVerification);
  auto other_ca = https_client(b->port(), pki() + "/theirs-ca.pem")->Get("/healthz");
  ASSERT_FALSE(other_ca);
  EXPECT_EQ(other_ca.error(), httplib::Error::SSLServerVerification);

  // Plain HTTP on the TLS port gets no answer, and costs batond nothing.
  httplib::Client plain("127.0.0.1", b->port());
  plain.set_read_timeout(5, 0);
  auto cleartext = plain.Get("/healthz");
  EXPECT_TRUE(!cleartext || cleartext->status != 200);

  // A client that connects and never starts the handshake is closed by the read deadline (2 s).
  int fd = connect_loopback(b->port(), 20);
  ASSERT_GE(fd, 0);
  char byte;
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(::recv(fd, &byte, 1, 0), 0) << "the silent connection was not closed";
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 15s);
  ::close(fd);

  auto again = op->Get("/healthz");
  ASSERT_TRUE(again);
  EXPECT_EQ(again->status, 200);

  // The dashboard's session cookie is never sent in clear.
  auto login = op->Post("/ui/login", json{{"token", test_token}}.dump(), "application/json");
  ASSERT_TRUE(login);
  ASSERT_EQ(login->status, 200) << login->body;
  EXPECT_NE(login->get_header_value("Set-Cookie").find("; Secure;"), std::string::npos) << login->get_header_value("Set-Cookie");
}

TEST_F(Https, AWorkerThatTrustsTheCaRunsAJobAndOneThatDoesNotNeverRegisters) {
  std::string log = dir / "steps.log";
  create_job("tls-job", make_bundle("tls", counting_script(3, 0.05, log)));
  const std::string url = "BATON_URL=https://127.0.0.1:" + std::to_string(b->port());

  auto stranger = start_worker({url, "BATON_CA_FILE=" + pki() + "/theirs-ca.pem", "BATON_RETRY_ATTEMPTS=2"});
  EXPECT_EQ(exit_code(stranger->wait(60s)), 1) << stranger->err();
  EXPECT_NE(stranger->err().find("certificate did not verify"), std::string::npos) << stranger->err();
  EXPECT_EQ(status("tls-job"), "queued");

  auto w = start_worker({url, "BATON_CA_FILE=" + ca(), "BATON_IDLE_MAX_SECONDS=2"});
  EXPECT_TRUE(wait_status("tls-job", "completed", 60s)) << w->err() << "\n" << b->err();
  EXPECT_EQ(exit_code(w->wait(60s)), 0) << w->err();
  EXPECT_NE(slurp(log).find("done 3 attempt 1"), std::string::npos) << slurp(log);
}

TEST_F(Https, TheCliVerifiesAgainstItsCaFile) {
  auto cli = [&](const std::vector<std::string>& args, const std::string& name) {
    std::vector<std::string> argv{BATON_CLI_PATH, "--url", "https://127.0.0.1:" + std::to_string(b->port())};
    argv.insert(argv.end(), args.begin(), args.end());
    child_process p(argv, dir / name, {"BATON_API_TOKEN=" + std::string(test_token), "BATON_CONFIG=/dev/null"});
    int code = exit_code(p.wait(60s));
    return tool_result{code, p.out(), p.err()};
  };
  auto ok = cli({"--ca-file", ca(), "jobs", "list"}, "cli-ok");
  EXPECT_EQ(ok.code, 0) << ok.err;
  auto refused = cli({"--ca-file", pki() + "/theirs-ca.pem", "jobs", "list"}, "cli-refused");
  EXPECT_EQ(refused.code, 3) << refused.out;  // unreachable: batond could not be verified
  EXPECT_NE(refused.err.find("certificate"), std::string::npos) << refused.err;
}

// TLS 1.2 only with forward secrecy and an AEAD cipher (OpenSSL's defaults also took CBC with
// SHA-1 MACs), TLS 1.3; and every answer tells browsers to come back over HTTPS only.
TEST_F(Https, OffersOnlyEcdheWithAeadSuitesAndSaysHttpsOnly) {
  const std::string log = dir / "s_client.log";
  EXPECT_FALSE(handshakes(b->port(), "-tls1_2 -cipher ECDHE-ECDSA-AES128-SHA", log)) << "CBC, SHA-1\n" << slurp(log);
  EXPECT_FALSE(handshakes(b->port(), "-tls1_2 -cipher ECDHE-ECDSA-AES256-SHA384", log)) << "CBC\n" << slurp(log);
  EXPECT_TRUE(handshakes(b->port(), "-tls1_2 -cipher ECDHE-ECDSA-AES128-GCM-SHA256", log)) << slurp(log);
  EXPECT_TRUE(handshakes(b->port(), "-tls1_2 -cipher ECDHE-ECDSA-CHACHA20-POLY1305", log)) << slurp(log);
  EXPECT_TRUE(handshakes(b->port(), "-tls1_3", log)) << slurp(log);
  for (const char* path : {"/jobs", "/healthz", "/ui/"}) {
    auto r = op->Get(path);
    ASSERT_TRUE(r) << path;
    EXPECT_EQ(r->get_header_value("Strict-Transport-Security"), "max-age=31536000") << path;
  }
}

TEST(HttpsStart, AKeyFileOpenToGroupOrOthersStopsBatondNamingIt) {
  temp_dir dir;
  const std::string pki = dir / "pki", key = pki + "/a.key";
  make_ca(pki, "ours");
  make_server_cert(pki, "ours", "a", "IP:127.0.0.1");
  const std::string config = "tls: {cert_file: " + pki + "/a.pem, key_file: " + key + "}\n";
  for (auto open_to : {fs::perms::group_read, fs::perms::others_read}) {
    fs::permissions(key, fs::perms::owner_read | fs::perms::owner_write | open_to);
    batond_process d{dir, config};
    EXPECT_EQ(d.wait_exit(60s), 2) << d.err();
    EXPECT_NE(d.err().find("tls.key_file: " + key + " is open to its group or others"), std::string::npos) << d.err();
  }
  fs::permissions(key, fs::perms::owner_read | fs::perms::owner_write);
  batond_process d{dir, config};
  ASSERT_GT(d.port(), 0) << d.err();
  EXPECT_EQ(d.stop(), 0) << d.err();
}

TEST(HttpsStart, BadCertificateFilesStopBatondNamingTheKey) {
  temp_dir dir;
  const std::string pki = dir / "pki";
  make_ca(pki, "ours");
  make_server_cert(pki, "ours", "a", "IP:127.0.0.1");
  make_server_cert(pki, "ours", "b", "IP:127.0.0.1");
  struct bad_case {
    std::string tls, key, says;
  };
  const std::vector<bad_case> cases = {
      {"{cert_file: " + pki + "/missing.pem, key_file: " + pki + "/a.key}", "tls.cert_file", pki + "/missing.pem"},
      {"{cert_file: " + pki + "/a.pem, key_file: " + pki + "/a.csr}", "tls.key_file", pki + "/a.csr"},
      {"{cert_file: " + pki + "/a.pem, key_file: " + pki + "/b.key}", "tls.key_file", "is not the key"},
  };
  for (const auto& c : cases) {
    batond_process d{dir, "tls: " + c.tls + "\n"};
    EXPECT_EQ(d.wait_exit(60s), 2) << c.tls << "\n" << d.err();
    EXPECT_NE(d.err().find(c.key), std::string::npos) << d.err();
    EXPECT_NE(d.err().find(c.says), std::string::npos) << d.err();
  }
  batond_process half{dir, "tls: {cert_file: " + pki + "/a.pem}\n"};
  EXPECT_EQ(half.wait_exit(60s), 2);
  EXPECT_NE(half.err().find("tls.key_file"), std::string::npos) << half.err();

  // Certificate a names only 127.0.0.1: a client reaching batond as "localhost" refuses it.
  batond_process good{dir, "tls: {cert_file: " + pki + "/a.pem, key_file: " + pki + "/a.key}\n"};
  ASSERT_GT(good.port(), 0) << good.err();
  auto by_ip = https_client(good.port(), pki + "/ours-ca.pem")->Get("/healthz");
  ASSERT_TRUE(by_ip) << httplib::to_string(by_ip.error());
  EXPECT_EQ(by_ip->status, 200);
  auto by_name = https_client(good.port(), pki + "/ours-ca.pem", "localhost")->Get("/healthz");
  ASSERT_FALSE(by_name);
  EXPECT_EQ(by_name.error(), httplib::Error::SSLServerVerification);
  EXPECT_EQ(good.stop(), 0) << good.err();
}
