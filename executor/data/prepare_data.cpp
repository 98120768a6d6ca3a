#include "executor/data/prepare_data.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <filesystem>
#include <memory>

#include "core/error.hpp"
#include "core/thread_pool.hpp"
#include "executor/io/unique_fd.hpp"
#include "executor/io/file_mapping.hpp"
#include "executor/io/synced_file.hpp"
#include "executor/data/token_data.hpp"
#include "executor/data/token_file.hpp"
#include "executor/data/tokenizer.hpp"

namespace mlpo::data {

namespace {

namespace fs = std::filesystem;

// A run of whole lines of one mapped input file.
struct Piece {
  std::shared_ptr<const io::FileMapping> file;
  std::size_t begin = 0, end = 0;
  bool file_start = false;
};

// Walks the inputs' pieces in order, mapping one file at a time.
class PieceCursor {
 public:
  PieceCursor(std::vector<std::string> files, std::size_t piece_bytes)
      : files_(std::move(files)), piece_bytes_(piece_bytes) {}

  // The next pieces, up to about `bytes` of text; empty at the end.
  std::vector<Piece> next_batch(std::size_t bytes) {
    std::vector<Piece> batch;
    std::size_t taken = 0;
    while (taken < bytes && advance()) {
      const std::string_view text = current_->text();
      std::size_t end = text.size();
      if (offset_ + piece_bytes_ < text.size()) {
        const std::size_t newline = text.find('\n', offset_ + piece_bytes_ - 1);
        if (newline != std::string_view::npos) end = newline + 1;
      }
      batch.push_back({current_, offset_, end, offset_ == 0});
      taken += end - offset_;
      offset_ = end;
    }
    return batch;
  }

 private:
  // Makes current_ a file with text left at offset_; false when every file is done.
  bool advance() {
    while (!current_ || offset_ >= current_->size()) {
      if (next_file_ == files_.size()) return false;
      current_ = std::make_shared<const io::FileMapping>(files_[next_file_++], "--input",
                                                         io::FileMapping::Access::sequential);
      offset_ = 0;
    }
    return true;
  }

  std::vector<std::string> files_;
  std::size_t piece_bytes_;
  std::size_t next_file_ = 0;
  std::shared_ptr<const io::FileMapping> current_;
  std::size_t offset_ = 0;
};

// The shard being written: a temp file beside `out`, renamed over it by commit(), removed if
// never committed.
class ShardWriter {
 public:
  ShardWriter(const std::string& out, int version, std::int64_t vocab)
      : out_(out), tmp_(out + ".tmp." + std::to_string(::getpid())), version_(version), vocab_(vocab) {
    fd_ = io::UniqueFd(::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    if (!fd_.valid()) fail("cannot create " + tmp_);
    write_at(shard_header(version_, 0, vocab_), 0);
  }
  ~ShardWriter() {
    if (fd_.valid()) ::unlink(tmp_.c_str());
  }
  ShardWriter(const ShardWriter&) = delete;
  ShardWriter& operator=(const ShardWriter&) = delete;

  void append(const std::vector<std::int32_t>& tokens) {
    std::string bytes(tokens.size() * (version_ == 1 ? 2 : 4), '\0');
    for (std::size_t i = 0; i < tokens.size(); ++i) {
      if (version_ == 1) {
        const auto t = static_cast<std::uint16_t>(tokens[i]);
        std::memcpy(bytes.data() + 2 * i, &t, 2);
      } else {
        const auto t = static_cast<std::uint32_t>(tokens[i]);
        std::memcpy(bytes.data() + 4 * i, &t, 4);
      }
    }
    write_at(bytes, end_);
    tokens_ += static_cast<std::int64_t>(tokens.size());
    if (tokens_ > INT32_MAX)
      throw Error(
          "prepare-data: more than 2^31-1 tokens, what one llm.c shard holds; split the inputs into several "
          "--out shards (training reads a directory of them as one data set)");
  }

  std::int64_t tokens() const { return tokens_; }

  void commit() {
    write_at(shard_header(version_, tokens_, vocab_), 0);
    if (::fsync(fd_.get()) != 0) fail("fsync failed");
    fd_.reset();
    if (::rename(tmp_.c_str(), out_.c_str()) != 0) {
      const int err = errno;
      ::unlink(tmp_.c_str());
      errno = err;
      fail("cannot rename the temp file over it");
    }
    io::fsync_directory(fs::absolute(out_).parent_path());
  }

 private:
  void write_at(const std::string& bytes, std::uint64_t offset) {
    std::size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t w =
          ::pwrite(fd_.get(), bytes.data() + done, bytes.size() - done, static_cast<off_t>(offset + done));
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) fail("write failed");
      done += static_cast<std::size_t>(w);
    }
    end_ = std::max<std::uint64_t>(end_, offset + bytes.size());
  }
  [[noreturn]] void fail(const std::string& what) const {
    throw Error("--out " + out_ + ": " + what + " (" + errno_text(errno) +
                "); check the directory exists, is writable "
                "and has space");
  }

