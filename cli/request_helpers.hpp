#pragma once
// What every CLI command does with the daemon: percent-encode a path part, make a call and
// report its failure, print a body as a table, a sentence or JSON, to stdout or a file.
#include <nlohmann/json.hpp>

#include <functional>
#include <fstream>
#include <ostream>
#include <string>
#include <vector>

#include "cli/client.hpp"
#include "cli/commands.hpp"
#include "cli/format.hpp"

namespace baton::cli {

std::string encode(const std::string& v);
// Runs a call; on failure prints why and returns its exit code, else ok with r filled.
int run(context& c, const std::string& method, const std::string& path, result& r, const nlohmann::json& body = nullptr);
// Runs a command. A reply this baton cannot read (a field of another type, a list where an
// object was expected: a batond of another version, or something else on its port) ends the
// command with exit 1 and a message saying so, never with "terminate called".
int guarded(context& c, const std::function<int()>& command);
// The body as JSON (--json) or as a table of the given columns.
int print(context& c, const nlohmann::json& body, const std::vector<column>& columns);
// The body as JSON (--json), else the line `say` writes (its newline added here); say runs
// only without --json.
int reply(context& c, const nlohmann::json& body, const std::function<void(std::ostream&)>& say);
// Where a command writes: the file at path (opened into `file`), or c.out for "" and "-";
// nullptr after saying why the file cannot be written.
std::ostream* output_to(context& c, const std::string& path, std::ofstream& file, std::ios::openmode mode = std::ios::out);

}  // namespace baton::cli
