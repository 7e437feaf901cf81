// The trace simulator (replay/sim/simulator.hpp) on baton's own planner: the SWF reader and its
// filters, the event order and each backfill rule on small workloads worked by hand, fair
// share among the trace's groups, and the two published results of tests/data/swf/README.md.
#include <gtest/gtest.h>
#include <zlib.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>
#include <tuple>

#include "replay/sim/sim_metrics.hpp"
#include "replay/sim/simulator.hpp"
#include "replay/sim/swf.hpp"
#include "support/temp_dir.hpp"

using namespace baton;
using namespace baton::replay;

namespace {

const std::string data = SWF_DATA_DIR;

sim_job job(int64_t id, int64_t submit, int64_t procs, int64_t run, int64_t estimate, int64_t user = 1, int64_t group = 1) {
  return {id, submit, run, estimate, procs, user, group};
}

sim_settings machine(int64_t capacity, const std::string& policy) {
  sim_settings s;
  s.capacity = capacity;
  EXPECT_TRUE(sim_policy_from(policy, s)) << policy;
  return s;
}

std::vector<int64_t> starts(const sim_result& r) {
  std::vector<int64_t> out;
  for (const auto& j : r.jobs) out.push_back(j.start);
  return out;
}

double off_by(double got, double published) { return std::abs(got - published) / published; }

}  // namespace

TEST(swf, ReadsHeaderRecordsAndFiltersAsPublished) {
  test::temp_dir dir;
  std::ofstream(dir / "t.swf") << "; MaxProcs: 8\n"
                                  ";\n"
                                  "1 0 5 100 4 -1 -1 4 200 -1 1 7 3 -1 -1 -1 -1 -1\n"
                                  "2 10 -1 50 2 -1 -1 -1 40 -1 1 7 3 -1 -1 -1 -1 -1\n"       // wait unknown; run > requested
                                  "3 20 0 0 2 -1 -1 2 100 -1 0 8 3 -1 -1 -1 -1 -1\n"         // ran for 0 s
                                  "4 30 0 10 -1 57.25 -1 16 100 -1 1 8 3 -1 -1 -1 -1 -1\n";  // more than the machine
  auto t = read_swf(dir / "t.swf");
  EXPECT_EQ(t.max_procs, 8);
  ASSERT_EQ(t.records.size(), 4u);
  EXPECT_EQ(t.malformed_lines, 0u);
  EXPECT_EQ(t.records[0].requested_time, 200);
  EXPECT_EQ(t.records[1].user, 7);
  EXPECT_EQ(t.sha256.size(), 64u);

  auto sc15 = filter_jobs(t, swf_filter::sc15, 8);
  ASSERT_EQ(sc15.size(), 2u) << "a job that ran 0 s and one larger than the machine are dropped";
  EXPECT_EQ(sc15[1].procs, 2) << "allocated processors, requested taken when missing";
  EXPECT_EQ(sc15[1].run, 40) << "run clipped to the requested time";
  auto batsim = filter_jobs(t, swf_filter::batsim, 8);
  ASSERT_EQ(batsim.size(), 2u) << "rows with -1 in wait or allocated processors are dropped, 0 s runs kept";
  EXPECT_EQ(batsim[0].id, 1);
  EXPECT_EQ(batsim[1].id, 3);
  EXPECT_THROW(read_swf(dir / "missing.swf"), std::runtime_error);
}

