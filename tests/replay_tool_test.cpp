// baton-replay on a real batond's log: verify, rederive (100 %, then a flipped decision field
// reported at its sequence with a field-by-field diff), the audit export in both formats and
// verify-export catching a changed, a removed and an inserted record (and keeping text that is
// not UTF-8 exactly), and the chain anchors
// catching a tail rewritten with every hash recomputed; and simulate --log, whose log
// rederives at 100 %.
#include <gtest/gtest.h>
#include <httplib.h>

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>

#include "events/envelope.hpp"
#include "events/event_store.hpp"
#include "events/payload.hpp"
#include "support/store_tampering.hpp"
#include "support/batond_process.hpp"
#include "support/replay_tool.hpp"
#include "support/ids.hpp"

using namespace baton;
using nlohmann::json;
using test::replay_tool;

namespace {

// A short campaign through the API: two workers, jobs assigned, started, completed.
void campaign(test::batond_process& d) {
  auto op = d.client();
  std::vector<std::pair<std::string, std::string>> workers;
  for (int i = 0; i < 2; ++i) {
    auto r = op->Post("/workers/register", json{{"platform", "hpc"}, {"gpu_model", "A100"}}.dump(), "application/json");
    ASSERT_TRUE(r && r->status == 200);
    auto j = json::parse(r->body);
    workers.push_back({j["worker_id"], j["worker_token"]});
  }
  for (int i = 0; i < 4; ++i) {
    auto r =
        op->Post("/jobs", json{{"id", test::uid("job" + std::to_string(i))}, {"title", "t"}, {"input_bundle_path", "/b"}}.dump(),
                 "application/json");
    ASSERT_TRUE(r && r->status == 200);
  }
  // Each round both workers take a job before either finishes (an idle better-ranked worker
  // would otherwise be matched first: fair competition).
  for (int round = 0; round < 2; ++round) {
    std::vector<std::string> taken;
    for (const auto& [id, token] : workers) {
      httplib::Client c("127.0.0.1", d.port());
      httplib::Headers h{{"X-Worker-Token", token}};
      auto r = c.Post(("/jobs/request?worker_id=" + id).c_str(), h, "", "application/json");
      ASSERT_TRUE(r && r->status == 200);
      taken.push_back(json::parse(r->body).value("job_id", ""));
      ASSERT_FALSE(taken.back().empty()) << r->body;
      ASSERT_EQ(c.Post(("/jobs/" + taken.back() + "/start").c_str(), h, "", "application/json")->status, 204);
    }
    for (size_t i = 0; i < workers.size(); ++i) {
      httplib::Client c("127.0.0.1", d.port());
      httplib::Headers h{{"X-Worker-Token", workers[i].second}};
      ASSERT_EQ(c.Post(("/jobs/" + taken[i] + "/complete").c_str(), h, "", "application/json")->status, 204);
    }
  }
}

// Rewrites events from `from` to the log's end, changing `edit`'s events, with every hash
// recomputed: a forger who knows the chain's rule.
void rewrite_tail(const std::string& log_dir, uint64_t from, const std::function<void(events::event_envelope&)>& edit) {
  auto store = events::event_store::open(log_dir);
  auto events = store->read(from, 1 << 20);
  std::string prev = from > 1 ? store->read(from - 1, 1).front().hash : std::string();
  for (auto& e : events) {
    edit(e);
    e.hash = events::chain_hash(prev, events::encode_body(e));
    prev = e.hash;
    baton::test::overwrite_event(*store, e.seq, events::encode(e));
  }
}

std::vector<std::string> lines_of(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> out;
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

void write_lines(const std::string& path, const std::vector<std::string>& lines) {
  std::ofstream out(path, std::ios::trunc);
  for (const auto& l : lines) out << l << "\n";
}

struct replay_tool_test : ::testing::Test {
  test::temp_dir dir;
  std::string data = dir / "data";
  void SetUp() override {
    test::batond_process d(dir, "event_log: {anchor_interval_minutes: 10}\n");
    ASSERT_GT(d.port(), 0) << d.err();
    campaign(d);
    ASSERT_EQ(d.stop(), 0) << d.err();
  }
  test::tool_result run(std::vector<std::string> args) { return replay_tool(dir, std::move(args)); }
};

}  // namespace

TEST_F(replay_tool_test, VerifyAndRederiveAreWholeOnAnUntouchedLog) {
  auto v = run({"verify", "--data-dir", data});
  EXPECT_EQ(v.code, 0) << v.out << v.err;
  EXPECT_NE(v.out.find("hash chain verified"), std::string::npos) << v.out;
  auto anchors = lines_of(data + "/anchors.jsonl");
  ASSERT_FALSE(anchors.empty()) << "batond anchors the chain head";
  auto r = run({"rederive", "--data-dir", data, "--json"});
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  auto j = json::parse(r.out);
  EXPECT_EQ(j["ok"], true);
  EXPECT_EQ(j["assignments"], 4);
}

TEST_F(replay_tool_test, AFlippedDecisionFieldIsReportedAtItsSequenceFieldByField) {
  // Find the second job.assigned and change its recorded worker score, chain recomputed.
  uint64_t target = 0;
  std::string stream;
  {
    events::store_options o;
    o.read_only = true;
    auto store = events::event_store::open(data + "/eventlog", o);
    int seen = 0;
    store->scan(1, 0, false, [&](const events::event_view& e) {
      if (e.type == "job.assigned" && ++seen == 2) {
        target = e.seq;
        stream = std::string(e.stream_id);
        return false;
      }
      return true;
    });
  }
  ASSERT_GT(target, 0u);
  rewrite_tail(data + "/eventlog", target, [&](events::event_envelope& e) {
    if (e.seq != target) return;
    auto p = events::from_payload(e.payload);
    p["decision"]["worker_score"] = p["decision"]["worker_score"].get<int64_t>() + 1;
    e.payload = events::to_payload(p);
  });
  auto r = run({"rederive", "--data-dir", data, "--json"});
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  auto j = json::parse(r.out);
  EXPECT_EQ(j["first_divergence"]["seq"], target);
  EXPECT_EQ(j["first_divergence"]["stream"], stream);
  EXPECT_EQ(j["first_divergence"]["diff"],
            json::parse(R"([{"op":"replace","path":"/decision/worker_score","value":)" +
                        j["first_divergence"]["rederived"]["decision"]["worker_score"].dump() + "}]"));
  // Checked from a later sequence, the flipped decision is replayed unchecked.
  auto later = run({"rederive", "--data-dir", data, "--from", std::to_string(target + 1)});
  EXPECT_EQ(later.code, 0) << later.out;
  auto text = run({"rederive", "--data-dir", data});
  EXPECT_NE(text.out.find("first divergence: event " + std::to_string(target)), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("/decision/worker_score"), std::string::npos) << text.out;
}

TEST_F(replay_tool_test, VerifyExportCatchesAChangedARemovedAndAnInsertedRecord) {
  for (std::string format : {"jsonl", "csv"}) {
    std::string file = dir / ("audit." + format);
    auto e = run({"export", "--data-dir", data, "--format", format, "-o", file});
    ASSERT_EQ(e.code, 0) << e.err;
    auto alone = run({"verify-export", file});
    EXPECT_EQ(alone.code, 0) << format << ": " << alone.out << alone.err;
    auto against = run({"verify-export", file, "--data-dir", data, "--json"});
    EXPECT_EQ(against.code, 0) << against.out;
    EXPECT_EQ(json::parse(against.out)["checked_against_log"], true);
  }
  auto original = lines_of(dir / "audit.jsonl");
  ASSERT_GT(original.size(), 10u);
  auto check = [&](const std::vector<std::string>& lines, const std::string& expect) {
    std::string file = dir / "tampered.jsonl";
    write_lines(file, lines);
    auto r = run({"verify-export", file});
    EXPECT_EQ(r.code, 1) << expect << "\n" << r.out;
    EXPECT_NE(r.out.find(expect), std::string::npos) << r.out;
  };
  auto changed = original;
  auto rec = json::parse(changed[5]);
  rec["actor"] = "operator:mallory";
  changed[5] = rec.dump();
  check(changed, "was changed");
  auto removed = original;
  removed.erase(removed.begin() + 5);
  check(removed, "missing");
  auto inserted = original;
  auto forged = json::parse(original[5]);
  forged["seq"] = forged["seq"].get<uint64_t>() + 1;
  inserted.insert(inserted.begin() + 6, forged.dump());
  check(inserted, "record");
  // A filtered export verifies on its own, and against the log (nothing that matches is left out).
  std::string jobs = dir / "created.jsonl";
  ASSERT_EQ(run({"export", "--data-dir", data, "--type", "job.created", "-o", jobs}).code, 0);
  EXPECT_EQ(lines_of(jobs).size(), 5u) << "four records and the trailer";
  EXPECT_EQ(run({"verify-export", jobs, "--data-dir", data}).code, 0);
  auto less = lines_of(jobs);
  less.erase(less.begin());
  auto trailer = json::parse(less.back());
  trailer["trailer"]["count"] = 3;
  trailer["trailer"]["first_seq"] = json::parse(less.front())["seq"];
  less.back() = trailer.dump();
  write_lines(dir / "less.jsonl", less);
  auto r = run({"verify-export", dir / "less.jsonl", "--data-dir", data});
  EXPECT_EQ(r.code, 1) << "a record dropped and the trailer fixed to match: the log still tells";
  EXPECT_NE(r.out.find("is missing"), std::string::npos) << r.out;
}

TEST_F(replay_tool_test, AnExportOfTextThatIsNotUtf8KeepsItsBytesAndVerifies) {
  // A log written before batond checked what it records: an actor and a job's title that are
  // not UTF-8 (the chain recomputed, as that batond would have written it).
  uint64_t target = 0;
  {
    events::store_options o;
    o.read_only = true;
    auto store = events::event_store::open(data + "/eventlog", o);
    store->scan(1, 0, false, [&](const events::event_view& e) {
      if (e.type != "job.created") return true;
      target = e.seq;
      return false;
    });
  }
  ASSERT_GT(target, 0u);
  rewrite_tail(data + "/eventlog", target, [&](events::event_envelope& e) {
    if (e.seq != target) return;
    e.actor = "operator:caf\xe9";
    auto p = events::from_payload(e.payload);
    p["title"] = "t\xff\xfe";
    e.payload = events::to_payload(p);
  });
  for (std::string format : {"jsonl", "csv"}) {
    std::string file = dir / ("latin1." + format);
    auto e = run({"export", "--data-dir", data, "--format", format, "-o", file});
    ASSERT_EQ(e.code, 0) << format << ": " << e.err;
    auto v = run({"verify-export", file});
    EXPECT_EQ(v.code, 0) << format << ": " << v.out << v.err;
  }
  auto lines = lines_of(dir / "latin1.jsonl");
  size_t at = 0;
  for (; at < lines.size(); ++at)
    if (json::parse(lines[at]).value("seq", uint64_t{0}) == target) break;
  ASSERT_LT(at, lines.size());
  auto rec = json::parse(lines[at]);
  EXPECT_EQ(rec["actor"], "operator:caf\xef\xbf\xbd") << "shown with U+FFFD";
  ASSERT_TRUE(rec.contains("exact")) << "and kept exactly beside it";
  EXPECT_FALSE(json::parse(lines[at + 1]).contains("exact")) << "only where the JSON would lose bytes";
  // The shown fields cannot be changed apart from the exact bytes, nor the bytes apart from the hash.
  auto check = [&](const json& changed, const char* what) {
    auto tampered = lines;
    tampered[at] = changed.dump();
    write_lines(dir / "tampered.jsonl", tampered);
    auto r = run({"verify-export", dir / "tampered.jsonl"});
    EXPECT_EQ(r.code, 1) << what << ": " << r.out;
    EXPECT_NE(r.out.find("was changed"), std::string::npos) << what << ": " << r.out;
  };
  auto shown = rec;
  shown["actor"] = "operator:mallory";
  check(shown, "a shown field");
  auto bytes = rec;
  std::string hex = bytes["exact"];
  hex[hex.size() / 2] = hex[hex.size() / 2] == '0' ? '1' : '0';
  bytes["exact"] = hex;
  check(bytes, "the exact bytes");
}

TEST_F(replay_tool_test, ATailRewrittenAfterAnAnchorIsCaughtThoughEveryHashWasRecomputed) {
  std::string before = dir / "before.jsonl";
  ASSERT_EQ(run({"export", "--data-dir", data, "-o", before}).code, 0);
  auto anchors = lines_of(data + "/anchors.jsonl");
  ASSERT_FALSE(anchors.empty());
  uint64_t anchored = json::parse(anchors.back())["seq"];
  ASSERT_GT(anchored, 3u);
  rewrite_tail(data + "/eventlog", anchored - 2, [&](events::event_envelope& e) {
    if (e.seq == anchored - 2) e.actor = "operator:mallory";
  });
  auto v = run({"verify", "--data-dir", data});
  EXPECT_EQ(v.code, 1) << v.out << v.err;
  EXPECT_NE(v.out.find("chain anchor"), std::string::npos) << v.out;
  // An export of the rewritten log verifies on its own (its chain is consistent) but not
  // against the anchors, and not the export taken before against the log.
  std::string after = dir / "after.jsonl";
  ASSERT_EQ(run({"export", "--data-dir", data, "-o", after}).code, 0);
  EXPECT_EQ(run({"verify-export", after}).code, 0);
  EXPECT_EQ(run({"verify-export", after, "--data-dir", data}).code, 1);
  EXPECT_EQ(run({"verify-export", before, "--data-dir", data}).code, 1);
}

// simulate --log: the simulation written as a log under a new data dir, which rederive checks
// at 100 %; a second run refuses to write into it.
TEST(replay_tool_simulate, TheSimulationsLogRederivesAndIsNeverOverwritten) {
  test::temp_dir dir;
  const std::string data_dir = dir / "sim";
  // A small trace of its own (the published traces are simulator_test's and sim_log_test's):
  // 600 jobs of 1 to 16 processors from six users in three groups on 32 processors, so jobs
  // wait, priorities are recalculated and the planner reserves.
  const std::string trace = dir / "small.swf";
  {
    std::ofstream swf(trace);
    swf << "; MaxProcs: 32\n";
    for (int i = 1; i <= 600; ++i) {
      const int procs = 1 << (i % 5), run = 60 + (i * 37) % 3600, user = i % 6;
      swf << i << " " << i * 20 << " 0 " << run << " " << procs << " -1 -1 " << procs << " " << run + (i % 3) * 600 << " -1 1 "
          << user << " " << user / 2 << " -1 -1 -1 -1 -1\n";
    }
  }
  auto sim = replay_tool(dir, {"simulate", "--swf", trace, "--policy", "multifactor", "--log", data_dir, "--json"});
  ASSERT_EQ(sim.code, 0) << sim.err;
  auto result = json::parse(sim.out);
  ASSERT_TRUE(result.contains("log"));
  EXPECT_EQ(result["filter"]["jobs"], 600);
  EXPECT_GT(result["log"]["events"].get<uint64_t>(), 1200u) << "every arrival, end and pass";
  EXPECT_GT(result["simulation"]["recalculations"].get<uint64_t>(), 10u);

  auto again = replay_tool(dir, {"rederive", "--data-dir", data_dir, "--json"});
  ASSERT_EQ(again.code, 0) << again.out << again.err;
  auto report = json::parse(again.out);
  EXPECT_TRUE(report["ok"].get<bool>());
  EXPECT_EQ(report["simulation_passes"], result["simulation"]["passes"]);
  EXPECT_EQ(report["events"], result["log"]["events"]);

  auto verify = replay_tool(dir, {"verify", "--data-dir", data_dir});
  EXPECT_EQ(verify.code, 0) << verify.out << verify.err;

  auto twice = replay_tool(dir, {"simulate", "--swf", trace, "--policy", "easy", "--log", data_dir});  // same dir again
  EXPECT_EQ(twice.code, 2);
  EXPECT_NE(twice.err.find("already holds a log"), std::string::npos) << twice.err;
}

// simulate on a bad trace, each kind of bad input: without --lenient it exits 1 naming the
// file and the line (or the truncated stream) and simulates nothing; with --lenient it
// simulates the good lines, says on stderr how many it left out and where, and records it in
// the JSON result.
TEST(replay_tool_simulate, ABadTraceExitsOneNamingTheLineOrWithLenientIsCountedAndListed) {
  test::temp_dir dir;
  std::string good;
  for (int i = 1; i <= 400; ++i)
    good += std::to_string(i) + " " + std::to_string(i * 20) + " 0 100 2 -1 -1 2 200 -1 1 1 1 -1 -1 -1 -1 -1\n";
  const std::string header = "; MaxProcs: 8\n";
  const std::string fields = " 0 100 2 -1 -1 2 200 -1 1 1 1 -1 -1 -1 -1 -1";
  // Line 3 of each file is the bad one.
  const std::vector<std::pair<std::string, std::string>> kinds{
      {"truncated line", "9001 10 0 100 2 -1"}, {"non-numeric", "9001 ten" + fields},           {"nan", "9001 nan" + fields},
      {"1e30", "9001 1e30" + fields},           {"negative other than -1", "9001 -7" + fields},
  };
  for (const auto& [kind, line] : kinds) {
    const std::string trace = dir / "bad.swf";
    std::ofstream(trace, std::ios::trunc) << header << good.substr(0, good.find('\n') + 1) << line << "\n"
                                          << good.substr(good.find('\n') + 1);
    auto strict = replay_tool(dir, {"simulate", "--swf", trace, "--policy", "easy"});
    EXPECT_EQ(strict.code, 1) << kind << ": " << strict.err;
    EXPECT_NE(strict.err.find(trace + ":3: "), std::string::npos) << kind << ": " << strict.err;
    EXPECT_EQ(strict.out, "") << kind;

    auto lenient = replay_tool(dir, {"simulate", "--swf", trace, "--policy", "easy", "--lenient", "--json"});
    ASSERT_EQ(lenient.code, 0) << kind << ": " << lenient.err;
    EXPECT_NE(lenient.err.find(trace + ": 1 malformed line left out (--lenient); first at line 3\n"), std::string::npos)
        << kind << ": " << lenient.err;
    auto r = json::parse(lenient.out);
    EXPECT_EQ(r["trace"]["malformed_lines"], 1) << kind;
    EXPECT_EQ(r["trace"]["first_malformed"][0]["line"], 3) << kind;
    EXPECT_EQ(r["filter"]["jobs"], 400) << kind << ": the good lines all run";
  }

  // A .gz cut short: strict refuses it; lenient runs what it holds and says so.
  std::ofstream(dir / "whole.swf", std::ios::trunc) << header << good;
  ASSERT_EQ(std::system(("gzip -c '" + dir / "whole.swf" + "' > '" + dir / "whole.swf.gz" + "'").c_str()), 0);
  std::string gz;
  {
    std::ifstream in(dir / "whole.swf.gz", std::ios::binary);
    gz.assign(std::istreambuf_iterator<char>(in), {});
  }
  const std::string cut = dir / "cut.swf.gz";
  std::ofstream(cut, std::ios::binary | std::ios::trunc) << gz.substr(0, gz.size() * 2 / 3);
  auto strict = replay_tool(dir, {"simulate", "--swf", cut, "--policy", "fifo"});
  EXPECT_EQ(strict.code, 1) << strict.err;
  EXPECT_NE(strict.err.find(cut + ": the gzip stream ends early (the file is truncated) after line "), std::string::npos)
      << strict.err;
  auto lenient = replay_tool(dir, {"simulate", "--swf", cut, "--policy", "fifo", "--lenient", "--json"});
  ASSERT_EQ(lenient.code, 0) << lenient.err;
  EXPECT_NE(lenient.err.find("the gzip stream ends early"), std::string::npos) << lenient.err;
  auto r = json::parse(lenient.out);
  EXPECT_NE(r["trace"]["damaged"].get<std::string>().find("ends early"), std::string::npos);
  EXPECT_LT(r["filter"]["jobs"].get<int>(), 400);
  // The whole file reads without a word on stderr.
  auto whole = replay_tool(dir, {"simulate", "--swf", dir / "whole.swf.gz", "--policy", "fifo", "--json"});
  ASSERT_EQ(whole.code, 0) << whole.err;
  EXPECT_EQ(whole.err, "");
  EXPECT_EQ(json::parse(whole.out)["filter"]["jobs"], 400);
  EXPECT_EQ(replay_tool(dir, {"simulate", "--swf", dir / "missing.swf"}).code, 2) << "no file: the command cannot run";

  // A .gz large enough to be inflated on a second thread (SDSC-SP2's, 1.2 MB) cut short: the
  // same refusal, and no thread left behind to hold the exit up.
  std::string sdsc;
  {
    std::ifstream in(std::string(SWF_DATA_DIR) + "/SDSC-SP2-1998-4.2-cln.swf.gz", std::ios::binary);
    sdsc.assign(std::istreambuf_iterator<char>(in), {});
  }
  ASSERT_GT(sdsc.size(), 1100000u);
  const std::string big_cut = dir / "sdsc-cut.swf.gz";
  std::ofstream(big_cut, std::ios::binary | std::ios::trunc) << sdsc.substr(0, sdsc.size() * 9 / 10);
  auto big = replay_tool(dir, {"simulate", "--swf", big_cut, "--procs", "128", "--filter", "batsim", "--policy", "fifo"});
  EXPECT_EQ(big.code, 1) << big.err;
  EXPECT_NE(big.err.find(big_cut + ": the gzip stream ends early (the file is truncated) after line "), std::string::npos)
      << big.err;
  EXPECT_EQ(big.out, "");
}

// --version names the malloc the tool runs on: jemalloc in a release build (core/util/allocator.hpp),
// with the transparent huge pages core/util/jemalloc_options.cpp asks for; a sanitizer build keeps
// the sanitizer's. A link order that let libc's malloc win, or options jemalloc did not take,
// would fail here.
TEST(replay_tool_version, NamesTheMallocItRunsOn) {
  test::temp_dir dir;
  auto r = replay_tool(dir, {"--version"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("baton-replay ", 0), 0u) << r.out;
#ifdef BATON_EXPECT_JEMALLOC
  EXPECT_NE(r.out.find("(malloc: jemalloc 5."), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(", huge pages: always)"), std::string::npos) << r.out;
#else
  EXPECT_EQ(r.out.find("jemalloc"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(malloc: "), std::string::npos) << r.out;
#endif
}
