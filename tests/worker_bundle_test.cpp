// The worker's archive extraction (worker/bundle_archive) against hostile and broken bundles:
// each is refused with invalid_bundle naming the member or the cap, and nothing is written
// outside the job's directory. Archives are written with libarchive here, byte for byte as an
// attacker would craft them, and the sparse one with GNU tar, as a user would make it.
#include <archive.h>
#include <archive_entry.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "support/temp_dir.hpp"
#include "worker/bundle.hpp"
#include "worker/bundle_archive.hpp"

namespace fs = std::filesystem;
using namespace baton;

namespace {

struct member {
  std::string name;
  unsigned type = AE_IFREG;
  std::string data;  // a regular file's content
  std::string link;  // a symlink's target, or a hardlink's (with hard)
  bool hard = false;
  uint64_t zeros = 0;  // a regular file of this many zero bytes instead of data
  unsigned perm = 0644;
};

void write_tar(const fs::path& path, const std::vector<member>& members, bool gzip = false) {
  archive* a = archive_write_new();
  archive_write_set_format_pax_restricted(a);
  if (gzip) archive_write_add_filter_gzip(a);
  ASSERT_EQ(archive_write_open_filename(a, path.c_str()), ARCHIVE_OK) << archive_error_string(a);
  const std::string chunk(1 << 20, '\0');
  for (const auto& m : members) {
    archive_entry* e = archive_entry_new();
    archive_entry_set_pathname(e, m.name.c_str());
    archive_entry_set_filetype(e, m.type);
    archive_entry_set_perm(e, m.perm);
    if (m.hard) archive_entry_set_hardlink(e, m.link.c_str());
    if (m.type == AE_IFLNK) archive_entry_set_symlink(e, m.link.c_str());
    archive_entry_set_size(e, m.type == AE_IFREG && !m.hard ? static_cast<int64_t>(m.zeros ? m.zeros : m.data.size()) : 0);
    ASSERT_EQ(archive_write_header(a, e), ARCHIVE_OK) << m.name << ": " << archive_error_string(a);
    if (m.zeros)
      for (uint64_t left = m.zeros; left > 0; left -= std::min<uint64_t>(left, chunk.size()))
        archive_write_data(a, chunk.data(), std::min<uint64_t>(left, chunk.size()));
    else if (!m.data.empty())
      archive_write_data(a, m.data.data(), m.data.size());
    archive_entry_free(e);
  }
  ASSERT_EQ(archive_write_close(a), ARCHIVE_OK);
  archive_write_free(a);
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  return {std::istreambuf_iterator<char>(in), {}};
}

// Every path below root, relative, with what it is.
std::set<std::string> tree(const fs::path& root) {
  std::set<std::string> out;
  for (auto it = fs::recursive_directory_iterator(root); it != fs::recursive_directory_iterator(); ++it)
    out.insert(fs::relative(it->path(), root).string() + (it->is_symlink() ? "@" : it->is_directory() ? "/" : ""));
  return out;
}

uint64_t bytes_on_disk(const fs::path& root) {
  uint64_t sum = 0;
  if (!fs::exists(root)) return 0;
  for (auto& e : fs::recursive_directory_iterator(root))
    if (e.is_regular_file()) sum += e.file_size();
  return sum;
}

class bundle_archive : public ::testing::Test {
 protected:
  test::temp_dir tmp;
  fs::path sandbox = fs::path(tmp.path()) / "sandbox";  // the archive, the job's dir and a neighbour
  fs::path job = sandbox / "work" / "job-attempt-1";
  fs::path outside = sandbox / "outside";
  fs::path tar = sandbox / "bundle.tar";
  std::set<std::string> before;

  void SetUp() override {
    fs::create_directories(outside);
    fs::create_directories(job.parent_path());
    std::ofstream(outside / "secret") << "keep";
  }

