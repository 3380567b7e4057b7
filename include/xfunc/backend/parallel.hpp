#pragma once
/// \file
/// The CPU thread pool (API.md §6): xf::set_num_threads / xf::get_num_threads, and
/// detail::backend::parallel_for, which kernels use to split large work over the pool.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#if defined(__linux__)
#include <sched.h>
#endif

#include <xfunc/core/error.hpp>

namespace xfunc {
namespace detail::backend {

// NOTE: [Threads]
// One process-wide pool of persistent workers (made on first use). A kernel splits its work into
// tasks whose boundaries depend only on the problem, never on the number of threads, so a task
// computes the same thing whichever thread runs it; reductions combine task results in a fixed
// order. Results are therefore bitwise identical for every thread count. Work below a threshold
// (min_parallel_work element-operations) runs on the calling thread with no synchronisation at
// all, as does work started inside a pool task (no nested parallelism) or while another user
// thread's job holds the pool (concurrent callers do not queue behind each other). The caller
// takes part in its own job, so one thread means no worker at all. Matrix products run their
// BLAS calls as tasks of this pool, BLAS itself held to one thread (backend/blas.hpp, NOTE:
// [Batched GEMM threads]): this header refers to no BLAS symbol, so a program that never
// multiplies matrices does not link OpenBLAS, whose library starts its own threads when loaded.
inline constexpr std::int64_t min_parallel_work = 1 << 16;

// NOTE: [Spinning before sleeping]
// A worker asleep on the condition variable takes 20-50 us to run after it is notified (a futex
// wake and a reschedule; measured on the 2-core development VM), which is a fifth of a 250 us
// reduction split over two threads. So after a job a worker polls for the next one for
// spin_before_sleep before it sleeps, and the caller polls for its job's end as long before it
// waits: a program that runs large ops one after another (a training step) finds its workers
// awake, as OpenMP's do. The polls yield the core now and then (`sched_yield`), so that spinning
// threads give way to other runnable threads (several processes, each with its pool); the cost
// is up to spin_before_sleep of one core per worker after the last job of a burst.
inline constexpr std::chrono::microseconds spin_before_sleep{200};

/// Polls ready() for up to spin_before_sleep; returns whether it became true.
template <class Ready>
bool spin_until(const Ready& ready) {
  const auto give_up = std::chrono::steady_clock::now() + spin_before_sleep;
  for (;;) {
    for (int i = 0; i < 64; ++i) {
      if (ready()) return true;
#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
      __builtin_ia32_pause();  // (not _mm_pause: <immintrin.h> is kept out of builds without AVX)
#endif
    }
    if (std::chrono::steady_clock::now() > give_up) return false;
    std::this_thread::yield();
  }
}

class thread_pool {
 public:
  static thread_pool& instance() {
    static thread_pool pool;  // joined at exit
    return pool;
  }
  /// Threads a job may use, the caller included.
  int size() const { return size_.load(std::memory_order_relaxed); }

  void resize(int n) {
    if (n < 1) fail("xf::set_num_threads: n must be at least 1, got ", n);
    // (the job running this task holds job_mutex_: waiting for it here would never return)
    if (in_task) fail("xf::set_num_threads: cannot be called from inside a parallel task");
    std::lock_guard<std::mutex> job(job_mutex_);  // no job is running while the workers change
    if (n == size()) return;
    stop_workers();
    size_.store(n, std::memory_order_relaxed);
  }

  /// A list of tasks: fn(ctx, i) for i in [0, n).
  struct job {
    void (*fn)(const void*, std::int64_t) = nullptr;
    const void* ctx = nullptr;
    std::int64_t n = 0;
  };

