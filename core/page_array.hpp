#pragma once
// PageArray<T>: a page-aligned heap array of T, zeroed and first touched in parallel by the
// pool that will stream it, so its pages land near those threads and a timing never counts a
// page fault. The host probe and the AdamW benchmark time their passes over these.

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "core/error.hpp"
#include "core/thread_pool.hpp"
#include "core/units.hpp"

namespace mlpo {

template <class T>
class PageArray {
 public:
  // Throws mlpo::Error "<who>: cannot allocate <bytes><fix>" when the memory is not there
  // (`fix` starts with its own separator, e.g. "; use --quick").
  PageArray(std::size_t count, ThreadPool& pool, const std::string& who, const std::string& fix)
      : count_(count) {
    const std::size_t bytes = round_up(std::max<std::size_t>(count, 1) * sizeof(T), 4096);
    data_.reset(static_cast<T*>(std::aligned_alloc(4096, bytes)));
    if (!data_) throw Error(who + ": cannot allocate " + format_bytes(static_cast<double>(bytes)) + fix);
    pool.parallel_for(bytes, 1 << 20, [&](std::size_t b, std::size_t e) {
      std::memset(reinterpret_cast<char*>(data_.get()) + b, 0, e - b);
    });
  }
  T* data() const { return data_.get(); }
  std::size_t size() const { return count_; }

 private:
  struct Free {
    void operator()(T* p) const { std::free(p); }
  };
  std::unique_ptr<T, Free> data_;
  std::size_t count_;
};

}  // namespace mlpo
