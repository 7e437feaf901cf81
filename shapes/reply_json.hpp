#pragma once
// The core's typed answers as the API's JSON: the error body every 4xx/5xx uses
// ({"detail","error","message","field"?} plus the error's facts) and each result in RelayMD's
// shapes (JobRead, WorkerRead, poll answers, sprio's and sshare's lines). Below both the HTTP
// layer, which sends them (http/reply_shapes.hpp), and baton-replay, which shows a past state
// as the API would have answered (replay/tool/state_at): no server, no CAF, no store.
#include <nlohmann/json.hpp>

#include <string>

#include "core/app/outcome.hpp"

namespace baton::shapes {

nlohmann::json error_body(const core::domain_error& e);
// A result's body; null for none. at: the decision time (runtime figures are computed at it).
nlohmann::json body_of(const core::result& r, core::time_us at);
// A poll's answer as the JSON text body_of's rendering would dump, written by hand: the
// commonest reply of all (tests/reply_shapes_test.cpp holds the two equal).
std::string poll_answer_text(const core::results::poll_answer& v);
// A job row and a page of them (POST /jobs, GET /jobs/{id}, GET /jobs) as the JSON text body_of's
// rendering holds (core/jobs/job_text.hpp writes the job's own fields).
std::string job_text(const core::results::job_row& row, core::time_us at);
std::string job_page_text(const core::results::job_page& page, core::time_us at);

}  // namespace baton::shapes
