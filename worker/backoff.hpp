#pragma once
// Capped exponential back-off with jitter, shared by the worker's API client and the transfer
// library (which the CLI links too, so it lives apart from api_client).
namespace baton::worker {

// Delay before retry number `retry` (1-based): d = base * 2^(retry-1), capped, then spread
// over [d/2, d) by `jitter` in [0, 1): workers that lost batond together (a restart, a
// network cut) come back spread out instead of all at once.
double backoff_seconds(int retry, double base, double cap, double jitter);
// A draw for backoff_seconds (uniform in [0, 1), per thread).
double retry_jitter();

}  // namespace baton::worker
