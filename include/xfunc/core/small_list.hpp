#pragma once
// small_list<T, N>: a list of up to N values stored inline (no allocation), spilling to the heap
// beyond N. The per-op lists of the transforms are short (ops take 1 to 3 tensors), and one
// allocation saved per op and level is a measurable share of the transform overhead.
#include <array>
#include <cstddef>
#include <initializer_list>
#include <span>
#include <utility>
#include <vector>

namespace xfunc::detail {

template <class T, std::size_t N>
class small_list {
 public:
  small_list() = default;
  explicit small_list(std::size_t n) { resize(n); }
  small_list(std::initializer_list<T> l) {
    resize(l.size());
    std::size_t i = 0;
    for (const auto& v : l) (*this)[i++] = v;
  }
  small_list& operator=(std::vector<T>&& v) {
    if (v.size() > N) {
      heap_ = std::move(v);
      n_ = heap_.size();
    } else {
      resize(v.size());
      for (std::size_t i = 0; i < n_; ++i) inline_[i] = std::move(v[i]);
    }
    return *this;
  }

  /// Resizes, keeping the first min(size, n) values.
  void resize(std::size_t n) {
    if (n > N && n_ <= N) heap_.assign(std::make_move_iterator(inline_.begin()), std::make_move_iterator(inline_.begin() + n_));
    if (n > N) heap_.resize(n);
    else if (n_ > N) {
      for (std::size_t i = 0; i < n; ++i) inline_[i] = std::move(heap_[i]);
      heap_.clear();
    }
    n_ = n;
  }
  // Written straight into its slot (no temporary), with the spill kept out of line: the per-op
  // lists of the transforms never spill.
  void push_back(const T& v) {
    if (n_ < N) inline_[n_++] = v;
    else spill_push(T(v));
  }
  void push_back(T&& v) {
    if (n_ < N) inline_[n_++] = std::move(v);
    else spill_push(std::move(v));
  }
  std::size_t size() const { return n_; }
  bool empty() const { return n_ == 0; }
  T* data() { return n_ > N ? heap_.data() : inline_.data(); }
  const T* data() const { return n_ > N ? heap_.data() : inline_.data(); }
  T& operator[](std::size_t i) { return data()[i]; }
  const T& operator[](std::size_t i) const { return data()[i]; }
  T* begin() { return data(); }
  T* end() { return data() + n_; }
  const T* begin() const { return data(); }
  const T* end() const { return data() + n_; }
  std::span<const T> span() const { return {data(), n_}; }
  operator std::span<const T>() const { return span(); }

 private:
  [[gnu::noinline]] void spill_push(T&& v) {
    if (n_ == N) heap_.assign(std::make_move_iterator(inline_.begin()), std::make_move_iterator(inline_.end()));
    heap_.push_back(std::move(v));
    ++n_;
  }

  std::size_t n_ = 0;
  std::array<T, N> inline_{};
  std::vector<T> heap_;
};

}  // namespace xfunc::detail
