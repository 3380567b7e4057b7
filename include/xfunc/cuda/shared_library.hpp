#pragma once
/// \file
/// A shared library opened at run time (dlopen), for the CUDA driver, NVRTC and cuBLAS (NOTE:
/// [Lazy CUDA libraries] in xfunc/cuda/driver.hpp).
#include <dlfcn.h>

#include <cstdlib>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#ifndef XFUNC_CUDA_LIBRARY_DIR
#define XFUNC_CUDA_LIBRARY_DIR ""  // the toolkit's library directory, set by the xfunc::cuda target
#endif

namespace xfunc::detail::cuda {

/// An open shared library, or none with the reason in why_not(). Never throws on a missing file.
class shared_library {
 public:
  shared_library() = default;
  /// Opens the first of `candidates` (file names for the loader's search, or paths) that loads.
  explicit shared_library(const std::vector<std::string>& candidates) {
    for (const std::string& name : candidates) {
      if (name.empty()) continue;
      dlerror();
      // NODELETE: closing the handle does not unload the code. The driver and NVRTC are never
      // really done with (their own static state, e.g. an exception pool, would be reported as
      // leaked by LeakSanitizer once the code holding it is gone)
      handle_ = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
      if (handle_) {
        name_ = name;
        return;
      }
      const char* e = dlerror();
      why_not_ += (why_not_.empty() ? "" : "; ") + std::string(e ? e : name + ": cannot be opened");
    }
  }
  shared_library(shared_library&& o) noexcept
      : handle_(std::exchange(o.handle_, nullptr)),
        name_(std::move(o.name_)),
        why_not_(std::move(o.why_not_)),
        missing_(std::move(o.missing_)) {}
  shared_library& operator=(shared_library&& o) noexcept {
    std::swap(handle_, o.handle_);
    std::swap(name_, o.name_);
    std::swap(why_not_, o.why_not_);
    std::swap(missing_, o.missing_);
    return *this;
  }
  shared_library(const shared_library&) = delete;
  shared_library& operator=(const shared_library&) = delete;
  ~shared_library() {
    if (handle_) dlclose(handle_);
  }

  /// Whether a library is open.
  explicit operator bool() const { return handle_ != nullptr; }
  /// The candidate that loaded.
  const std::string& name() const { return name_; }
  /// Why none of the candidates loaded (the loader's messages).
  const std::string& why_not() const { return why_not_; }
  /// The address of `symbol` as a function pointer of type F, or nullptr.
  template <class F>
  F symbol(const char* symbol_name) const {
    return handle_ ? reinterpret_cast<F>(dlsym(handle_, symbol_name)) : nullptr;
  }
  /// Points `fn` at `symbol_name`; a symbol the library lacks is added to missing_symbols().
  template <class F>
  void bind(F& fn, const char* symbol_name) {
    fn = symbol<F>(symbol_name);
    if (!fn) missing_ += (missing_.empty() ? "" : ", ") + std::string(symbol_name);
  }
  /// The symbols bind() did not find, comma-separated (empty: all were found).
  const std::string& missing_symbols() const { return missing_; }

 private:
  void* handle_ = nullptr;
  std::string name_, why_not_, missing_;
};

/// Whether a library ships with the CUDA toolkit (NVRTC, cuBLAS) or with the driver (libcuda).
enum class ships_with { toolkit, driver };
/// The files to try for a library: the file named by environment variable `env_var` alone when it
/// is set, else the loader's search for each of `names`, then, for the toolkit's libraries, each
/// in the library directory of the toolkit xfunc::cuda was configured with.
inline std::vector<std::string> library_candidates(const char* env_var, std::initializer_list<std::string> names,
                                                   ships_with from = ships_with::toolkit) {
  if (const char* env = std::getenv(env_var); env && *env) return {std::string(env)};
  std::vector<std::string> files(names);
  if (const std::string dir = XFUNC_CUDA_LIBRARY_DIR; from == ships_with::toolkit && !dir.empty())
    for (const std::string& name : names) files.push_back(dir + "/" + name);
  return files;
}

}  // namespace xfunc::detail::cuda
