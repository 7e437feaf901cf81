#include "http/beast_message.hpp"

#include "http/json_reply.hpp"

namespace baton::http {

namespace bhttp = boost::beast::http;

request head_of(const beast_request& in, const std::string& remote_addr) {
  request out;
  out.method = std::string(to_std(in.method_string()));
  out.target = std::string(to_std(in.target()));
  parse_target(out.target, out.path, out.params);
  out.headers.reserve(8);
  for (const auto& f : in) out.headers.emplace_back(std::string(to_std(f.name_string())), std::string(to_std(f.value())));
  out.remote_addr = remote_addr;
  return out;
}

request from_beast(beast_request&& in, const std::string& remote_addr) {
  request out = head_of(in, remote_addr);
  out.body = std::move(in.body());
  return out;
}

beast_response to_beast(response&& res) {
  beast_response out;
  out.version(11);
  unsigned status = res.status >= 100 && res.status <= 999 ? static_cast<unsigned>(res.status) : 500u;
  out.result(status);
  for (auto& [name, value] : res.headers) {
    if (iequals(name, "Content-Length") || iequals(name, "Connection") || iequals(name, "Transfer-Encoding")) continue;
    out.insert(name, value);
  }
  bool bodiless = status < 200 || status == 204 || status == 304;
  if (bodiless) return out;  // no Content-Length either (RFC 9110 8.6); prepare_payload would add one
  if (!res.content_type.empty()) out.set(bhttp::field::content_type, res.content_type);
  out.body() = std::move(res.body);
  out.prepare_payload();
  return out;
}

beast_response error_reply(int status, const std::string& code, const std::string& message) {
  response res;
  reply_json(res, status, {{"detail", message}, {"error", code}, {"message", message}});
  return to_beast(std::move(res));
}

}  // namespace baton::http
