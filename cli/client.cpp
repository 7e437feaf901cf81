#include "cli/client.hpp"

#include <httplib.h>

namespace baton::cli {

exit_code result::code() const {
  if (status == 0) return unreachable;
  return status < 300 ? ok : api_error;
}

std::string result::message() const {
  if (status == 0) return "cannot reach batond: " + error;
  std::string text;
  if (body.is_object()) {
    for (const char* k : {"message", "detail"})
      if (body.contains(k) && body[k].is_string()) {
        text = body[k].get<std::string>();
        break;
      }
    if (body.contains("field") && body["field"].is_string()) text += " (field: " + body["field"].get<std::string>() + ")";
    // An unknown partition, QOS or account: batond lists the names it knows (and RelayMD's
    // unknown cluster pin its known_cluster_names), so the fix is on the screen.
    const nlohmann::json* known = nullptr;
    if (body.contains("known") && body["known"].is_array())
      known = &body["known"];
    else if (body.contains("detail") && body["detail"].is_object() && body["detail"].contains("known_cluster_names") &&
             body["detail"]["known_cluster_names"].is_array())
      known = &body["detail"]["known_cluster_names"];
    if (known) {
      std::string what = body.contains("field") && body["field"].is_string() ? body["field"].get<std::string>() : "cluster";
      std::string names;
      for (const auto& n : *known)
        if (n.is_string()) names += (names.empty() ? "" : ", ") + n.get<std::string>();
      text += names.empty() ? "; no " + what + " is configured" : "; known " + what + " names: " + names;
    }
  }
  if (text.empty()) text = body.is_null() ? "" : body.dump();
  return "batond answered " + std::to_string(status) + (text.empty() ? "" : ": " + text);
}

namespace {

httplib::Headers headers_of(const endpoint& e) {
  httplib::Headers h = {{"X-API-Token", e.token}};
  if (!e.operator_name.empty()) h.emplace("X-Baton-Operator", e.operator_name);
  return h;
}

std::string transport_error(const httplib::Result& r, const endpoint& e) {
  std::string why = httplib::to_string(r.error());
  if (r.error() == httplib::Error::SSLServerVerification)
    why += e.ca_file.empty() ? ": batond's certificate is not signed by a CA this machine trusts (set --ca-file)"
                             : ": batond's certificate is not signed by the CA in " + e.ca_file + " or names another host";
  return why + " (" + (e.https ? "https://" : "") + e.host + ":" + std::to_string(e.port) + ")";
}

// A reply body as JSON, or as a JSON string when it is not JSON.
nlohmann::json body_of(const std::string& text) {
  if (text.empty()) return nullptr;
  auto body = nlohmann::json::parse(text, nullptr, false);
  return body.is_discarded() ? nlohmann::json(text) : body;
}

}  // namespace

result call(const endpoint& e, const std::string& method, const std::string& path, const nlohmann::json& body) {
  auto client = connect(e);
  httplib::Client& c = *client;
  c.set_connection_timeout(5, 0);
  c.set_read_timeout(60, 0);
  c.set_tcp_nodelay(true);
  auto h = headers_of(e);
  std::string payload = body.is_null() ? "" : body.dump();
  httplib::Result r = method == "GET"      ? c.Get(path.c_str(), h)
                      : method == "DELETE" ? c.Delete(path.c_str(), h)
                                           : c.Post(path.c_str(), h, payload, "application/json");
  result out;
  if (!r) {
    out.error = transport_error(r, e);
    return out;
  }
  out.status = r->status;
  out.body = body_of(r->body);
  if (auto total = r->get_header_value("X-Total-Count");
      !total.empty() && total.find_first_not_of("0123456789") == std::string::npos && total.size() < 19)
    out.total = std::stoll(total);
  if (auto after = r->get_header_value("Retry-After");
      !after.empty() && after.size() < 6 && after.find_first_not_of("0123456789") == std::string::npos)
    out.retry_after_seconds = std::stoi(after);
  return out;
}

result download(const endpoint& e, const std::string& path, std::ostream& out,
                const std::function<void(uint64_t, uint64_t)>& progress) {
  auto client = connect(e);
  httplib::Client& c = *client;
  c.set_connection_timeout(5, 0);
  c.set_read_timeout(300, 0);
  int status = 0;
  std::string error_body;
  httplib::Result r = c.Get(
      path.c_str(), headers_of(e),
      [&](const httplib::Response& res) {
        status = res.status;
        return true;
      },
      [&](const char* data, size_t n) {
        if (status == 200)
          out.write(data, static_cast<std::streamsize>(n));
        else
          error_body.append(data, n);
        return static_cast<bool>(out);
      },
      [&](uint64_t done, uint64_t total) {
        if (progress && status == 200) progress(done, total);
        return true;
      });
  result res;
  if (!r) {
    res.error = transport_error(r, e);
    return res;
  }
  res.status = r->status;
  res.body = body_of(error_body);
  return res;
}

bool parse_url(const std::string& url, endpoint& e) {
  std::string rest = url;
  e.https = rest.rfind("https://", 0) == 0;
  if (rest.rfind("http://", 0) == 0)
    rest = rest.substr(7);
  else if (e.https)
    rest = rest.substr(8);
  while (!rest.empty() && rest.back() == '/') rest.pop_back();
  auto colon = rest.rfind(':');
  if (colon == std::string::npos || colon == 0) return false;
  auto port = rest.substr(colon + 1);
  if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos) return false;
  e.host = rest.substr(0, colon);
  e.port = std::stoi(port);
  return e.port > 0 && e.port < 65536;
}

std::unique_ptr<httplib::Client> connect(const endpoint& e) {
  auto c = std::make_unique<httplib::Client>((e.https ? "https://" : "http://") + e.host + ":" + std::to_string(e.port));
  if (e.https) {
    c->enable_server_certificate_verification(true);
    if (!e.ca_file.empty()) c->set_ca_cert_path(e.ca_file.c_str());
  }
  return c;
}

}  // namespace baton::cli