namespace {

// A small trace whose line 3 is `bad` (lines 2 and 4 are good records).
std::string with_line_3(const std::string& bad) {
  return "; MaxProcs: 8\n"
         "1 0 5 100 4 -1 -1 4 200 -1 1 7 3 -1 -1 -1 -1 -1\n" +
         bad + "\n" + "3 20 0 10 2 -1 -1 2 100 -1 0 8 3 -1 -1 -1 -1 -1\n";
}

std::string gzip_of(const std::string& text) {
  std::string out(compressBound(static_cast<uLong>(text.size())) + 64, '\0');
  z_stream z{};
  EXPECT_EQ(deflateInit2(&z, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  z.avail_in = static_cast<uInt>(text.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

}  // namespace

// Every kind of malformed record line: strict reading stops at it naming the file and line;
// lenient reading leaves it out, counts it and says why, and keeps the lines around it.
TEST(swf, AMalformedLineIsAnErrorNamingItOrWithLenientLeftOutAndCounted) {
  test::temp_dir dir;
  const std::vector<std::pair<std::string, std::string>> bad{
      {"2 10 0 50 2 -1 -1 2 40 -1 1 7", "truncated: 12 of 18 fields"},
      {"2 10 0 fifty 2 -1 -1 2 40 -1 1 7 3 -1 -1 -1 -1 -1", "field 4 ('fifty') is not a number"},
      {"2 10 0 nan 2 -1 -1 2 40 -1 1 7 3 -1 -1 -1 -1 -1", "field 4 ('nan') is not a number"},
      {"2 10 0 1e30 2 -1 -1 2 40 -1 1 7 3 -1 -1 -1 -1 -1", "field 4 ('1e30') is not a number"},
      {"2 10 0 1000000000000000000000000000000 2 -1 -1 2 40 -1 1 7 3 -1 -1 -1 -1 -1",
       "field 4 ('100000000000000000000000...') is too large"},
      {"2 10 -5 50 2 -1 -1 2 40 -1 1 7 3 -1 -1 -1 -1 -1", "field 3 ('-5') is negative and not -1 (unknown)"},
      {"2 10 -1.5 50 2 -1 -1 2 40 -1 1 7 3 -1 -1 -1 -1 -1", "field 3 ('-1.5') is negative and not -1 (unknown)"},
      {"2 10 0 50 2 -1 -1 2 40 -1 1 7 3 -1 -1 -1 -1 -1 19", "more than 18 fields"},
  };
  for (const auto& [line, why] : bad) {
    const std::string path = dir / "bad.swf";
    std::ofstream(path, std::ios::trunc) << with_line_3(line);
    try {
      read_swf(path);
      ADD_FAILURE() << "strict reading accepted: " << line;
    } catch (const swf_error& e) {
      EXPECT_EQ(std::string(e.what()), path + ":3: " + why);
    }
    auto t = read_swf(path, true);
    ASSERT_EQ(t.records.size(), 2u) << line;
    EXPECT_EQ(t.records[1].job, 3);
    EXPECT_EQ(t.malformed_lines, 1u);
    ASSERT_EQ(t.first_malformed.size(), 1u);
    EXPECT_EQ(t.first_malformed[0].line, 3u);
    EXPECT_EQ(t.first_malformed[0].why, why);
  }
  // -1 (unknown), decimals and Windows line ends are records as SWF writes them.
  std::ofstream(dir / "ok.swf", std::ios::trunc) << with_line_3("2 10 -1 50.75 2 -1.00 -1 2 40 -1 1 7 3 -1 -1 -1 -1 -1\r");
  auto ok = read_swf(dir / "ok.swf");
  ASSERT_EQ(ok.records.size(), 3u);
  EXPECT_EQ(ok.records[1].run, 50) << "the fraction is dropped";
  EXPECT_EQ(ok.records[1].wait, -1);

  // Lenient: a count of all, the first few listed.
  std::string many = "; MaxProcs: 8\n";
  for (int i = 0; i < 9; ++i) many += "broken\n1 0 5 100 4 -1 -1 4 200 -1 1 7 3 -1 -1 -1 -1 -1\n";
  std::ofstream(dir / "many.swf", std::ios::trunc) << many;
  auto t = read_swf(dir / "many.swf", true);
  EXPECT_EQ(t.records.size(), 9u);
  EXPECT_EQ(t.malformed_lines, 9u);
  ASSERT_EQ(t.first_malformed.size(), swf_bad_lines_listed);
  EXPECT_EQ(t.first_malformed[0].line, 2u);
  EXPECT_EQ(t.first_malformed[4].line, 10u);
}

// A .gz that ends early (a copy cut short) is a damaged file, not a shorter trace: strict
// reading refuses it; lenient reading keeps the whole lines read and says it is damaged.
TEST(swf, ATruncatedGzipIsAnErrorOrWithLenientReadAsFarAsItGoesAndSaidSo) {
  test::temp_dir dir;
  std::string text = "; MaxProcs: 8\n";
  for (int i = 1; i <= 2000; ++i)
    text += std::to_string(i) + " " + std::to_string(i * 10) + " 0 100 4 -1 -1 4 200 -1 1 7 3 -1 -1 -1 -1 -1\n";
  const std::string gz = gzip_of(text);
  std::ofstream(dir / "whole.swf.gz", std::ios::binary) << gz;
  EXPECT_EQ(read_swf(dir / "whole.swf.gz").records.size(), 2000u);
  std::ofstream(dir / "cut.swf.gz", std::ios::binary) << gz.substr(0, gz.size() / 2);
  try {
    read_swf(dir / "cut.swf.gz");
    ADD_FAILURE() << "a truncated gzip was read";
  } catch (const swf_error& e) {
    EXPECT_NE(std::string(e.what()).find(dir / "cut.swf.gz"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("ends early (the file is truncated) after line"), std::string::npos) << e.what();
  }
  auto t = read_swf(dir / "cut.swf.gz", true);
  EXPECT_GT(t.records.size(), 0u);
  EXPECT_LT(t.records.size(), 2000u);
  EXPECT_NE(t.damaged.find("ends early"), std::string::npos);
  EXPECT_LE(t.malformed_lines, 1u) << "at most the last line, cut in the middle";
  // Only the trailer missing (every line there, the check not): still a damaged file.
  std::ofstream(dir / "no-trailer.swf.gz", std::ios::binary) << gz.substr(0, gz.size() - 4);
  EXPECT_THROW(read_swf(dir / "no-trailer.swf.gz"), swf_error);
  EXPECT_EQ(read_swf(dir / "no-trailer.swf.gz", true).records.size(), 2000u);
}

namespace {

bool same_jobs(const std::vector<sim_job>& a, const std::vector<sim_job>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::tie(a[i].id, a[i].submit, a[i].run, a[i].estimate, a[i].procs, a[i].user, a[i].group) !=
        std::tie(b[i].id, b[i].submit, b[i].run, b[i].estimate, b[i].procs, b[i].user, b[i].group))
      return false;
  return true;
}

bool same_records(const std::vector<swf_record>& a, const std::vector<swf_record>& b) {
  auto fields = [](const swf_record& r) {
    return std::tie(r.job, r.submit, r.wait, r.run, r.allocated_procs, r.requested_procs, r.requested_time, r.status, r.user,
                    r.group, r.queue, r.partition);
  };
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (fields(a[i]) != fields(b[i])) return false;
  return true;
}

// What a read says, strict or lenient: its records and counts, or its error.
struct read_outcome {
  std::string error;
  swf_trace t;
};
read_outcome read_as(const std::string& path, bool lenient, swf_inflate how) {
  read_outcome o;
  try {
    o.t = read_swf(path, lenient, how);
  } catch (const std::exception& e) {
    o.error = e.what();
  }
  return o;
}

void expect_same_reads(const std::string& path, const std::string& what) {
  for (bool lenient : {false, true}) {
    auto a = read_as(path, lenient, swf_inflate::inline_only), b = read_as(path, lenient, swf_inflate::threaded);
    const std::string how = what + (lenient ? " (lenient)" : " (strict)");
    EXPECT_EQ(a.error, b.error) << how;
    EXPECT_TRUE(same_records(a.t.records, b.t.records)) << how;
    EXPECT_EQ(a.t.sha256, b.t.sha256) << how;
    EXPECT_EQ(a.t.lines, b.t.lines) << how;
    EXPECT_EQ(a.t.record_count, b.t.record_count) << how;
    EXPECT_EQ(a.t.max_procs, b.t.max_procs) << how;
    EXPECT_EQ(a.t.malformed_lines, b.t.malformed_lines) << how;
    ASSERT_EQ(a.t.first_malformed.size(), b.t.first_malformed.size()) << how;
    for (size_t i = 0; i < a.t.first_malformed.size(); ++i) {
      EXPECT_EQ(a.t.first_malformed[i].line, b.t.first_malformed[i].line) << how;
      EXPECT_EQ(a.t.first_malformed[i].why, b.t.first_malformed[i].why) << how;
    }
    EXPECT_EQ(a.t.damaged, b.t.damaged) << how;
  }
}

}  // namespace

// A .gz inflated on a second thread while the parser reads reads exactly as one inflated
// inline: on a trace of several of the inflater's blocks with malformed lines spread through
// it (strict: the same first error, file and line; lenient: the same records and counts), on
// the same trace cut short, and on one whose first malformed line comes after most blocks.
TEST(swf, AThreadedInflateReadsAsAnInlineOne) {
  test::temp_dir dir;
  std::mt19937_64 rng(1258);
  std::string text = "; MaxProcs: 64\n";
  size_t bad = 0;
  for (int i = 1; i <= 60000; ++i) {
    if (rng() % 5000 == 0) {
      text += std::to_string(i) + " 10 zero 100 4\n";
      ++bad;
      continue;
    }
    text += std::to_string(i) + " " + std::to_string(i * 7 + static_cast<int>(rng() % 100)) + " " + std::to_string(rng() % 1000) +
            " " + std::to_string(rng() % 90000) + ".00 " + std::to_string(1 + rng() % 64) + " -1 -1 " +
            std::to_string(1 + rng() % 64) + " 90000 -1 1 " + std::to_string(rng() % 40) + " " + std::to_string(rng() % 8) +
            " -1 1 -1 -1 -1\n";
  }
  ASSERT_GT(bad, 3u);
  const std::string gz = gzip_of(text);
  ASSERT_GT(text.size(), 8u << 18) << "more text than the inflater's blocks hold at once";
  std::ofstream(dir / "t.swf.gz", std::ios::binary) << gz;
  expect_same_reads(dir / "t.swf.gz", "whole");
  auto lenient = read_swf(dir / "t.swf.gz", true, swf_inflate::threaded);
  EXPECT_EQ(lenient.malformed_lines, bad);
  EXPECT_EQ(lenient.record_count, 60000 - bad);
  for (size_t cut : {gz.size() / 3, gz.size() - 9, gz.size() - 4}) {
    std::ofstream(dir / "cut.swf.gz", std::ios::binary | std::ios::trunc) << gz.substr(0, cut);
    expect_same_reads(dir / "cut.swf.gz", "cut at " + std::to_string(cut));
    EXPECT_THROW(read_swf(dir / "cut.swf.gz", false, swf_inflate::threaded), swf_error);
  }
  // The only malformed line near the end: the strict read stops there, with blocks in flight.
  std::string late = text;
  for (size_t at = late.find(" zero "); at != std::string::npos; at = late.find(" zero ")) late.replace(at, 6, " 0 ");
  late.replace(late.rfind("\n", late.size() - 2000) + 1, 0, "garbage\n");
  std::ofstream(dir / "late.swf.gz", std::ios::binary) << gzip_of(late);
  expect_same_reads(dir / "late.swf.gz", "late");
  // The archive's traces, as the published results read them.
  for (const char* name : {"/KTH-SP2-1996-2-original.swf.gz", "/SDSC-SP2-1998-4.2-cln.swf.gz"})
    expect_same_reads(data + name, name);
}

// read_swf_jobs, which filters each record as it reads it, gives filter_jobs(read_swf()),
// with the capacity given or the trace's MaxProcs (SC'15 tests it only once the header may
// have come), strict and lenient.
TEST(swf, ReadingJobsDirectlyIsFilteringTheRecords) {
  test::temp_dir dir;
  for (const char* name : {"/KTH-SP2-1996-2-original.swf.gz", "/SDSC-SP2-1998-4.2-cln.swf.gz"}) {
    const auto t = read_swf(data + name);
    for (auto f : {swf_filter::sc15, swf_filter::batsim})
      for (int64_t procs : {int64_t{0}, int64_t{16}, int64_t{64}, int64_t{128}}) {
        swf_trace read;
        auto jobs = read_swf_jobs(data + name, false, f, procs, read);
        const auto want = filter_jobs(t, f, procs > 0 ? procs : t.max_procs);
        EXPECT_TRUE(same_jobs(jobs, want)) << name << " " << to_string(f) << " " << procs;
        EXPECT_GT(want.size(), 1000u);
        EXPECT_TRUE(read.records.empty());
        EXPECT_EQ(read.record_count, t.records.size());
        EXPECT_EQ(read.sha256, t.sha256);
        EXPECT_EQ(read.max_procs, t.max_procs);
      }
  }
  // MaxProcs after the records, jobs wider than it, a malformed line.
  const std::string path = dir / "late-header.swf";
  std::ofstream(path) << "1 0 5 100 4 -1 -1 4 200 -1 1 7 3 -1 -1 -1 -1 -1\n"
                         "2 10 0 50 -1 -1 -1 12 40 -1 1 7 3 -1 -1 -1 -1 -1\n"
                         "3 20 0 50 2 -1 -1 9 40 -1 1 7 3 -1 -1 -1 -1 -1\n"
                         "4 x\n"
                         "5 30 0 50 8 -1 -1 -1 40 -1 1 7 3 -1 -1 -1 -1 -1\n"
                         "; MaxProcs: 8\n";
  for (auto f : {swf_filter::sc15, swf_filter::batsim}) {
    swf_trace read;
    auto jobs = read_swf_jobs(path, true, f, 0, read);
    const auto t = read_swf(path, true);
    EXPECT_TRUE(same_jobs(jobs, filter_jobs(t, f, 8))) << to_string(f);
    EXPECT_EQ(read.malformed_lines, 1u);
    EXPECT_EQ(read.record_count, 4u);
  }
  swf_trace read;
  EXPECT_EQ(read_swf_jobs(path, true, swf_filter::sc15, 0, read).size(), 2u) << "jobs 2 and 3 are wider than MaxProcs";
  EXPECT_THROW(read_swf_jobs(path, false, swf_filter::sc15, 0, read), swf_error);
}

// At one timestamp completions come first: the job arriving when another ends uses its processors.
TEST(simulator, CompletionsBeforeArrivalsAtOneTimestamp) {
  auto r = simulate({job(1, 0, 4, 100, 100), job(2, 100, 4, 10, 10)}, machine(4, "fifo"));
  EXPECT_EQ(starts(r), (std::vector<int64_t>{0, 100}));
}

// FIFO, EASY and conservative on one small queue, worked by hand (8 processors):
//   job 1 (t=0): 6 procs, runs 100        job 2 (t=1): 4 procs, 100 (waits for job 1's end)
//   job 3 (t=2): 2 procs, runs 50         job 4 (t=3): 2 procs, 200
// FIFO starts nothing behind job 2 until job 1 ends. EASY reserves job 2 at t=100, backfills
// job 3 at t=2 (it ends at 52, before the reservation), and when job 3 ends at 52 backfills
// job 4 on the 2 processors job 2 leaves spare at t=100. With 3 processors job 4 cannot start
// until t=100 (only 2 are free before).
TEST(simulator, FifoEasyAndConservativeStartWhatTheRulesAllow) {
  std::vector<sim_job> jobs{job(1, 0, 6, 100, 100), job(2, 1, 4, 100, 100), job(3, 2, 2, 50, 50), job(4, 3, 2, 200, 200)};
  EXPECT_EQ(starts(simulate(jobs, machine(8, "fifo"))), (std::vector<int64_t>{0, 100, 100, 100}));
  EXPECT_EQ(starts(simulate(jobs, machine(8, "easy"))), (std::vector<int64_t>{0, 100, 2, 52}));
  EXPECT_EQ(starts(simulate(jobs, machine(8, "conservative"))), (std::vector<int64_t>{0, 100, 2, 52}));
  jobs[3].procs = 3;
  EXPECT_EQ(starts(simulate(jobs, machine(8, "easy"))), (std::vector<int64_t>{0, 100, 2, 100}));
}

TEST(simulator, AJobLargerThanTheMachineIsNotedAndTheRestRuns) {
  auto r = simulate({job(1, 0, 9, 10, 10), job(2, 0, 1, 10, 10)}, machine(8, "easy"));
  EXPECT_EQ(r.jobs[0].start, -1);
  EXPECT_EQ(r.jobs[1].start, 0);
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_NE(r.notes[0].find("never runs"), std::string::npos);
}

// Fair share among the trace's groups: group 1 has used the machine for hours, group 2 not at
// all; under multifactor group 2's later job goes first, under FIFO it waits its turn.
TEST(simulator, MultifactorPutsTheLighterGroupFirst) {
  std::vector<sim_job> jobs{job(1, 0, 4, 36000, 36000, 1, 1),  // group 1 fills the machine for 10 h
                            job(2, 100, 4, 100, 100, 1, 1),    // then both groups wait for it
                            job(3, 200, 4, 100, 100, 2, 2)};
  auto fifo = simulate(jobs, machine(4, "fifo"));
  EXPECT_LT(fifo.jobs[1].start, fifo.jobs[2].start);
  auto fair = simulate(jobs, machine(4, "multifactor"));
  EXPECT_LT(fair.jobs[2].start, fair.jobs[1].start) << "group 2 has no usage: its job goes first";
  EXPECT_GT(fair.recalculations, 0u);
  auto again = simulate(jobs, machine(4, "multifactor"));
  EXPECT_EQ(starts(again), starts(fair)) << "deterministic";
}

// Multifactor ranks fair share incrementally (core::decayed_fair_tree) and the whole tree only
// where that cannot certify its answer: every job starts when it does with the whole tree
// ranked at every recalculation. A seeded workload of 4,000 jobs from 40 groups of up to 6
// users, some arriving late, on 32 processors (queues long enough that order matters).
TEST(simulator, MultifactorStartsJobsAsRankingTheWholeTreeEveryTimeDoes) {
  std::mt19937 rng(20261206);
  std::vector<sim_job> jobs;
  int64_t submit = 0;
  for (int64_t id = 1; id <= 4000; ++id) {
    submit += static_cast<int64_t>(rng() % 400);
    const int64_t group = static_cast<int64_t>(rng() % (id < 2000 ? 20 : 40));
    const int64_t run = 60 + static_cast<int64_t>(rng() % 20000);
    jobs.push_back(job(id, submit, 1 + static_cast<int64_t>(rng() % 16), run, run + static_cast<int64_t>(rng() % 5000),
                       group * 10 + static_cast<int64_t>(rng() % 6), group));
  }
  auto s = machine(32, "multifactor");
  auto fast = simulate(jobs, s);
  s.exact_fair_share = true;
  auto exact = simulate(jobs, s);
  EXPECT_EQ(starts(fast), starts(exact));
  EXPECT_GT(fast.recalculations, 1000u);
  EXPECT_EQ(exact.full_rankings, exact.recalculations);
  EXPECT_LT(fast.full_rankings * 20, fast.recalculations) << "the incremental ranking answers almost always";
  auto fifo = simulate(jobs, machine(32, "easy"));
  EXPECT_NE(starts(fifo), starts(fast)) << "the order by priority must matter here";
}

TEST(simulator, MetricsFollowTheirFormulas) {
  std::vector<sim_job_result> r{{1, 0, 0, 100, 2, 100, 100, 1, 1}, {2, 0, 100, 105, 2, 5, 5, 1, 2}};
  auto m = measure(r, 4);
  EXPECT_DOUBLE_EQ(m.mean_wait, 50);
  EXPECT_DOUBLE_EQ(m.max_wait, 100);
  EXPECT_DOUBLE_EQ(m.mean_bsld_10, (1.0 + 10.5) / 2) << "max(1, (wait+run)/max(10, run))";
  EXPECT_DOUBLE_EQ(m.p95_bsld_60, 105.0 / 60) << "nearest rank of (wait+run)/max(run, 60)";
  EXPECT_EQ(m.makespan, 105);
  EXPECT_DOUBLE_EQ(m.utilization, (2 * 100 + 2 * 5) / (4.0 * 105));
}

// EASY's walk of the queue for the jobs that fit, through processor counts packed beside it
// (marked as jobs start, moved when the queue is compacted), picks what the plain walk picks:
// the same passes and starts on random workloads, from a light load to a queue thousands of
// jobs long.
TEST(simulator, EasysPackedWalkIsThePlainWalk) {
  std::mt19937_64 rng(5812);
  size_t long_queues = 0;
  for (int k = 0; k < 24; ++k) {
    const int64_t capacity = 1 + static_cast<int64_t>(rng() % 64);
    std::vector<sim_job> jobs;
    const int n = 500 + static_cast<int>(rng() % 2000);
    const int64_t spacing = 1 + static_cast<int64_t>(rng() % 60);
    for (int i = 0; i < n; ++i) {
      const int64_t estimate = 1 + static_cast<int64_t>(rng() % 3000);
      jobs.push_back(job(i + 1, static_cast<int64_t>(rng() % static_cast<uint64_t>(spacing * n)),
                         1 + static_cast<int64_t>(rng() % static_cast<uint64_t>(capacity + 2)),  // some too wide
                         1 + static_cast<int64_t>(rng() % static_cast<uint64_t>(estimate)), estimate));
    }
    auto s = machine(capacity, "easy");
    auto fast = simulate(jobs, s);
    s.plain_queue_walk = true;
    auto plain = simulate(jobs, s);
    ASSERT_EQ(fast.passes, plain.passes) << "workload " << k;
    EXPECT_EQ(starts(fast), starts(plain)) << "workload " << k;
    int64_t waited = 0;
    for (const auto& j : plain.jobs) waited = std::max(waited, j.start - j.submit);
    long_queues += waited > 100 * spacing;
  }
  EXPECT_GT(long_queues, 6u) << "workloads whose queue grew long, compacted again and again";
}

// Published result 1 (SC'15): EASY on KTH-SP2 (original), user estimates.
TEST(simulator, EasyOnKthReproducesTheSc15Figures) {
  auto trace = read_swf(data + "/KTH-SP2-1996-2-original.swf.gz");
  EXPECT_EQ(trace.sha256, "07f87eefc377964b3755abd58c658462e4976dcb8a85656ae7eed0cedf6170f6");
  auto jobs = filter_jobs(trace, swf_filter::sc15, trace.max_procs);
  ASSERT_EQ(jobs.size(), 28481u) << "the filter leaves the published job count";
  auto m = measure(simulate(jobs, machine(trace.max_procs, "easy")).jobs, trace.max_procs);
  EXPECT_LT(off_by(m.mean_bsld_10, 92.58), 0.10) << m.mean_bsld_10;
  EXPECT_LT(off_by(m.max_bsld_10, 14805.2), 0.10) << m.max_bsld_10;
  EXPECT_LT(off_by(m.mean_flow, 15696.8), 0.10) << m.mean_flow;
  std::printf(
      "[ info ] EASY on KTH-SP2: mean bounded slowdown %.2f (published 92.58), max %.1f (14,805.2), "
      "mean flow %.1f s (15,696.8)\n",
      m.mean_bsld_10, m.max_bsld_10, m.mean_flow);
}

// Published result 2 (Batsim): FIFO on SDSC-SP2, 128 processors.
TEST(simulator, FifoOnSdscReproducesBatsimsFigures) {
  auto trace = read_swf(data + "/SDSC-SP2-1998-4.2-cln.swf.gz");
  EXPECT_EQ(trace.sha256, "e03fe48be50c4ab04d6bb2285296d9c3399e9c1f27ee79b754ad32a14abd9bac");
  auto jobs = filter_jobs(trace, swf_filter::batsim, 128);
  ASSERT_EQ(jobs.size(), 54044u);
  auto m = measure(simulate(jobs, machine(128, "fifo")).jobs, 128);
  EXPECT_LT(off_by(m.mean_wait, 1536585), 0.035) << m.mean_wait;
  EXPECT_LT(off_by(m.p95_bsld_60, 56397.61), 0.035) << m.p95_bsld_60;
  EXPECT_LT(off_by(m.utilization, 0.768), 0.035) << m.utilization;
  std::printf(
      "[ info ] FIFO on SDSC-SP2: mean wait %.0f s (published 1,536,585), p95 bounded slowdown %.2f "
      "(56,397.61), utilisation %.4f (0.768)\n",
      m.mean_wait, m.p95_bsld_60, m.utilization);
}
