// baton jobs import FILE: a campaign's jobs from a JSON-lines file, one POST /jobs body per
// line, sent in batches (POST /jobs/batch: up to 10,000 lines a request, each batch one
// durable commit) with a progress bar on a terminal.
//
// Every line is read and checked before anything is sent. A line without "id" gets one
// derived from its content (and which repeat of that content it is), so running the same
// file again after an interruption submits only what is missing: the rest are refused as
// job_exists and counted as already there. The daemon's answers are followed: a 429 waits
// its Retry-After, a 503 or a lost connection is retried with backoff (the same ids make a
// retry safe; a batch that went in before the connection broke is then counted as already
// there), a refused line is reported with its line number and the rest of its batch is sent
// again, a refusal of the caller (401/403 with no line named) stops it.
//
// A line's input_bundle_path that is a directory (or a .tar.gz) here is packed and uploaded,
// and the line sent with "input_bundle" {sha256, size} instead (the id derived from the line
// as written, so a rerun finds the same ids); a directory named by many lines is uploaded
// once. --shared-path sends the paths as they are.
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <thread>
#include <variant>

#include "cli/bundles.hpp"
#include "cli/commands.hpp"
#include "cli/progress_bar.hpp"
#include "cli/request_helpers.hpp"
#include "core/jobs/ids.hpp"
#include "core/util/hex.hpp"
#include "core/util/sha256.hpp"

