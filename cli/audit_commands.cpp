// baton audit export: the daemon's audit export (every event with its sequence, hash and the
// hash before it, and a trailer) into a file or standard output. Check it with
// `baton-replay verify-export FILE`.
#include <httplib.h>
#include <unistd.h>

#include <fstream>

#include "cli/commands.hpp"
#include "cli/progress_bar.hpp"
#include "cli/request_helpers.hpp"

namespace baton::cli {

int audit_export(context& c, const audit_export_options& o) {
  httplib::Params q;
  for (auto [name, value] : {std::pair<const char*, const std::string*>{"from", &o.from},
                             {"to", &o.to},
                             {"stream", &o.stream},
                             {"type", &o.type},
                             {"actor", &o.actor},
                             {"format", &o.format}})
    if (!value->empty()) q.emplace(name, *value);
  const std::string path = httplib::append_query_params("/audit/export", q);
  std::ofstream file;
  std::ostream* out = output_to(c, o.output, file, std::ios::binary | std::ios::trunc);
  if (!out) return usage_error;
  // A bar on the terminal while it arrives, unless the export itself is going to the terminal.
  progress_bar bar(c.err, "audit export", "bytes", isatty(2) && (file.is_open() || !isatty(1)));
  auto r = download(c.daemon, path, *out, [&](uint64_t done, uint64_t total) { bar.update(done, total); });
  bar.finish();
  if (r.code() != ok) {
    c.err << "baton: " << r.message() << "\n";
    if (file.is_open()) {
      file.close();
      std::remove(o.output.c_str());  // no half file that looks like an export
    }
    return r.code();
  }
  if (file.is_open()) {
    file.close();
    if (!file) {
      c.err << "baton: cannot write " << o.output << "\n";
      return usage_error;
    }
    c.err << "exported to " << o.output << " (check it with: baton-replay verify-export " << o.output << ")\n";
  }
  return ok;
}

}  // namespace baton::cli
