#include "events/rocksdb_logger.hpp"

#include <rocksdb/env.h>
#include <spdlog/spdlog.h>

#include <cstdarg>
#include <cstdio>
#include <string>

namespace baton::events {
namespace {

class spdlog_logger : public rocksdb::Logger {
 public:
  spdlog_logger() : rocksdb::Logger(rocksdb::InfoLogLevel::WARN_LEVEL) {}
  using rocksdb::Logger::Logv;
  void Logv(const char* format, va_list ap) override { write(rocksdb::InfoLogLevel::INFO_LEVEL, format, ap); }
  void Logv(const rocksdb::InfoLogLevel level, const char* format, va_list ap) override {
    if (level >= GetInfoLogLevel()) write(level, format, ap);
  }

 private:
  static void write(rocksdb::InfoLogLevel level, const char* format, va_list ap) {
    char buf[1024];
    va_list copy;
    va_copy(copy, ap);
    std::vsnprintf(buf, sizeof buf, format, copy);
    va_end(copy);
    const auto lvl = level >= rocksdb::InfoLogLevel::ERROR_LEVEL  ? spdlog::level::err
                     : level >= rocksdb::InfoLogLevel::WARN_LEVEL ? spdlog::level::warn
                                                                  : spdlog::level::debug;
    spdlog::log(lvl, "rocksdb: {}", buf);
  }
};

}  // namespace

std::shared_ptr<rocksdb::Logger> make_rocksdb_logger() { return std::make_shared<spdlog_logger>(); }

}  // namespace baton::events
