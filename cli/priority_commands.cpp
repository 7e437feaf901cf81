// Who goes first, from the operator's chair: sprio- and sshare-shaped tables, hold and
// release, and "why is my job waiting".
#include <cmath>
#include <sstream>

#include "cli/request_helpers.hpp"

namespace baton::cli {
namespace {

using nlohmann::json;

std::string fixed(const json& v, int digits) {
  if (!v.is_number()) return cell(v);
  std::ostringstream s;
  s.setf(std::ios::fixed);
  s.precision(digits);
  s << v.get<double>();
  return s.str();
}

// One sprio -l line: the weighted value of each factor.
json sprio_line(const json& row) {
  json out = {{"job_id", field(row, "job_id")},   {"partition", field(row, "partition")},  {"user", field(row, "user")},
              {"account", field(row, "account")}, {"priority", field(row, "priority")},    {"tier", field(row, "priority_tier")},
              {"nice", field(row, "nice")},       {"reason", field(row, "pending_reason")}};
  const json& f = field(row, "factors");
  for (const char* name : {"age", "fairshare", "job_size", "partition", "qos"})
    if (f.contains(name)) out[std::string(name) + "_w"] = fixed(field(field(f, name), "weighted"), 0);
  if (row.contains("score")) out["score"] = fixed(field(row, "score"), 6);
  return out;
}

}  // namespace

int jobs_hold(context& c, const std::string& id, bool hold) {
  result r;
  if (int code = run(c, "POST", "/jobs/" + encode(id) + (hold ? "/hold" : "/release"), r)) return code;
  if (r.body.is_object() && r.body.contains("array_id") && r.body.contains("changed"))
    return array_acted(c, r.body, hold ? "held" : "released");
  return reply(c, r.body, [&](std::ostream& o) { o << (hold ? "held " : "released ") << id; });
}

int priority(context& c, const std::string& job_id) {
  result r;
  if (int code = run(c, "GET", job_id.empty() ? "/priority" : "/jobs/" + encode(job_id) + "/priority", r)) return code;
  if (c.json) return print(c, r.body, {});
  c.out << "policy " << cell(r.body["policy"]) << ", calculated " << cell(r.body["calculated_at"]) << "\n";
  json rows = json::array();
  for (const auto& row : r.body["jobs"]) rows.push_back(sprio_line(row));
  bool lattice = cell(r.body["policy"]).rfind("lattice:", 0) == 0;
  std::vector<column> cols = {{"JOBID", "job_id"},    {"PARTITION", "partition"}, {"USER", "user"},
                              {"ACCOUNT", "account"}, {"TIER", "tier"},           {"PRIORITY", "priority"}};
  if (lattice)
    cols.push_back({"SCORE", "score"});
  else
    for (auto [title, key] : {std::pair<const char*, const char*>{"AGE", "age_w"},
                              {"FAIRSHARE", "fairshare_w"},
                              {"JOBSIZE", "job_size_w"},
                              {"PARTITION", "partition_w"},
                              {"QOS", "qos_w"}})
      cols.push_back({title, key});
  cols.push_back({"NICE", "nice"});
  cols.push_back({"REASON", "reason"});
  print_table(c.out, rows, cols);
  return ok;
}

int fairshare(context& c) {
  result r;
  if (int code = run(c, "GET", "/fairshare", r)) return code;
  if (c.json) return print(c, r.body, {});
  json rows = json::array();
  for (const auto& a : r.body["associations"]) {
    if (!a.is_object()) continue;
    int depth = bounded_int(field(a, "depth"), 0, 64, 0);
    json line = a;
    line["account"] = std::string(static_cast<size_t>(depth), ' ') + cell(field(a, "account"));  // the tree, as sshare indents it
    for (const char* k : {"norm_shares", "effective_usage", "fair_share", "fair_share_in_use"}) line[k] = fixed(field(a, k), 6);
    const json& level_fs = field(a, "level_fs");
    line["level_fs"] = level_fs.is_string() ? level_fs : json(fixed(level_fs, 6));
    line["raw_usage"] = fixed(field(a, "raw_usage"), 0);
    rows.push_back(std::move(line));
  }
  print_table(c.out, rows,
              {{"ACCOUNT", "account"},
               {"USER", "user"},
               {"RAWSHARES", "raw_shares"},
               {"NORMSHARES", "norm_shares"},
               {"RAWUSAGE", "raw_usage"},
               {"EFFECTVUSAGE", "effective_usage"},
               {"LEVELFS", "level_fs"},
               {"FAIRSHARE", "fair_share"},
               {"IN USE", "fair_share_in_use"}});
  return ok;
}

int jobs_why(context& c, const std::string& id) {
  result job, prio;
  if (int code = run(c, "GET", "/jobs/" + encode(id), job)) return code;
  if (int code = run(c, "GET", "/jobs/" + encode(id) + "/priority", prio)) return code;
  const json& row = prio.body["jobs"].empty() ? json::object() : prio.body["jobs"][0];
  if (c.json) {
    c.out << json{{"job", job.body}, {"priority", prio.body}}.dump(2) << "\n";
    return ok;
  }
  c.out << id << ": " << cell(job.body["status"]);
  if (job.body["pending_reason"].is_string()) c.out << ", waiting: " << cell(job.body["pending_reason"]);
  if (job.body["queue_blocked_reason"].is_string()) c.out << " (" << cell(job.body["queue_blocked_reason"]) << ")";
  c.out << "\n";
  if (job.body.value("pending_detail", json()).is_string())  // no site could ever run it
    c.out << "can never run: " << job.body["pending_detail"].get<std::string>() << "\n";
  // The parents it waits on (or waited on), each with its condition and status now.
  if (job.body.contains("depends_on") && job.body["depends_on"].is_array())
    for (const auto& d : job.body["depends_on"]) {
      std::string parent = d.value("job_id", "");
      result p = call(c.daemon, "GET", "/jobs/" + encode(parent));
      c.out << "depends on " << parent << " (" << d.value("condition", "afterok")
            << "): " << (p.status == 200 ? p.body.value("status", "?") : "not visible") << "\n";
    }
  if (job.body.value("expected_start", json()).is_string())  // the last plan's reservation
    c.out << "expected to start " << cell(job.body["expected_start"]) << " on worker " << cell(job.body["expected_worker_id"])
          << "\n";
  if (job.body.value("preempted_by", json()).is_string())  // told to make room for a preemptor
    c.out << "preempted by " << cell(job.body["preempted_by"]) << " (" << cell(job.body["preempt_mode"])
          << "), leaves its worker by " << cell(job.body["preempt_grace_until"]) << "\n";
  c.out << "policy " << cell(prio.body["policy"]) << ", priority " << cell(row.value("priority", json())) << ", tier "
        << cell(row.value("priority_tier", json())) << ", user " << cell(job.body["user"]) << ", account "
        << cell(job.body["account"]);
  if (job.body.value("nice", 0) != 0) c.out << ", nice " << job.body["nice"].get<int64_t>();
  c.out << "\n";
  json factors = json::array();
  const json named = row.value("factors", json::object());  // kept alive: items() refers into it
  for (const auto& [name, f] : named.items()) {
    if (!f.is_object()) continue;
    factors.push_back({{"factor", name},
                       {"raw", fixed(f.value("raw", f.value("value", json())), 4)},
                       {"normalized", fixed(f.value("normalized", json()), 4)},
                       {"weighted", fixed(field(f, "weighted"), 4)}});
  }
  if (!factors.empty())
    print_table(c.out, factors, {{"FACTOR", "factor"}, {"RAW", "raw"}, {"NORMALIZED", "normalized"}, {"WEIGHTED", "weighted"}});
  return ok;
}

}  // namespace baton::cli