  /// Runs f(i) for every i in [0, n), on up to size() threads; returns when all have run. The
  /// first exception a task throws is rethrown here; tasks that have not started by then are
  /// skipped (as the loop on one thread stops at the throwing task).
  template <class F>
  void run(std::int64_t n, const F& f) {
    run_job({[](const void* ctx, std::int64_t i) { (*static_cast<const F*>(ctx))(i); }, &f, n});
  }
  /// run, with the task type erased: the locking and waiting are compiled once, not once per
  /// kind of task (each kernel's parallel loop), which kept 1-2 KB of code per call site.
  void run_job(const job& j) {
    std::unique_lock<std::mutex> job_lock(job_mutex_, std::try_to_lock);
    if (!job_lock.owns_lock() || in_task) {  // another caller holds the pool, or nested: run here
      for (std::int64_t i = 0; i < j.n; ++i) j.fn(j.ctx, i);
      return;
    }
    start_workers();
    {
      std::lock_guard<std::mutex> lock(m_);
      job_ = j;
      next_.store(0, std::memory_order_relaxed);
      pending_.store(j.n, std::memory_order_relaxed);
      error_ = nullptr;
      failed_.store(false, std::memory_order_relaxed);
      generation_.fetch_add(1, std::memory_order_release);
    }
    wake_.notify_all();
    work(j);
    // every task has run and every worker has left it, before the next job may reuse next_
    const auto finished = [&] {
      return pending_.load(std::memory_order_acquire) == 0 && active_.load(std::memory_order_acquire) == 0;
    };
    spin_until(finished);  // NOTE: [Spinning before sleeping]
    std::unique_lock<std::mutex> lock(m_);
    done_.wait(lock, finished);
    job_ = job{};
    if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
  }

  ~thread_pool() {
    std::lock_guard<std::mutex> job(job_mutex_);
    stop_workers();
  }
  thread_pool(const thread_pool&) = delete;
  thread_pool& operator=(const thread_pool&) = delete;

  /// Whether this thread is running a pool task.
  static inline thread_local bool in_task = false;

 private:
  thread_pool() : size_(default_threads()) {}

  static int default_threads() {
    if (const char* e = std::getenv("XFUNC_NUM_THREADS")) {
      char* end = nullptr;
      const long v = std::strtol(e, &end, 10);
      if (end != e && *end == '\0' && v >= 1 && v <= 4096) return static_cast<int>(v);
      fail("XFUNC_NUM_THREADS must be a whole number of threads, at least 1; got \"", e, "\"");
    }
#if defined(__linux__)
    // the hardware threads this process may run on (a container or taskset may allow fewer
    // than the machine has)
    cpu_set_t allowed;
    if (sched_getaffinity(0, sizeof allowed, &allowed) == 0 && CPU_COUNT(&allowed) > 0) return CPU_COUNT(&allowed);
#endif
    return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  }

  // Claims and runs tasks of job j until none is left.
  void work(const job& j) {
    const bool was = in_task;
    in_task = true;
    for (;;) {
      const std::int64_t i = next_.fetch_add(1, std::memory_order_relaxed);
      if (i >= j.n) break;
      std::exception_ptr e;
      if (!failed_.load(std::memory_order_relaxed)) {  // after a failure, the rest is skipped
        try {
          j.fn(j.ctx, i);
        } catch (...) {
          e = std::current_exception();
          failed_.store(true, std::memory_order_relaxed);
        }
      }
      std::lock_guard<std::mutex> lock(m_);
      if (e && !error_) error_ = e;
      if (pending_.fetch_sub(1, std::memory_order_release) == 1) done_.notify_all();
    }
    in_task = was;
  }
  void worker_loop() {
    std::uint64_t seen = 0;
    for (;;) {
      job j;
      const auto called = [&] {
        return stopping_.load(std::memory_order_acquire) || generation_.load(std::memory_order_acquire) != seen;
      };
      spin_until(called);  // NOTE: [Spinning before sleeping]
      {
        std::unique_lock<std::mutex> lock(m_);
        wake_.wait(lock, called);
        if (stopping_.load(std::memory_order_relaxed)) return;
        seen = generation_.load(std::memory_order_relaxed);
        if (!job_.fn) continue;  // a job that finished before this worker woke
        j = job_;
        active_.fetch_add(1, std::memory_order_relaxed);
      }
      work(j);
      std::lock_guard<std::mutex> lock(m_);
      if (active_.fetch_sub(1, std::memory_order_release) == 1 && pending_.load(std::memory_order_relaxed) == 0)
        done_.notify_all();
    }
  }
  void start_workers() {  // under job_mutex_
    const int want = size() - 1;
    while (static_cast<int>(workers_.size()) < want) workers_.emplace_back([this] { worker_loop(); });
  }
  void stop_workers() {  // under job_mutex_
    {
      std::lock_guard<std::mutex> lock(m_);
      stopping_.store(true, std::memory_order_release);
    }
    wake_.notify_all();
    for (auto& w : workers_) w.join();
    workers_.clear();
    std::lock_guard<std::mutex> lock(m_);
    stopping_.store(false, std::memory_order_relaxed);
  }

