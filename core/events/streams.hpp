#pragma once
// The scheduler's own stream: its decisions that concern no single job or worker (priority
// recalculations, planning cycles, preemption decisions) are appended here. Re-derivation
// finds the plans through it (replay/audit/rederive.cpp).
namespace baton::core {

inline const char* scheduler_stream = "scheduler";

}  // namespace baton::core
