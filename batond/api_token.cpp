#include "batond/api_token.hpp"

#include <spdlog/spdlog.h>

#include <fstream>
#include <stdexcept>

#include "http/request_parsing.hpp"

namespace baton::daemon {

namespace {

std::string load_or_create(const std::string& data_dir, const std::string& file, const char* env_name) {
  std::string path = data_dir + "/" + file;
  std::ifstream in(path);
  if (in) {
    std::string token;
    std::getline(in, token);
    if (token.size() < 16) throw std::runtime_error(path + " holds no usable token (at least 16 characters)");
    return token;
  }
  auto token = http::new_secret_hex();
  write_secret_file(path, token);
  spdlog::info("no {} set: made a token in {} (mode 0600)", env_name, path);
  return token;
}

}  // namespace

std::string load_or_create_api_token(const std::string& data_dir) {
  return load_or_create(data_dir, "api_token", "BATON_API_TOKEN");
}

std::string load_or_create_pilot_token(const std::string& data_dir) {
  return load_or_create(data_dir, "pilot_token", "BATON_PILOT_TOKEN");
}

}  // namespace baton::daemon
