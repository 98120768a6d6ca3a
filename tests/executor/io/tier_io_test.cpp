#include "executor/io/tier_io.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <random>
#include <thread>

#include "core/error.hpp"
#include "core/units.hpp"
#include "executor/io/tier_layout.hpp"
#include "executor/io/tier_set.hpp"
#include "temp_dir.hpp"
#include "tests/support/error_of.hpp"
#include "tests/support/locked_memory.hpp"

namespace mlpo::io {
namespace {

using mlpo::testing::error_of;
using mlpo::testing::locked_kib;
using testing::TempDir;

void fill_random(std::byte* data, std::size_t size, unsigned seed) {
  std::mt19937_64 rng(seed);
  for (std::size_t i = 0; i < size; ++i) data[i] = static_cast<std::byte>(rng());
}

int count_entries(const char* dir) {
  int n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir)) ++n;
  return n;
}

struct Collected {
  std::vector<std::string> lines;
  Diagnostics sink() {
    return Diagnostics([this](const Diagnostic& d) { lines.push_back(d.text); });
  }
};

// One tier of every kind: host on tmpfs, nvme (O_DIRECT) and other (O_DIRECT) on the local
// disk, remote as buffered I/O on the local disk (no network file system on a test machine).
std::vector<Tier> every_kind(const TempDir& disk, const TempDir& shm) {
  std::vector<Tier> tiers;
  tiers.push_back({"host", shm.sub("host"), 64 * KiB, 4, true, false});
  tiers.push_back({"nvme", disk.sub("nvme"), 64 * KiB, 4, true, false});
  tiers.push_back({"remote", disk.sub("remote"), 128 * KiB, 2, false, false});
  tiers.push_back({"other", disk.sub("other"), 1 * MiB, 8, true, true});
  return tiers;
}

TEST(TierIo, RoundTripsRandomDataThroughEveryTierKindIncludingUnalignedLengths) {
  TempDir disk("/var/tmp"), shm("/dev/shm");
  PinnedBufferPool pool(32 * MiB);
  Collected warnings;
  TierSet tiers(every_kind(disk, shm), {&pool, warnings.sink()});
  const std::uint64_t lengths[] = {1, 4095, 4096, 4097, 3 * MiB + 123};
  for (std::size_t t = 0; t < tiers.size(); ++t) {
    TierIo& tio = tiers[t];
    TierFile& file = tio.open_file(state_file_name("run", 0), 8 * MiB);
    std::uint64_t offset = 0;
    unsigned seed = 1;
    for (std::uint64_t len : lengths) {
      PinnedBuffer out = pool.acquire(len), in = pool.acquire(len);
      fill_random(out.data(), len, seed);
      std::memset(in.data(), 0, in.size());
      tio.write(file, offset, len, out.data()).wait();
      tio.read(file, offset, len, in.data()).wait();
      ASSERT_EQ(std::memcmp(out.data(), in.data(), len), 0)
          << "tier " << tio.tier().name << " length " << len << " offset " << offset;
      offset += round_up(len, kIoAlign);  // extents at 4 KiB boundaries
      ++seed;
    }
    // The earlier extents are intact after later writes (tail padding stays inside its extent).
    offset = 0;
    seed = 1;
    for (std::uint64_t len : lengths) {
      PinnedBuffer expect = pool.acquire(len), in = pool.acquire(len);
      fill_random(expect.data(), len, seed++);
      tio.read(file, offset, len, in.data()).wait();
      ASSERT_EQ(std::memcmp(expect.data(), in.data(), len), 0)
          << "tier " << tio.tier().name << " reread " << len;
      offset += round_up(len, kIoAlign);
    }
    const TierCounterSnapshot c = tio.counter_snapshot();
    EXPECT_EQ(c.writes, 5u);
    EXPECT_EQ(c.reads, 10u);
    EXPECT_EQ(c.errors, 0u);
    EXPECT_GE(c.bytes_written, 3 * MiB + 123 + 4097 + 4096 + 4095 + 1);
    EXPECT_GT(c.busy_s, 0.0);
  }
  EXPECT_TRUE(tiers.at("nvme").fixed_buffers());
}

TEST(TierIo, LocalDiskTierReallyUsesODirect) {
  TempDir disk("/var/tmp");
  TierIo tio({"nvme", disk.path()}, nullptr, {});
  TierFile& file = tio.open_file("f.bin", 1 * MiB);
  ASSERT_TRUE(file.direct());
  EXPECT_NE(::fcntl(file.fd(), F_GETFL) & O_DIRECT, 0);
}

