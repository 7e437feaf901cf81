#pragma once
#include <vector>
// The worker and operator HTTP API, path- and payload-compatible with RelayMD's
// (the paths, bodies and status codes its workers use), answered by the scheduler actor.
#include <caf/actor_system.hpp>
#include "http/message.hpp"

#include <functional>
#include <memory>
#include <string>

#include "actors/scheduler.hpp"
#include "events/log_reader.hpp"
#include "http/router.hpp"
#include "http/storage/backend.hpp"
#include "actors/caches/idle_poll_view.hpp"
#include "projections/live_feed.hpp"
#include "projections/job_history.hpp"
#include "projections/minute_stats.hpp"
#include "http/rate_limiter.hpp"
#include "http/request_counters.hpp"
#include "http/ui_sessions.hpp"
#include "actors/caches/operator_credentials.hpp"
#include "actors/caches/pilot_credential.hpp"
#include "projections/projection.hpp"
#include "actors/caches/worker_credentials.hpp"

namespace baton::http {

// Keeps a rotated pilot token's secret where pilots read it (batond/pilot_token_files.hpp):
// written aside before the rotation is decided, put in place once it is durable, dropped if
// it was refused. So a crash between the two loses neither the old token nor the new one.
struct pilot_secret_store {
  std::function<void(const std::string& secret)> stage;
  std::function<void()> commit, discard;
};

struct api_context {
  actors::scheduler_actor scheduler;
  std::string api_token;                                     // shared operator/worker token
  std::shared_ptr<const projections::job_history> history;   // GET /jobs/{id}/history
  std::shared_ptr<const projections::minute_stats> minutes;  // GET /stats/minutes (none: 503)
  // Idle polls answered without the scheduler (optional; the scheduler fills it) and the
  // clock their lease check uses (the scheduler's).
  std::shared_ptr<const caches::idle_poll_view> idle_view;
  std::function<core::time_us()> clock;
  std::shared_ptr<const caches::pilot_credential> pilot;  // the X-API-Token that may only register workers (none: no pilots)
  pilot_secret_store pilot_secrets;                       // where a rotated pilot token goes (empty: not rotated by batond)
  std::shared_ptr<const caches::worker_credentials> credentials;        // who a worker token belongs to
  bool accept_shared_token = false;                                     // workers.accept_shared_token (RelayMD workers)
  std::shared_ptr<const caches::operator_credentials> operators;        // whose a named operator's token is
  std::shared_ptr<rate_limiter> limiter;                                // per-caller request budgets (none: unlimited)
  std::shared_ptr<const events::log_reader> log;                        // GET /audit/export, /metrics read it (none: 503)
  std::vector<std::shared_ptr<const projections::projection>> log_fed;  // the log-fed projections: GET /metrics reports their lag
  std::shared_ptr<const actors::log_metrics> log_metrics;               // the log writer's latencies, for GET /metrics
  std::shared_ptr<const request_counters> requests;                // the server's answers by route and status, for GET /metrics
  std::shared_ptr<actors::poll_metrics> polls;                     // polls timed and counted by result, for GET /metrics
  std::shared_ptr<actors::slurm_call_counters> slurm_calls;        // the cluster actors' Slurm calls, for GET /metrics
  std::shared_ptr<actors::cluster_cycle_counters> cluster_cycles;  // their cycles, for GET /metrics
  std::string scrape_token;                                        // X-API-Token that may only read GET /metrics ("" = none)
  std::shared_ptr<ui_sessions> sessions;                           // the dashboard's logins (none: cookies are not credentials)
  std::shared_ptr<login_failures> login_limits;                    // failed logins per address and operator (none: unlimited)
  std::shared_ptr<stream_slots> streams;                           // live event streams per operator (none: unlimited)
  std::shared_ptr<projections::live_feed> feed;                    // GET /events/stream (none: 503)
  bool https = false;                                              // served over TLS: the UI cookie is Secure
  // The data plane (docs/storage.md): where blobs live, the uploads and file sets granted and
  // not yet committed (http/file_routes.hpp), and how long a transfer is good for.
  std::shared_ptr<storage::backend> storage;
  std::shared_ptr<const storage::transfer_counters> transfer_counts;  // the local backend's, for GET /metrics
  std::shared_ptr<class transfer_book> transfers;
  int transfer_ttl_seconds = 900;
};

void add_api_routes(router& server, api_context ctx);

}  // namespace baton::http
