#pragma once
// RocksDB's own diagnostics (warnings and errors) go to batond's log instead of a LOG file
// in the data directory: on a full disk a failed write to that file leaves RocksDB's logger
// in an error state, and Debian's build (assertions on) aborts the process at its next line.
#include <memory>

namespace rocksdb {
class Logger;
}

namespace baton::events {

std::shared_ptr<rocksdb::Logger> make_rocksdb_logger();

}  // namespace baton::events