namespace baton::cli {
namespace {

using nlohmann::json;

struct import_line {
  size_t number = 0;  // in the file, from 1
  json body;
};

// A UUID (version 8: "custom") from the SHA-256 of the line's canonical JSON and its repeat count.
std::string derived_id(const json& body, size_t repeat) {
  const std::string text = "baton-import\n" + body.dump() + "\n" + std::to_string(repeat);
  std::string d = util::sha256(text).substr(0, 16);
  d[6] = static_cast<char>((d[6] & 0x0f) | 0x80);
  d[8] = static_cast<char>((d[8] & 0x3f) | 0x80);
  return util::uuid_text(d);
}

// The file's jobs, or a message naming the first bad line.
std::variant<std::vector<import_line>, std::string> read_lines(std::istream& in) {
  std::vector<import_line> out;
  std::map<std::string, size_t> seen;  // canonical body -> how many times so far
  std::string text;
  for (size_t n = 1; std::getline(in, text); ++n) {
    auto first = text.find_first_not_of(" \t\r");
    if (first == std::string::npos || text[first] == '#') continue;  // blank lines and comments
    auto body = json::parse(text, nullptr, false);
    if (body.is_discarded() || !body.is_object())
      return "line " + std::to_string(n) + ": not a JSON object (one job's POST /jobs body per line)";
    if (!body.contains("title") || !body["title"].is_string())
      return "line " + std::to_string(n) + ": \"title\" is required and must be a string";
    if (body.contains("input_bundle") ? !body["input_bundle"].is_object()
                                      : !body.contains("input_bundle_path") || !body["input_bundle_path"].is_string())
      return "line " + std::to_string(n) + ": \"input_bundle_path\" (a string) or \"input_bundle\" ({sha256, size}) is required";
    if (body.contains("id") && !(body["id"].is_string() && core::canonical_uuid(body["id"].get<std::string>())))
      return "line " + std::to_string(n) + ": \"id\" must be a UUID";
    if (!body.contains("id")) body["id"] = derived_id(body, seen[body.dump()]++);
    out.push_back({n, std::move(body)});
  }
  if (in.bad()) return std::string("could not read the file");
  return out;
}

struct tally {
  json submitted = json::array(), existing = json::array(), refused = json::array();
  json warned = json::array();  // submitted, but no site could ever run them
};

// How long to wait before sending a line again (nullopt: do not).
std::optional<std::chrono::milliseconds> retry_after(const result& r, int attempt) {
  if (r.status == 429) return std::chrono::seconds(std::max(1, r.retry_after_seconds));
  if ((r.status == 0 || r.status == 503) && attempt < 6) return std::chrono::milliseconds(250 << attempt);  // 0.25 .. 8 s
  return std::nullopt;
}

}  // namespace

int jobs_import(context& c, const std::string& file, bool shared_path) {
  std::ifstream f;
  if (file != "-") {
    f.open(file);
    if (!f) {
      c.err << "baton: " << file << ": cannot open\n";
      return usage_error;
    }
  }
  auto parsed = read_lines(file == "-" ? std::cin : f);
  if (auto* bad = std::get_if<std::string>(&parsed)) {
    c.err << "baton: " << (file == "-" ? "stdin" : file) << ": " << *bad << "; nothing was sent\n";
    return usage_error;
  }
  auto lines = std::get<std::vector<import_line>>(parsed);
  // Which lines name a bundle to upload; all of them must be there before anything is sent.
  std::vector<std::string> to_upload(lines.size());
  if (!shared_path)
    for (size_t i = 0; i < lines.size(); ++i) {
      const auto& body = lines[i].body;
      if (!body.contains("input_bundle_path") || body.contains("input_bundle")) continue;
      auto p = body["input_bundle_path"].get<std::string>();
      std::error_code ec;
      if (!std::filesystem::is_directory(p, ec) && !(std::filesystem::is_regular_file(p, ec) && is_targz(p))) {
        c.err << "baton: " << (file == "-" ? "stdin" : file) << ": line " << lines[i].number << ": input_bundle_path " << p
              << " is neither a directory nor a .tar.gz here (--shared-path sends paths every site sees); nothing was sent\n";
        return usage_error;
      }
      to_upload[i] = std::filesystem::absolute(p, ec).lexically_normal().string();
    }
  std::map<std::string, stored_bundle> uploaded;  // path -> its blob: a directory many lines share goes once
  for (size_t i = 0; i < lines.size(); ++i) {
    auto& line = lines[i];
    if (to_upload[i].empty()) continue;
    auto it = uploaded.find(to_upload[i]);
    if (it == uploaded.end()) {
      stored_bundle sb;
      if (!upload_bundle(c, to_upload[i], sb)) {
        c.err << "baton: line " << line.number
              << ": stopped before any job was sent; running the same file again goes on from here\n";
        return api_error;
      }
      it = uploaded.emplace(to_upload[i], sb).first;
      if (!c.json)
        c.err << "line " << line.number << ": bundle " << to_upload[i] << ": " << sb.sha256 << " ("
              << (sb.already_stored ? "already stored" : "uploaded") << ")\n";
    }
    line.body.erase("input_bundle_path");
    line.body["input_bundle"] = it->second.as_json();
  }
  tally t;
  progress_bar bar(c.err, "jobs imported", "jobs", isatty(2) && !c.json);
  size_t done = 0;
  auto stop = [&](const std::string& where, const result& r) {
    bar.finish();
    c.err << "baton: " << where << ": " << r.message() << "\n"
          << "baton: stopped after " << t.submitted.size() << " submitted, " << t.existing.size()
          << " already there; running the same file again goes on from here\n";
    return r.code();
  };
  // Batches of up to 10,000 lines and 12 MiB (POST /jobs/batch takes 16): all of a batch goes
  // in, or none. A refusal names its entries; those are taken out (an existing id counts as
  // already there, anything else is reported with its line) and the rest sent again.
  for (size_t first = 0; first < lines.size();) {
    std::vector<const import_line*> batch;
    size_t bytes = 0;
    for (size_t i = first; i < lines.size() && batch.size() < 10'000; ++i) {
      size_t n = lines[i].body.dump().size() + 1;
      if (!batch.empty() && bytes + n > (12u << 20)) break;
      batch.push_back(&lines[i]);
      bytes += n;
    }
    first += batch.size();
    for (int attempt = 0; !batch.empty();) {
      json jobs = json::array();
      for (const auto* l : batch) jobs.push_back(l->body);
      result r = call(c.daemon, "POST", "/jobs/batch", json{{"jobs", std::move(jobs)}});
      if (r.status == 200) {
        for (const auto* l : batch) t.submitted.push_back(l->body["id"]);
        const auto& made = r.body["jobs"];
        for (size_t i = 0; i < made.size() && i < batch.size(); ++i)
          if (made[i].contains("pending_detail"))
            t.warned.push_back(
                {{"line", batch[i]->number}, {"id", made[i]["id"]}, {"pending_detail", made[i]["pending_detail"]}});
        done += batch.size();
        break;
      }
      const json* refused =
          r.body.is_object() && r.body.contains("refused") && r.body["refused"].is_array() && !r.body["refused"].empty()
              ? &r.body["refused"]
              : nullptr;
      if (!refused) {
        auto wait = retry_after(r, attempt++);
        if (!wait) return stop("lines " + std::to_string(batch.front()->number) + "-" + std::to_string(batch.back()->number), r);
        std::this_thread::sleep_for(*wait);  // the daemon said how long (429), or backoff (the same ids make a retry safe)
        continue;
      }
      std::vector<bool> out(batch.size(), false);
      for (const auto& x : *refused) {
        auto index = x.value("index", batch.size());
        if (index >= batch.size() || out[index]) continue;
        out[index] = true;
        ++done;
        const auto& line = *batch[index];
        if (x.value("error", "") == "job_exists")
          t.existing.push_back(line.body["id"]);
        else
          t.refused.push_back({{"line", line.number},
                               {"id", line.body["id"]},
                               {"status", r.status},
                               {"message", "batond answered " + std::to_string(r.status) + ": " + x.value("field", "") +
                                               (x.contains("field") ? ": " : "") + x.value("detail", "")},
                               {"error", x}});
      }
      std::vector<const import_line*> rest;
      for (size_t i = 0; i < batch.size(); ++i)
        if (!out[i]) rest.push_back(batch[i]);
      if (rest.size() == batch.size())
        return stop("lines " + std::to_string(batch.front()->number) + "-" + std::to_string(batch.back()->number), r);
      batch = std::move(rest);
      attempt = 0;
    }
    bar.update(done, lines.size());
  }
  bar.finish();
  if (c.json) {
    c.out << json{{"submitted", t.submitted}, {"existing", t.existing}, {"refused", t.refused}, {"cannot_run", t.warned}}.dump(2)
          << "\n";
  } else {
    c.out << "submitted " << t.submitted.size() << ", already there " << t.existing.size() << ", refused " << t.refused.size()
          << "\n";
    for (const auto& x : t.refused)
      c.err << "baton: line " << x["line"].get<size_t>() << ": " << x["message"].get<std::string>() << "\n";
    for (const auto& x : t.warned)
      c.err << "baton: warning: line " << x["line"].get<size_t>()
            << ": no site could ever run it: " << x["pending_detail"].get<std::string>() << "\n";
  }
  return t.refused.empty() ? ok : api_error;
}

}  // namespace baton::cli
