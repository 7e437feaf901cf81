#include "http/reply_shapes.hpp"

#include "http/json_reply.hpp"

namespace baton::http {

using shapes::poll_answer_text;
namespace R = core::results;

int status_of(core::error_kind k) {
  switch (k) {
    case core::error_kind::invalid:
      return 422;
    case core::error_kind::unauthenticated:
      return 401;
    case core::error_kind::forbidden:
      return 403;
    case core::error_kind::not_found:
      return 404;
    case core::error_kind::conflict:
      return 409;
    case core::error_kind::mismatch:
      return 400;
    case core::error_kind::unavailable:
      return 503;
    case core::error_kind::over_limit:
      return 429;
    case core::error_kind::too_large:
      return 413;
    case core::error_kind::no_space:
      return 507;
    case core::error_kind::internal:
      break;
  }
  return 500;
}

void to_response(const core::reply& r, response& res) {
  if (r.error) return reply_json(res, status_of(r.error->kind), error_body(*r.error));
  // The commonest answers are written as text straight away (shapes/reply_json.hpp), no tree.
  auto text = [&res](std::string body) {
    res.status = 200;
    res.set_content(std::move(body), "application/json");
  };
  if (const auto* poll = std::get_if<R::poll_answer>(&r.value)) return text(poll_answer_text(*poll));
  if (const auto* job = std::get_if<R::job_row>(&r.value)) return text(shapes::job_text(*job, r.at));  // a create's answer
  if (const auto* page = std::get_if<R::job_page>(&r.value)) return text(shapes::job_page_text(*page, r.at));
  auto body = body_of(r.value, r.at);
  if (body.is_null()) {
    res.status = 204;
    return;
  }
  reply_json(res, 200, body);
}

}  // namespace baton::http
