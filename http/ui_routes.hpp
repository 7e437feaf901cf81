#pragma once
// The web dashboard's routes: its static files at /ui/ (compiled in, http/ui_assets.hpp),
// login and logout into a session cookie (http/ui_sessions.hpp), and the live event stream
// GET /events/stream (Server-Sent Events from projections/live_feed.hpp), which `baton
// monitor` follows too. Everything else the dashboard shows comes from the API routes,
// with the session cookie as the credential (http/caller.hpp).
#include "http/api_routes.hpp"
#include "http/router.hpp"

namespace baton::http {

void add_ui_routes(router& server, api_context ctx);

// The headers every dashboard page and file carries: a strict Content-Security-Policy (no
// inline script or style, nothing from elsewhere), no framing, no sniffing, no referrer; files
// are revalidated (no-cache), logins and sessions never kept (no-store).
void set_ui_headers(response& res, const char* cache_control = "no-cache");

}  // namespace baton::http
