#include "projections/offsets.hpp"

namespace baton::projections {

void record_offset(events::event_store& store, const projection& p) { store.set_projection_offset(p.name(), p.applied_seq()); }

}  // namespace baton::projections
