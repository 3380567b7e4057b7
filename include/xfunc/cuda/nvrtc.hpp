#pragma once
/// \file
/// NVRTC, loaded on first use (NOTE: [Lazy CUDA libraries]), and the kernel cache: CUDA C++
/// source compiled at run time to a cubin for one architecture, kept in memory and on disk
/// (NOTE: [Kernel cache]).
#include <nvrtc.h>  // types and constants only

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <unistd.h>

#include <xfunc/core/error.hpp>
#include <xfunc/cuda/shared_library.hpp>


namespace xfunc::detail::cuda {

/// The NVRTC functions xfunc calls, looked up in one loaded libnvrtc.
struct nvrtc_api {
  shared_library library;
  decltype(&::nvrtcVersion) version = nullptr;
  decltype(&::nvrtcCreateProgram) create_program = nullptr;
  decltype(&::nvrtcDestroyProgram) destroy_program = nullptr;
  decltype(&::nvrtcCompileProgram) compile_program = nullptr;
  decltype(&::nvrtcGetProgramLogSize) get_log_size = nullptr;
  decltype(&::nvrtcGetProgramLog) get_log = nullptr;
  decltype(&::nvrtcGetCUBINSize) get_cubin_size = nullptr;
  decltype(&::nvrtcGetCUBIN) get_cubin = nullptr;
  decltype(&::nvrtcGetErrorString) get_error_string = nullptr;
  int major = 0, minor = 0;
  std::string why_not;  // empty when usable
};

/// Loads NVRTC from `candidates`; never throws.
inline nvrtc_api load_nvrtc(const std::vector<std::string>& candidates) {
  nvrtc_api n;
  n.library = shared_library(candidates);
  if (!n.library) {
    n.why_not = "NVRTC (libnvrtc.so) cannot be loaded: " + n.library.why_not() +
                "; install the CUDA toolkit, or set XFUNC_NVRTC_LIBRARY to its libnvrtc.so";
    return n;
  }
  shared_library& l = n.library;
  l.bind(n.version, "nvrtcVersion");
  l.bind(n.create_program, "nvrtcCreateProgram");
  l.bind(n.destroy_program, "nvrtcDestroyProgram");
  l.bind(n.compile_program, "nvrtcCompileProgram");
  l.bind(n.get_log_size, "nvrtcGetProgramLogSize");
  l.bind(n.get_log, "nvrtcGetProgramLog");
  l.bind(n.get_cubin_size, "nvrtcGetCUBINSize");
  l.bind(n.get_cubin, "nvrtcGetCUBIN");
  l.bind(n.get_error_string, "nvrtcGetErrorString");
  if (!l.missing_symbols().empty()) {
    n.why_not = l.name() + " lacks functions of NVRTC (" + l.missing_symbols() + "; it needs CUDA 11.1 or later)";
    return n;
  }
  n.version(&n.major, &n.minor);
  return n;
}

/// The process's NVRTC, loaded on first use: $XFUNC_NVRTC_LIBRARY if set, else the loader's
/// libnvrtc.so.13 / .12 / libnvrtc.so, else the one in the toolkit xfunc::cuda was configured with.
inline const nvrtc_api& nvrtc() {
  static const nvrtc_api n =
      load_nvrtc(library_candidates("XFUNC_NVRTC_LIBRARY", {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"}));
  return n;
}

/// Compiles `source` (CUDA C++, kernels declared extern "C") for `arch` (e.g. "sm_90") and returns
/// the cubin. Throws xf::error naming `what`, with NVRTC's log, when it does not compile.
inline std::string compile_to_cubin(const nvrtc_api& n, const std::string& source, const std::string& arch,
                                    const std::vector<std::string>& options, const char* what) {
  if (!n.why_not.empty()) fail(what, ": cannot compile a CUDA kernel: ", n.why_not);
  nvrtcProgram prog = nullptr;
  if (const nvrtcResult r = n.create_program(&prog, source.c_str(), "xfunc_kernel.cu", 0, nullptr, nullptr);
      r != NVRTC_SUCCESS)
    fail(what, ": nvrtcCreateProgram failed: ", n.get_error_string(r));
  struct destroy {
    const nvrtc_api& n;
    nvrtcProgram& p;
    ~destroy() { n.destroy_program(&p); }
  } guard{n, prog};
  std::vector<std::string> all = {"--gpu-architecture=" + arch, "-std=c++17"};
  all.insert(all.end(), options.begin(), options.end());
  std::vector<const char*> argv;
  for (const std::string& o : all) argv.push_back(o.c_str());
  const nvrtcResult r = n.compile_program(prog, static_cast<int>(argv.size()), argv.data());
  std::size_t log_size = 0;
  n.get_log_size(prog, &log_size);
  std::string log(log_size, '\0');
  if (log_size > 1) n.get_log(prog, log.data());
  if (r != NVRTC_SUCCESS)
    fail(what, ": NVRTC could not compile the kernel for ", arch, " (", n.get_error_string(r), "):\n", log.c_str());
  std::size_t size = 0;
  n.get_cubin_size(prog, &size);
  if (size == 0) fail(what, ": NVRTC gave no cubin for ", arch, "; pass a real architecture such as sm_90");
  std::string cubin(size, '\0');
  n.get_cubin(prog, cubin.data());
  return cubin;
}

// NOTE: [Kernel cache]
// Compiling a kernel with NVRTC takes tens to hundreds of milliseconds, so each cubin is kept:
// in memory for the process, and on disk for the next process, under $XFUNC_CUDA_CACHE (else
// $XDG_CACHE_HOME/xfunc/kernels, else ~/.cache/xfunc/kernels; "off" disables the disk). The key is
// everything that changes the binary: the source, the options, the architecture and the NVRTC
// version. A file is named by the key's 64-bit FNV-1a hash and starts with the whole key, which
// a reader compares, so a hash collision or a damaged file is a miss, never a wrong kernel.
// Files are written to a temporary name and renamed, so concurrent processes see whole files.

/// The cubins of every kernel compiled so far, in memory and on disk.
class kernel_cache {
 public:
  /// A cache whose disk part lives in `dir` (empty: memory only).
  explicit kernel_cache(std::filesystem::path dir) : dir_(std::move(dir)) {}

  /// The cubin for (source, arch, options), compiled with `n` on a miss.
  std::string get(const nvrtc_api& n, const std::string& source, const std::string& arch,
                  const std::vector<std::string>& options, const char* what) {
    std::string key = "xfunc kernel cache 1\nnvrtc " + std::to_string(n.major) + "." + std::to_string(n.minor) +
                      "\narch " + arch + "\n";
    for (const std::string& o : options) key += "option " + o + "\n";
    key += "source\n" + source;
    {
      std::lock_guard<std::mutex> lock(m_);
      if (auto it = memory_.find(key); it != memory_.end()) {
        ++memory_hits_;
        return it->second;
      }
    }
    const std::filesystem::path file = dir_.empty() ? std::filesystem::path() : dir_ / file_name(key);
    std::string cubin;
    if (!file.empty() && read(file, key, cubin)) {
      std::lock_guard<std::mutex> lock(m_);
      ++disk_hits_;
    } else {
      cubin = compile_to_cubin(n, source, arch, options, what);
      if (!file.empty()) write(file, key, cubin);
      std::lock_guard<std::mutex> lock(m_);
      ++compiles_;
    }
    std::lock_guard<std::mutex> lock(m_);
    return memory_.emplace(std::move(key), std::move(cubin)).first->second;
  }

  /// How many gets were answered from memory, from disk, and by compiling.
  struct counts {
    std::int64_t memory_hits, disk_hits, compiles;
  };
  counts stats() const {
    std::lock_guard<std::mutex> lock(m_);
    return {memory_hits_, disk_hits_, compiles_};
  }
  /// The directory of the disk cache (empty: none).
  const std::filesystem::path& directory() const { return dir_; }

  /// The file a key is stored in: its FNV-1a hash in hex, ".cubin".
  static std::string file_name(std::string_view key) {
    std::uint64_t h = 1469598103934665603ull;
    for (const char c : key) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
    char buf[32];
    std::snprintf(buf, sizeof buf, "%016llx.cubin", static_cast<unsigned long long>(h));
    return buf;
  }

 private:
  // A file holds the key's length (8 bytes), the key, then the cubin.
  static bool read(const std::filesystem::path& file, const std::string& key, std::string& cubin) {
    std::ifstream in(file, std::ios::binary);
    if (!in) return false;
    std::uint64_t n = 0;
    if (!in.read(reinterpret_cast<char*>(&n), sizeof n) || n != key.size()) return false;
    std::string stored(key.size(), '\0');
    if (!in.read(stored.data(), static_cast<std::streamsize>(stored.size())) || stored != key) return false;
    std::string rest((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (rest.empty()) return false;
    cubin = std::move(rest);
    return true;
  }
  // Best effort: a cache that cannot be written costs a compile next time, nothing else.
  static void write(const std::filesystem::path& file, const std::string& key, const std::string& cubin) {
    std::error_code ec;
    std::filesystem::create_directories(file.parent_path(), ec);
    const std::filesystem::path tmp = file.string() + ".tmp" + std::to_string(::getpid());
    {
      std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
      const std::uint64_t n = key.size();
      out.write(reinterpret_cast<const char*>(&n), sizeof n);
      out.write(key.data(), static_cast<std::streamsize>(key.size()));
      out.write(cubin.data(), static_cast<std::streamsize>(cubin.size()));
      if (!out) {
        out.close();
        std::filesystem::remove(tmp, ec);
        return;
      }
    }
    std::filesystem::rename(tmp, file, ec);
    if (ec) std::filesystem::remove(tmp, ec);
  }

  std::filesystem::path dir_;
  mutable std::mutex m_;
  std::map<std::string, std::string> memory_;
  std::int64_t memory_hits_ = 0, disk_hits_ = 0, compiles_ = 0;
};

/// The disk cache directory: $XFUNC_CUDA_CACHE ("off": none), else $XDG_CACHE_HOME/xfunc/kernels,
/// else $HOME/.cache/xfunc/kernels (none without a home).
inline std::filesystem::path default_kernel_cache_dir() {
  if (const char* c = std::getenv("XFUNC_CUDA_CACHE"); c && *c)
    return std::string_view(c) == "off" ? std::filesystem::path() : std::filesystem::path(c);
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::filesystem::path(x) / "xfunc" / "kernels";
  if (const char* h = std::getenv("HOME"); h && *h) return std::filesystem::path(h) / ".cache" / "xfunc" / "kernels";
  return {};
}

/// The process's kernel cache.
inline kernel_cache& kernels() {
  static kernel_cache cache(default_kernel_cache_dir());
  return cache;
}

}  // namespace xfunc::detail::cuda