TEST(TierIo, FallsBackToBufferedIoOnDevShmWithOneWarningNamingTheTier) {
  TempDir shm("/dev/shm");
  Collected warnings;
  TierSet tiers({{"shm", shm.path(), 1 * MiB, 8, /*direct_io=*/true}}, {nullptr, warnings.sink()});
  TierFile& a = tiers[0].open_file("a.bin", 1 * MiB);
  TierFile& b = tiers[0].open_file("b.bin", 1 * MiB);
  EXPECT_FALSE(a.direct());
  EXPECT_FALSE(b.direct());
  EXPECT_EQ(::fcntl(a.fd(), F_GETFL) & O_DIRECT, 0);
  ASSERT_EQ(warnings.lines.size(), 1u) << "one warning per tier, not per file";
  EXPECT_NE(warnings.lines[0].find("tier 'shm'"), std::string::npos) << warnings.lines[0];
  EXPECT_NE(warnings.lines[0].find("buffered"), std::string::npos) << warnings.lines[0];

  // Buffered I/O takes unaligned offsets and ordinary memory.
  std::vector<std::byte> out(10007), in(10007);
  fill_random(out.data(), out.size(), 3);
  tiers[0].write(a, 13, out.size(), out.data()).wait();
  tiers[0].read(a, 13, in.size(), in.data()).wait();
  EXPECT_EQ(out, in);
}

TEST(TierIo, DirectIoRejectsUnalignedOffsetsAndBuffers) {
  TempDir disk("/var/tmp");
  PinnedBufferPool pool(1 * MiB);
  TierIo tio({"nvme", disk.path()}, &pool, {});
  TierFile& file = tio.open_file("f.bin", 1 * MiB);
  PinnedBuffer buf = pool.acquire(64 * KiB);
  EXPECT_NE(error_of([&] { tio.write(file, 100, 4096, buf.data()); }).find("4 KiB-aligned"),
            std::string::npos);
  EXPECT_NE(error_of([&] { tio.write(file, 0, 4096, buf.data() + 8); }).find("tier 'nvme'"),
            std::string::npos);
}

TEST(TierIo, ReadPastTheEndOfATruncatedFileIsAnErrorNotZeros) {
  TempDir disk("/var/tmp"), shm("/dev/shm");
  PinnedBufferPool pool(4 * MiB);
  for (const TempDir* dir : {&disk, &shm}) {
    TierIo tio({"t", dir->path(), 256 * KiB, 4}, &pool, {});
    TierFile& file = tio.open_file("state.bin");
    PinnedBuffer buf = pool.acquire(1 * MiB);
    fill_random(buf.data(), 1 * MiB, 9);
    tio.write(file, 0, 1 * MiB, buf.data()).wait();
    ASSERT_EQ(::truncate(file.path().c_str(), 300 * KiB), 0);
    const std::string msg = error_of([&] { tio.read(file, 0, 1 * MiB, buf.data()).wait(); });
    EXPECT_NE(msg.find("truncated"), std::string::npos) << msg;
    EXPECT_NE(msg.find("tier 't'"), std::string::npos) << msg;
    EXPECT_NE(msg.find(file.path().string()), std::string::npos) << msg;
    EXPECT_EQ(tio.counter_snapshot().errors, 1u);
    // The part before the cut is still readable.
    tio.read(file, 0, 256 * KiB, buf.data()).wait();
  }
}

// What the CRC tests run on: a direct-I/O nvme tier in /var/tmp with the engine's CRCs on, 4 MiB
// of pinned buffers, and a 2 MiB file on it.
struct CheckedTier {
  TempDir disk{"/var/tmp"};
  PinnedBufferPool pool{4 * MiB};
  TierIo tio{Tier{"nvme", disk.path(), 256 * KiB, 4, true, /*crc=*/true}, &pool, {}};
  TierFile& file = tio.open_file("state.bin", 2 * MiB);
};

TEST(TierIo, CorruptedByteIsReportedAsCrcMismatch) {
  CheckedTier t;
  PinnedBufferPool& pool = t.pool;
  TierIo& tio = t.tio;
  TierFile& file = t.file;
  PinnedBuffer buf = pool.acquire(1 * MiB + 5);
  fill_random(buf.data(), buf.size(), 11);
  tio.write(file, 0, 1 * MiB + 5, buf.data()).wait();
  tio.read(file, 0, 1 * MiB + 5, buf.data()).wait();  // intact: verifies fine

  {  // flip one byte behind the engine's back
    const int fd = ::open(file.path().c_str(), O_RDWR);
    ASSERT_GE(fd, 0);
    unsigned char byte;
    ASSERT_EQ(::pread(fd, &byte, 1, 777777), 1);
    byte ^= 0x01;
    ASSERT_EQ(::pwrite(fd, &byte, 1, 777777), 1);
    ::close(fd);
  }
  const std::string msg = error_of([&] { tio.read(file, 0, 1 * MiB + 5, buf.data()).wait(); });
  EXPECT_NE(msg.find("CRC32C mismatch"), std::string::npos) << msg;
  EXPECT_NE(msg.find("offset 0"), std::string::npos) << msg;
  EXPECT_NE(msg.find("tier 'nvme'"), std::string::npos) << msg;
  EXPECT_EQ(tio.counter_snapshot().crc_errors, 1u);
}

