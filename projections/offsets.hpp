#pragma once
// A projection's offset: the last sequence it applied, kept in the store's
// projection_offsets family under its name.
//
// Written at a clean stop only, by the daemon once the log writer has stopped: while the
// writer runs, the store's write side is its alone (event_store.hpp), and writing it per
// batch would cost a synced write each time for a value nothing reads yet. In-memory
// projections ignore it and rebuild from sequence 1 at every start; a persistent one
// resumes after it. After a crash it can lag that projection's own state, so a persistent
// projection must apply events idempotently or keep its own offset with its state.
#include "events/event_store.hpp"
#include "projections/projection.hpp"

namespace baton::projections {

void record_offset(events::event_store& store, const projection& p);

}  // namespace baton::projections