  std::atomic<int> size_;
  std::mutex job_mutex_;  // one job at a time
  // m_ guards the fields below (except next_ and failed_): they change only under it. Those that
  // are atomic are also polled without it (NOTE: [Spinning before sleeping]), and the poller
  // then takes m_ before acting on what it saw.
  std::mutex m_;
  std::condition_variable wake_, done_;
  std::vector<std::thread> workers_;
  job job_;                                 // the running job (fn null when none)
  std::atomic<std::int64_t> next_{0};       // its next unclaimed task
  std::atomic<bool> failed_{false};         // a task of it has thrown
  std::atomic<std::int64_t> pending_{0};    // its tasks not yet finished
  std::atomic<int> active_{0};              // workers inside it
  std::atomic<std::uint64_t> generation_{0};  // jobs started
  std::atomic<bool> stopping_{false};
  std::exception_ptr error_;
};

/// parallel_for with the item loop erased: `items(ctx, i0, i1)` runs items [i0, i1). Compiled
/// once, so each kernel's loop body is compiled once too (in its `items`), not once for the
/// pool's tasks and again for the loop on this thread.
inline void parallel_ranges(std::int64_t n, std::int64_t work_per_item,
                            void (*items)(const void*, std::int64_t, std::int64_t), const void* ctx) {
  if (n > 1 && n * work_per_item >= min_parallel_work && !thread_pool::in_task) {
    thread_pool& pool = thread_pool::instance();
    const int threads = pool.size();
    if (threads > 1) {
      const std::int64_t by_work = std::max<std::int64_t>(1, n * work_per_item / (min_parallel_work / 4));
      const std::int64_t tasks = std::min({n, by_work, std::int64_t{8} * threads});
      pool.run(tasks, [&](std::int64_t t) { items(ctx, n * t / tasks, n * (t + 1) / tasks); });
      return;
    }
  }
  items(ctx, 0, n);
}

/// parallel_for for kernels that carry state from one item to the next (a pipeline): f(i0, i1)
/// runs the items [i0, i1), in order; the ranges are those parallel_for hands out.
template <class F>
void parallel_for_ranges(std::int64_t n, std::int64_t work_per_item, F&& f) {
  using G = std::remove_reference_t<F>;
  parallel_ranges(n, work_per_item, [](const void* ctx, std::int64_t i0, std::int64_t i1) {
    (*static_cast<G*>(const_cast<void*>(ctx)))(i0, i1);
  }, &f);
}

/// Runs f(i) for i in [0, n): on the pool when the items together do at least
/// min_parallel_work element-operations (`work_per_item` each) and more than one thread is
/// allowed, else in order on this thread. Items are handed out in contiguous ranges (a few per
/// thread, each worth at least min_parallel_work / 4), so that cheap items cost no
/// synchronisation each. f(i) must not depend on which thread runs it (NOTE: [Threads]).
template <class F>
void parallel_for(std::int64_t n, std::int64_t work_per_item, F&& f) {
  parallel_for_ranges(n, work_per_item, [&f](std::int64_t i0, std::int64_t i1) {
    for (std::int64_t i = i0; i < i1; ++i) f(i);
  });
}

}  // namespace detail::backend

/// Sets the number of threads large CPU kernels use (and BLAS, capped to the same); n >= 1.
inline void set_num_threads(int n) { detail::backend::thread_pool::instance().resize(n); }
/// The number of threads large CPU kernels use: the hardware's threads by default, or
/// XFUNC_NUM_THREADS when set, until set_num_threads changes it.
inline int get_num_threads() { return detail::backend::thread_pool::instance().size(); }

}  // namespace xfunc
