#pragma once
// Which config file batond and the CLI read and how its text is had, with the errors both
// report: what the two share. batond's settings (config.hpp) and the CLI's own few keys
// (cli/cli_config.hpp) are read out of it separately, so this knows nothing of either.
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace baton::config {

using env_lookup = std::function<std::optional<std::string>(const std::string&)>;
env_lookup process_env();  // reads ::getenv
// The variable's value; set but empty counts as unset.
std::optional<std::string> env_value(const env_lookup& env, const std::string& name);

struct config_error {
  std::string file;          // "" when the problem came from the environment
  std::string key;           // dotted key ("listen.port") or environment variable name
  std::string message;       // what was expected and what was found
  std::string what() const;  // one line
};

// Where batond listens: the listen: section, BATON_LISTEN; the CLI's default address.
struct listen_config {
  std::string host = "127.0.0.1";
  int port = 36158;  // 0 = ephemeral (tests)
};
// "host:port" with port 0..65535; nullopt if malformed.
std::optional<listen_config> parse_listen(const std::string& text);

// batond's data directory unless data_dir: or BATON_DATA_DIR says otherwise (the CLI finds
// batond's api_token file there).
inline constexpr const char* default_data_dir = "./var/baton";

// tls: batond serves HTTPS when both files are set (PEM; the certificate file may hold the
// chain). Relative paths are taken from batond's working directory.
struct tls_config {
  std::string cert_file;
  std::string key_file;
  bool enabled() const { return !cert_file.empty(); }
};

// Where and how batond serves: the keys batond and the CLI both read (listen:, tls:,
// data_dir:, then BATON_LISTEN and BATON_DATA_DIR over them), read by one reader
// (config/yaml_read.hpp's read_endpoint and read_endpoint_env) with one set of messages.
struct endpoint {
  listen_config listen;
  tls_config tls;
  std::string data_dir = default_data_dir;
};

// $BATON_CONFIG if set and non-empty, else $HOME/.config/baton/config.yaml.
std::string config_path(const env_lookup& env);
// The file batond and the CLI read: `flag` (their --config) when given, else $BATON_CONFIG,
// else the default path. `named_by` says who named it ("--config", "BATON_CONFIG"; "" for the
// default): a named file must exist, since running on built-in defaults after a typo in its
// name would mean another port and another data directory. BATON_CONFIG=/dev/null names an
// empty file: built-in defaults whatever ~/.config holds.
struct config_choice {
  std::string path;
  std::string named_by;
};
config_choice choose_config(const std::string& flag, const env_lookup& env);

// The chosen file's text. The default path absent: "" with source "" and a warning; a named
// one absent, a directory or unreadable: an error naming it.
struct config_text {
  std::string text;
  std::string source;  // the file read, "" when there was none
  std::vector<std::string> warnings;
  std::optional<config_error> error;
};
config_text read_config(const config_choice& which);

}  // namespace baton::config