  // Extracts, expects a refusal whose message holds `says`, and checks that nothing outside
  // the job's dir changed.
  void expect_refused(const std::string& says, const worker::bundle_limits& limits = {}) {
    before = tree(sandbox);
    try {
      worker::extract_bundle_archive(tar.string(), job.string(), limits);
      ADD_FAILURE() << "accepted; expected a refusal saying: " << says;
    } catch (const worker::invalid_bundle& e) {
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
      std::cout << "[ info ] refused: " << e.what() << "\n";
    }
    auto after = tree(sandbox);
    for (auto& p : after)
      if (!before.count(p) && p.rfind("work/job-attempt-1", 0) != 0) ADD_FAILURE() << "written outside the job's dir: " << p;
    EXPECT_EQ(slurp(outside / "secret"), "keep");
    EXPECT_EQ(tree(outside), (std::set<std::string>{"secret"}));
  }
};

TEST_F(bundle_archive, AGoodBundleUnpacksWithItsDirectoriesAndExecutableBits) {
  write_tar(tar,
            {{"./", AE_IFDIR, "", "", false, 0, 0755},
             {"./baton-job.json", AE_IFREG, R"({"command":"sh run.sh"})"},
             {"./run.sh", AE_IFREG, "echo hi\n", "", false, 0, 0755},
             {"./in/", AE_IFDIR, "", "", false, 0, 0500},
             {"./in/topology.psf", AE_IFREG, "PSF\n", "", false, 0, 0400}},
            /*gzip=*/true);
  fs::rename(tar, sandbox / "bundle.tgz");
  worker::extract_bundle_archive((sandbox / "bundle.tgz").string(), job.string(), {});
  EXPECT_EQ(tree(job), (std::set<std::string>{"baton-job.json", "run.sh", "in/", "in/topology.psf"}));
  EXPECT_EQ(slurp(job / "in/topology.psf"), "PSF\n");
  auto perms = fs::status(job / "run.sh").permissions();
  EXPECT_NE(perms & fs::perms::owner_exec, fs::perms::none) << "the executable bit is kept";
  EXPECT_NE(fs::status(job / "in").permissions() & fs::perms::owner_write, fs::perms::none)
      << "the worker can always clean up what it unpacked";
  EXPECT_NE(fs::status(job / "in/topology.psf").permissions() & fs::perms::owner_write, fs::perms::none);
}

TEST_F(bundle_archive, AJobDirReachedThroughASymlinkWorks) {
  // HPC scratch is often a link (/scratch -> /lustre/...): the link above the job's dir is the
  // site's, not the archive's.
  fs::create_directories(sandbox / "real-scratch");
  fs::create_directory_symlink(sandbox / "real-scratch", sandbox / "scratch");
  write_tar(tar, {{"baton-job.json", AE_IFREG, "{}"}, {"sub/a", AE_IFREG, "a"}});
  worker::extract_bundle_archive(tar.string(), (sandbox / "scratch/job").string(), {});
  EXPECT_EQ(slurp(sandbox / "real-scratch/job/sub/a"), "a");
}

TEST_F(bundle_archive, AnAbsolutePathIsRefused) {
  write_tar(tar, {{"baton-job.json", AE_IFREG, "{}"}, {(outside / "planted").string(), AE_IFREG, "x"}});
  expect_refused("'" + (outside / "planted").string() + "' has an absolute path");
}

TEST_F(bundle_archive, ADotDotComponentIsRefused) {
  write_tar(tar, {{"baton-job.json", AE_IFREG, "{}"}, {"../../outside/planted", AE_IFREG, "x"}});
  expect_refused("'../../outside/planted' has a '..' component");
  fs::remove_all(job);
  write_tar(tar, {{"a/b/../../../../outside/secret", AE_IFREG, "overwritten"}});
  expect_refused("has a '..' component");
}

TEST_F(bundle_archive, ASymlinkEscapeIsRefused) {
  // The classic: a link to a directory outside, then a file written through it.
  write_tar(tar,
            {{"baton-job.json", AE_IFREG, "{}"}, {"escape", AE_IFLNK, "", outside.string()}, {"escape/planted", AE_IFREG, "x"}});
  expect_refused("'escape' is a symlink (-> " + outside.string() + ")");
  fs::remove_all(job);
  write_tar(tar, {{"rel", AE_IFLNK, "", "../../outside"}, {"rel/secret", AE_IFREG, "overwritten"}});
  expect_refused("'rel' is a symlink");
}

TEST_F(bundle_archive, AHardLinkEscapeIsRefused) {
  // A hard link to a file outside, then content written into the link: it would land in the
  // outside file.
  write_tar(tar, {{"baton-job.json", AE_IFREG, "{}"},
                  {"h", AE_IFREG, "", (outside / "secret").string(), true},
                  {"h", AE_IFREG, "overwritten"}});
  expect_refused("'h' is a hardlink (to '" + (outside / "secret").string() + "')");
  fs::remove_all(job);
  write_tar(tar, {{"h2", AE_IFREG, "", "../../outside/secret", true}});
  expect_refused("'h2' is a hardlink");
}

TEST_F(bundle_archive, DevicesAndFifosAreRefused) {
  write_tar(tar, {{"baton-job.json", AE_IFREG, "{}"}, {"pipe", AE_IFIFO}});
  expect_refused("'pipe' is a fifo");
  fs::remove_all(job);
  write_tar(tar, {{"null", AE_IFCHR}});
  expect_refused("'null' is a device file");
}

TEST_F(bundle_archive, ATenGigabyteSparseFileIsRefusedBeforeAByteOfItIsWritten) {
  // What a user gets from `tar -S` on a file with a 10 GB hole: a tiny archive.
  fs::create_directories(sandbox / "src");
  std::ofstream(sandbox / "src/baton-job.json") << "{}";
  fs::resize_file((std::ofstream(sandbox / "src/big.dcd"), sandbox / "src/big.dcd"), uint64_t{10} << 30);
  auto cmd = "tar -cSf " + tar.string() + " -C " + (sandbox / "src").string() + " baton-job.json big.dcd";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  fs::remove_all(sandbox / "src");
  ASSERT_LT(fs::file_size(tar), 1u << 20) << "the archive itself is small";
  expect_refused("unpacks to more than 8 GiB (member 'big.dcd' is 10 GiB)");
  EXPECT_LT(bytes_on_disk(job), 1024u);
}

TEST_F(bundle_archive, ADecompressionBombIsRefusedAtTheCap) {
  write_tar(tar, {{"baton-job.json", AE_IFREG, "{}"}, {"zeros", AE_IFREG, "", "", false, uint64_t{256} << 20}},
            /*gzip=*/true);
  ASSERT_LT(fs::file_size(tar), 2u << 20) << "256 MiB of zeros compress to almost nothing";
  worker::bundle_limits limits;
  limits.max_bytes = uint64_t{64} << 20;
  expect_refused("unpacks to more than 64 MiB (member 'zeros' is 256 MiB)", limits);
  EXPECT_LT(bytes_on_disk(job), 1024u);
  // The same archive under the default cap unpacks.
  fs::remove_all(job);
  worker::extract_bundle_archive(tar.string(), job.string(), {});
  EXPECT_EQ(fs::file_size(job / "zeros"), uint64_t{256} << 20);
}

TEST_F(bundle_archive, ATarBombOfManyFilesIsRefusedAtTheMemberCap) {
  std::vector<member> many;
  for (int i = 0; i < 1500; ++i) many.push_back({"f" + std::to_string(i), AE_IFREG, "x"});
  write_tar(tar, many);
  worker::bundle_limits limits;
  limits.max_members = 1000;
  expect_refused("has more than 1000 members", limits);
  EXPECT_LE(tree(job).size(), 1000u);
}

TEST_F(bundle_archive, WhatIsNotAnArchiveIsRefusedAndNamed) {
  std::ofstream(tar) << "this is not a tar file, just text that ends in .tar\n";
  expect_refused("cannot read archive " + tar.string());
  fs::remove_all(job);
  write_tar(tar, {});
  expect_refused("is empty");
  fs::remove_all(job);
  // A truncated archive: the header promises more data than there is.
  write_tar(tar, {{"baton-job.json", AE_IFREG, "{}"}, {"data", AE_IFREG, std::string(100000, 'd')}});
  fs::resize_file(tar, 20000);
  expect_refused("'data'");
}

TEST_F(bundle_archive, AnExistingJobDirIsNotReused) {
  fs::create_directories(job);
  write_tar(tar, {{"baton-job.json", AE_IFREG, "{}"}});
  EXPECT_THROW(worker::extract_bundle_archive(tar.string(), job.string(), {}), std::runtime_error);
}

}  // namespace