  std::string out_, tmp_;
  int version_;
  std::int64_t vocab_;
  io::UniqueFd fd_;
  std::uint64_t end_ = 0;
  std::int64_t tokens_ = 0;
};

std::uint64_t total_bytes(const std::vector<std::string>& files) {
  std::uint64_t total = 0;
  for (const auto& f : files) {
    std::error_code ec;
    total += fs::file_size(f, ec);
  }
  return total;
}

}  // namespace

PrepareDataResult prepare_data(const PrepareDataOptions& o) {
  if (o.inputs.empty()) throw Error("prepare-data: give at least one --input file or directory");
  if (o.out.empty()) throw Error("prepare-data: give --out, the token file to write");
  MLPO_CHECK(o.piece_bytes > 0, "piece_bytes must be > 0");
  const Tokenizer tokenizer = Tokenizer::open(o.tokenizer);
  if (o.model && tokenizer.vocab() > o.model->vocab)
    throw Error("--tokenizer " + o.tokenizer + ": vocabulary of " + std::to_string(tokenizer.vocab()) +
                " tokens is larger than --model " + o.model->name + "'s vocab of " +
                std::to_string(o.model->vocab) + "; use a model with vocab >= " +
                std::to_string(tokenizer.vocab()) + " (a model JSON file) or a smaller tokenizer");
  const std::vector<std::string> files = files_of_inputs(o.inputs, "--input");
  const std::uint64_t total = total_bytes(files);
  if (total == 0) throw Error("prepare-data: the inputs hold no bytes; nothing to tokenize");

  ThreadPool pool(o.threads);
  PieceCursor cursor(files, o.piece_bytes);
  ShardWriter shard(o.out, tokenizer.vocab() <= 65536 ? 1 : 2, tokenizer.vocab());
  const std::optional<std::int32_t> document_start = tokenizer.document_start();
  std::uint64_t done = 0;
  for (;;) {
    const std::vector<Piece> batch = cursor.next_batch(32 * pool.size() * o.piece_bytes);
    if (batch.empty()) break;
    std::vector<std::vector<std::int32_t>> tokens(batch.size());
    pool.parallel_for(batch.size(), 1, [&](std::size_t begin, std::size_t end) {
      for (std::size_t i = begin; i < end; ++i) {
        const Piece& p = batch[i];
        if (p.file_start && document_start) tokens[i].push_back(*document_start);
        const auto ids = tokenizer.encode(p.file->text().substr(p.begin, p.end - p.begin));
        tokens[i].insert(tokens[i].end(), ids.begin(), ids.end());
      }
    });
    for (std::size_t i = 0; i < batch.size(); ++i) {
      shard.append(tokens[i]);
      done += batch[i].end - batch[i].begin;
    }
    if (o.progress) o.progress(done, total);
  }
  shard.commit();
  return {static_cast<std::int64_t>(files.size()), shard.tokens(), tokenizer.vocab(),
          tokenizer.description()};
}

PrepareDataResult prepare_data(const std::vector<std::string>& inputs, const std::string& out) {
  PrepareDataOptions o;
  o.inputs = inputs;
  o.out = out;
  return prepare_data(o);
}

}  // namespace mlpo::data
