#pragma once
// Conversions between Beast's messages and batond's own request/response (http/message.hpp),
// so routes never see Beast. Used by the server's connections (http/beast_session.cpp).
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>

#include <string>
#include <string_view>

#include "http/message.hpp"

namespace baton::http {

// Beast's string_view is Boost's, not std's.
inline std::string_view to_std(boost::beast::string_view s) { return {s.data(), s.size()}; }

using beast_request = boost::beast::http::request<boost::beast::http::string_body>;
using beast_response = boost::beast::http::response<boost::beast::http::string_body>;

// Moves a parsed request into batond's type: decoded path and query, headers as sent.
request from_beast(beast_request&& in, const std::string& remote_addr);
// The same for a head alone (no body): what the credential check reads before the body comes.
request head_of(const beast_request& in, const std::string& remote_addr);

// An HTTP/1.1 response with Content-Type and Content-Length set (none on 1xx/204/304);
// Content-Length, Connection and Transfer-Encoding headers the route set are ignored (the
// server owns framing). Safe to call on any thread.
beast_response to_beast(response&& res);

// The JSON error every connection-level failure answers with:
// {"detail": message, "error": code, "message": message}.
beast_response error_reply(int status, const std::string& code, const std::string& message);

}  // namespace baton::http
