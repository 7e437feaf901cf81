#include "replay/prepared_event.hpp"

#include <iterator>
#include <utility>

#include "core/scheduling.hpp"
#include "replay/job_payload_cbor.hpp"

namespace baton::replay {

assignment_inputs assignment_inputs_of(const nlohmann::json& recorded) {
  assignment_inputs in;
  for (const auto& id : recorded.value("stale_excluded", nlohmann::json::array())) in.stale.insert(id.get<std::string>());
  in.rule = core::deadline_rule_of(recorded);
  return in;
}

bool prepare_job_event(events::decoded_event& e, std::string_view cbor, bool decision_inputs) {
  if (e.stream_id.rfind("job/", 0) != 0) return false;
  try {
    auto& p = e.prepared.emplace<prepared_job_event>();  // (made in place, and read in place: it is large)
    if (!read_job_payload(e.type, cbor, p.read)) {
      e.prepared.reset();
      return false;
    }
    if (auto& at = p.read.decision_at) {  // (left as bytes, its inputs read: as assignment_inputs_of reads them)
      if (decision_inputs) {
        auto& in = p.decision_inputs.emplace();
        in.stale.insert(std::make_move_iterator(at->stale_excluded.begin()),  // (read nowhere after this)
                        std::make_move_iterator(at->stale_excluded.end()));
        if (at->deadline) in.rule = core::deadline_rule_from_json(*at->deadline);
      }
    } else if (decision_inputs && p.read.change.kind == core::job_event::assigned) {
      p.decision_inputs = assignment_inputs_of(p.read.decision);
    }
    p.job_id_hash = core::job_table::hash_of(prepared_job_id(e));  // (here, not on the applying thread)
    events::prepared_memory(e, p);
    return true;
  } catch (const std::exception&) {
    e.prepared.reset();  // the applying thread reads it again and meets the error in order
    return false;
  }
}

std::string_view recorded_decision_bytes(const events::decoded_event& e, const prepared_job_event& p) {
  if (!p.read.decision_at) return {};
  return std::string_view(e.cbor).substr(p.read.decision_at->offset, p.read.decision_at->size);
}

prepared_job_event* prepared_job(events::decoded_event& e) { return std::any_cast<prepared_job_event>(&e.prepared); }
const prepared_job_event* prepared_job(const events::decoded_event& e) {
  return std::any_cast<prepared_job_event>(&e.prepared);
}

void apply_decoded(core::world& w, events::decoded_event& e) {
  if (auto* p = prepared_job(e))
    core::apply_job_change(w, prepared_job_id(e), p->job_id_hash, std::move(p->read.change), e.recorded_at_us);
  else
    core::apply(w, e.stream_id, e.type, e.payload, e.recorded_at_us);
}

}  // namespace baton::replay
