#include "actors/salad.hpp"
#include "actors/thread_name.hpp"

#include <caf/all.hpp>
#include <httplib.h>
#include <spdlog/spdlog.h>

#include <variant>

namespace baton::actors {
namespace {

using nlohmann::json;

struct salad_state {
  salad_state() = default;  // user-declared: CAF builds a state constructible from its actor pointer from `this`
  std::string last_error;   // reported once, not every cycle
  static inline const char* name = "salad";
};

struct failure {
  std::string stage, message;
};

// The Salad public API: one container group's replicas.
class salad_api {
 public:
  explicit salad_api(const config::salad_config& c) : cfg_(c) {
    auto scheme_end = c.api_base_url.find("://") + 3;
    auto path_start = c.api_base_url.find('/', scheme_end);
    origin_ = c.api_base_url.substr(0, path_start);
    path_ = (path_start == std::string::npos ? "" : c.api_base_url.substr(path_start)) + "/organizations/" + c.organization +
            "/projects/" + c.project + "/containers/" + c.container_group;
  }

  std::variant<int, failure> replicas() {
    auto cli = client();
    auto r = cli.Get(path_.c_str());
    if (!r) return failure{"get", "no response: " + httplib::to_string(r.error())};
    if (r->status != 200) return failure{"get", "HTTP " + std::to_string(r->status) + ": " + r->body.substr(0, 300)};
    auto body = json::parse(r->body, nullptr, false);
    if (!body.is_object() || !body.contains("replicas") || !body["replicas"].is_number_integer())
      return failure{"get", "no integer 'replicas' in the answer"};
    return body["replicas"].get<int>();
  }

  std::optional<failure> set_replicas(int n) {
    auto cli = client();
    auto r = cli.Patch(path_.c_str(), json{{"replicas", n}}.dump(), "application/merge-patch+json");
    if (!r) return failure{"patch", "no response: " + httplib::to_string(r.error())};
    if (r->status < 200 || r->status >= 300)
      return failure{"patch", "HTTP " + std::to_string(r->status) + ": " + r->body.substr(0, 300)};
    return std::nullopt;
  }

 private:
  httplib::Client client() {
    httplib::Client cli(origin_);
    cli.set_connection_timeout(cfg_.timeout_seconds, 0);
    cli.set_read_timeout(cfg_.timeout_seconds, 0);
    cli.set_write_timeout(cfg_.timeout_seconds, 0);
    cli.set_tcp_nodelay(true);
    cli.set_default_headers({{"Salad-Api-Key", cfg_.api_key}});
    return cli;
  }

  const config::salad_config& cfg_;
  std::string origin_, path_;
};

std::optional<core::result> ask(const scheduler_actor& s, core::command cmd) {
  core::envelope e{core::principal::loop(), "loop:salad-autoscaler", {}, std::move(cmd), {}};
  auto r = submit(s, std::move(e), std::chrono::seconds(30));
  if (!r || r->error) return std::nullopt;
  return std::move(r->value);
}

void report_failure(salad_actor::stateful_pointer<salad_state> self, const scheduler_actor& s, const failure& f) {
  std::string key = f.stage + ": " + f.message;
  spdlog::warn("salad autoscaler: {}", key);
  if (key == self->state.last_error) return;  // the same outage: one event, not one per cycle
  self->state.last_error = key;
  ask(s, core::commands::salad_failed{f.stage, f.message});
}

void cycle(salad_actor::stateful_pointer<salad_state> self, const scheduler_actor& s, const config::salad_config& cfg) {
  auto r = ask(s, core::commands::salad_target{});
  auto* wanted = r ? std::get_if<core::replica_target>(&*r) : nullptr;
  if (!wanted) return;
  int target = wanted->target;
  salad_api api(cfg);
  auto current = api.replicas();
  if (auto* f = std::get_if<failure>(&current)) return report_failure(self, s, *f);
  int now = std::get<int>(current);
  if (now != target) {
    if (auto f = api.set_replicas(target)) return report_failure(self, s, *f);
    spdlog::info("salad autoscaler: replicas {} -> {}", now, target);
    ask(s, core::commands::salad_scaled{now, *wanted});
  }
  self->state.last_error.clear();
}

salad_actor::behavior_type salad(salad_actor::stateful_pointer<salad_state> self, scheduler_actor scheduler,
                                 config::salad_config cfg) {
  name_this_thread("salad");
  self->send(self, scale_atom::value);
  return {
      [self, scheduler, cfg](scale_atom) {
        try {
          cycle(self, scheduler, cfg);
        } catch (const std::exception& e) {
          spdlog::error("salad autoscaler: cycle failed: {}", e.what());
        }
        self->delayed_send(self, std::chrono::seconds(cfg.interval_seconds), scale_atom::value);
      },
  };
}

}  // namespace

salad_actor spawn_salad(caf::actor_system& sys, scheduler_actor scheduler, config::salad_config cfg) {
  return sys.spawn<caf::detached>(salad, std::move(scheduler), std::move(cfg));
}

}  // namespace baton::actors
