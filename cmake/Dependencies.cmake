# Find lines verified on Debian 12.
find_package(Threads REQUIRED)

# CAF 0.17.6: Debian ships no CMake config and no pkg-config file.
find_path(CAF_INCLUDE_DIR caf/all.hpp REQUIRED)
find_library(CAF_CORE_LIBRARY NAMES caf_core REQUIRED)
file(STRINGS "${CAF_INCLUDE_DIR}/caf/config.hpp" _caf_ver REGEX "^#define CAF_VERSION [0-9]+")
string(REGEX REPLACE ".* ([0-9]+)$" "\\1" CAF_VERSION_NUM "${_caf_ver}")
if(CAF_VERSION_NUM LESS 1706 OR CAF_VERSION_NUM GREATER_EQUAL 1800)
  message(FATAL_ERROR "expected CAF 0.17.x (>=0.17.6), found ${CAF_VERSION_NUM}")
endif()
add_library(CAF::core SHARED IMPORTED)
set_target_properties(CAF::core PROPERTIES
  IMPORTED_LOCATION "${CAF_CORE_LIBRARY}"
  INTERFACE_INCLUDE_DIRECTORIES "${CAF_INCLUDE_DIR}"
  INTERFACE_LINK_LIBRARIES Threads::Threads)

# RocksDB: RocksDB::rocksdb is the static archive; link the shared library.
find_package(RocksDB 7.8 CONFIG REQUIRED)

# cpp-httplib: the pkg-config defines change class layouts, so take them.
find_package(PkgConfig REQUIRED)
pkg_check_modules(HTTPLIB REQUIRED IMPORTED_TARGET cpp-httplib>=0.11)
# libpqxx 6.4 (Debian 12) for the PostgreSQL view.
pkg_check_modules(PQXX REQUIRED IMPORTED_TARGET GLOBAL libpqxx>=6.4)

# Boost.Beast + Asio (header-only) serve batond's HTTP.
find_package(Boost 1.74 REQUIRED)

find_package(fmt 9 CONFIG REQUIRED)
find_package(spdlog 1.10 CONFIG REQUIRED)
find_package(nlohmann_json 3.11 CONFIG REQUIRED)
find_package(yaml-cpp 0.7 CONFIG REQUIRED)
find_package(CLI11 2.1 CONFIG REQUIRED)
find_package(OpenSSL REQUIRED)
find_package(LibArchive 3.6 REQUIRED)  # the worker unpacks archive bundles with it
find_path(MUSTACHE_INCLUDE_DIR kainjow/mustache.hpp REQUIRED)
add_library(kainjow::mustache INTERFACE IMPORTED)
set_target_properties(kainjow::mustache PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${MUSTACHE_INCLUDE_DIR}")

# jemalloc for batond (a poll's reply is made on the scheduler's thread and freed on the I/O
# thread, which glibc's per-thread arenas make dear) and for the tools that build and free
# millions of small nodes (baton-replay and the benches that time its code): both ran faster
# than on glibc's malloc (docs/benchmarks.md). Not under a sanitizer, which brings an allocator
# of its own.
if(NOT BATON_SANITIZE AND NOT BATON_FUZZ)
  pkg_check_modules(JEMALLOC REQUIRED IMPORTED_TARGET GLOBAL jemalloc>=5)
endif()
# With its options (core/util/jemalloc_options.cpp: transparent huge pages), unless
# NO_HUGE_PAGES: batond's resident memory grew by half with them (docs/benchmarks.md, soak).
function(baton_link_jemalloc target)
  if(TARGET PkgConfig::JEMALLOC)
    target_link_libraries(${target} PRIVATE PkgConfig::JEMALLOC)
    if(NOT "NO_HUGE_PAGES" IN_LIST ARGN)
      target_sources(${target} PRIVATE ${PROJECT_SOURCE_DIR}/core/util/jemalloc_options.cpp)
    endif()
  endif()
endfunction()

if(BATON_BUILD_TESTS)
  find_package(GTest 1.12 CONFIG REQUIRED)
endif()
