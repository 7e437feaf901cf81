#include "replay/audit/store_log_reader.hpp"

#include "replay/audit/audit_export.hpp"

namespace baton::replay {
namespace {

class store_reader final : public events::log_reader {
 public:
  explicit store_reader(std::shared_ptr<const events::event_store> store) : store_(std::move(store)) {}
  uint64_t last_seq() const override { return store_->last_seq(); }
  events::log_memory memory() const override { return store_->memory(); }
  export_result export_events(const events::event_filter& f, events::export_format format, std::ostream& out) const override {
    export_result r;
    try {
      r.summary = export_log(*store_, f, format, out);
    } catch (const events::store_error& bad) {
      r.damaged = bad.what();
    }
    return r;
  }

 private:
  std::shared_ptr<const events::event_store> store_;
};

}  // namespace

std::shared_ptr<const events::log_reader> store_log_reader(std::shared_ptr<const events::event_store> store) {
  return std::make_shared<store_reader>(std::move(store));
}

}  // namespace baton::replay