// CrcBy::caller: the engine neither records nor verifies; a caller write drops the extent's
// old record, so a later engine read of new bytes is not a false mismatch.
TEST(TierIo, CallerCheckedRequestsSkipTheEngineCrc) {
  CheckedTier t;
  PinnedBufferPool& pool = t.pool;
  TierIo& tio = t.tio;
  TierFile& file = t.file;
  PinnedBuffer buf = pool.acquire(1 * MiB);
  fill_random(buf.data(), buf.size(), 12);
  tio.write(file, 0, 1 * MiB, buf.data()).wait();
  EXPECT_TRUE(file.recorded_crc(0).has_value());
  fill_random(buf.data(), buf.size(), 13);
  tio.write(file, 0, 1 * MiB, buf.data(), {}, CrcBy::caller).wait();
  EXPECT_FALSE(file.recorded_crc(0).has_value()) << "the old record would fail the next engine read";
  tio.read(file, 0, 1 * MiB, buf.data()).wait();  // no record: not checked, no false mismatch
  tio.read(file, 0, 1 * MiB, buf.data(), {}, CrcBy::caller).wait();
  EXPECT_FALSE(file.recorded_crc(0).has_value());
  EXPECT_EQ(tio.counter_snapshot().crc_errors, 0u);
}

TEST(TierIo, MissingTierPathIsAClearError) {
  TempDir disk("/var/tmp");
  TierIo tio({"nvme", disk.path() / "no-such-dir"}, nullptr, {});
  const std::string msg = error_of([&] { tio.open_file("state.bin", 1 * MiB); });
  EXPECT_NE(msg.find("tier 'nvme'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("No such file or directory"), std::string::npos) << msg;
  EXPECT_NE(msg.find("create it or fix the tier path"), std::string::npos) << msg;
  EXPECT_FALSE(std::filesystem::exists(disk.path() / "no-such-dir"))
      << "a missing tier path must not be created";
}

TEST(TierIo, TierPathBelowARegularFileIsAClearError) {
  TempDir disk("/var/tmp");
  std::ofstream(disk.path() / "plain-file") << "x";
  TierIo tio({"nvme", disk.path() / "plain-file" / "tier"}, nullptr, {});
  const std::string msg = error_of([&] { tio.open_file("state.bin", 1 * MiB); });
  EXPECT_NE(msg.find("tier 'nvme'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("Not a directory"), std::string::npos) << msg;
}

// Root ignores permission bits, so the unwritable directory is made immutable (chattr +i),
// which stops root too. Needs CAP_LINUX_IMMUTABLE and a file system with inode flags.
TEST(TierIo, UnwritableTierDirectoryIsAClearError) {
  TempDir disk("/var/tmp");
  const std::filesystem::path dir = disk.sub("locked");
  bool immutable = false;
  {
    const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
    ASSERT_GE(fd, 0);
    int flags = 0;
    if (::ioctl(fd, FS_IOC_GETFLAGS, &flags) == 0) {
      flags |= FS_IMMUTABLE_FL;
      immutable = ::ioctl(fd, FS_IOC_SETFLAGS, &flags) == 0;
    }
    ::close(fd);
  }
  if (!immutable) {
    if (::geteuid() == 0) GTEST_SKIP() << "cannot make a directory unwritable for root here (no chattr +i)";
    std::filesystem::permissions(dir,
                                 std::filesystem::perms::owner_read | std::filesystem::perms::owner_exec);
  }
  TierIo tio({"nvme", dir}, nullptr, {});
  const std::string msg = error_of([&] { tio.open_file(state_file_name("run", 0), 1 * MiB); });
  // Undo before asserting so the temp dir can always be removed.
  {
    const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
    int flags = 0;
    if (fd >= 0 && ::ioctl(fd, FS_IOC_GETFLAGS, &flags) == 0) {
      flags &= ~FS_IMMUTABLE_FL;
      ::ioctl(fd, FS_IOC_SETFLAGS, &flags);
    }
    if (fd >= 0) ::close(fd);
    std::filesystem::permissions(dir, std::filesystem::perms::owner_all);
  }
  EXPECT_NE(msg.find("tier 'nvme'"), std::string::npos) << msg;
  EXPECT_TRUE(msg.find("Operation not permitted") != std::string::npos ||
              msg.find("Permission denied") != std::string::npos)
      << msg;
  EXPECT_NE(msg.find("writable"), std::string::npos) << msg;
}

TEST(TierIo, CompletionCallbackRunsBeforeWaitReturns) {
  TempDir shm("/dev/shm");
  TierIo tio({"shm", shm.path(), 4 * KiB, 2, false}, nullptr, {});
  TierFile& file = tio.open_file("f.bin", 64 * KiB);
  std::vector<std::byte> buf(64 * KiB);
  IoResult seen;
  bool called = false;
  tio.write(file, 0, buf.size(), buf.data(),
            [&](const IoResult& r) {
              seen = r;
              called = true;
            })
      .wait();
  EXPECT_TRUE(called);
  EXPECT_EQ(seen.op, IoOp::write);
  EXPECT_EQ(seen.length, buf.size());
  EXPECT_TRUE(seen.error.empty());
}

TEST(TierIo, TwoTiersStreamConcurrentlyFromSeveralThreads) {
  TempDir disk("/var/tmp"), shm("/dev/shm");
  PinnedBufferPool pool(64 * MiB);
  TierSet tiers({{"disk", disk.path(), 256 * KiB, 8}, {"shm", shm.path(), 256 * KiB, 8}},
                {&pool, Diagnostics{}});
  constexpr std::uint64_t kExtent = 2 * MiB;
  constexpr int kExtents = 8;
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < tiers.size(); ++t) {
    threads.emplace_back([&, t] {
      TierIo& tio = tiers[t];
      TierFile& file = tio.open_file("stream.bin", kExtent * kExtents);
      std::vector<PinnedBuffer> bufs;
      RequestGroup writes;
      for (int e = 0; e < kExtents; ++e) {
        bufs.push_back(pool.acquire(kExtent));
        fill_random(bufs.back().data(), kExtent, static_cast<unsigned>(100 * t + e));
        writes.add(tio.write(file, e * kExtent, kExtent, bufs.back().data()));
      }
      writes.wait();
      RequestGroup reads;
      for (int e = 0; e < kExtents; ++e) {
        std::memset(bufs[e].data(), 0, kExtent);
        reads.add(tio.read(file, e * kExtent, kExtent, bufs[e].data()));
      }
      reads.wait();
      std::vector<std::byte> expect(kExtent);
      for (int e = 0; e < kExtents; ++e) {
        fill_random(expect.data(), kExtent, static_cast<unsigned>(100 * t + e));
        EXPECT_EQ(std::memcmp(expect.data(), bufs[e].data(), kExtent), 0) << "tier " << t << " extent " << e;
      }
    });
  }
  for (auto& th : threads) th.join();
  for (std::size_t t = 0; t < tiers.size(); ++t) {
    EXPECT_EQ(tiers[t].counter_snapshot().bytes_read, kExtent * kExtents);
    EXPECT_EQ(tiers[t].counter_snapshot().bytes_written, kExtent * kExtents);
  }
}

TEST(TierIo, ReleasesFileDescriptorsRingsThreadsAndPinnedMemory) {
  const int fds_before = count_entries("/proc/self/fd");
  const int threads_before = count_entries("/proc/self/task");
  const long locked_before = locked_kib();
  {
    TempDir disk("/var/tmp"), shm("/dev/shm");
    PinnedBufferPool pool(16 * MiB);
    TierSet tiers({{"disk", disk.path()}, {"shm", shm.path()}}, {&pool, Diagnostics{}});
    EXPECT_GE(count_entries("/proc/self/fd"), fds_before + 4) << "two rings + two eventfds";
    EXPECT_EQ(count_entries("/proc/self/task"), threads_before + 2) << "one I/O thread per tier";
    PinnedBuffer buf = pool.acquire(4 * MiB);
    for (std::size_t t = 0; t < tiers.size(); ++t) {
      TierFile& f = tiers[t].open_file(state_file_name("leak", 0), 4 * MiB);
      tiers[t].write(f, 0, 4 * MiB, buf.data()).wait();
      tiers[t].read(f, 0, 4 * MiB, buf.data()).wait();
    }
  }
  EXPECT_EQ(count_entries("/proc/self/fd"), fds_before);
  EXPECT_EQ(count_entries("/proc/self/task"), threads_before);
  EXPECT_EQ(locked_kib(), locked_before);
}

}  // namespace
}  // namespace mlpo::io
