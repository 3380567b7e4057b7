#pragma once
/// \file
/// NumPy .npz files (zip archives of .npy arrays): xf::save_npz, xf::save_npz_compressed and
/// xf::load_npz (docs/interchange.md). Uses libzip, which xfunc::xfunc links (Debian libzip-dev).
#include <cstdint>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <sys/stat.h>
#include <zip.h>

#include <xfunc/io/npy.hpp>

namespace xfunc {
namespace detail {

// NOTE: [npz files through libzip]
// An .npz file is a zip archive with one member "<key>.npy" per array: np.savez stores them
// uncompressed, np.savez_compressed deflates them, and numpy writes zip64 records. libzip reads
// all of that, checks each member's CRC-32, and writes archives numpy reads; xtensor has no zip
// support. A member is read through the same checked .npy reader as a file (npy_reader), straight
// from libzip's decompressing stream into the tensor, with no copy of the member in memory; its
// CRC is checked when the stream reaches its end, so the reader drains each member to its end.
// When saving, each member is a libzip buffer source of two fragments (the header xtensor writes,
// and the tensor's own contiguous bytes), so nothing is copied before libzip writes it; libzip
// writes a temporary file and renames it over `path` on success, so a failed save leaves no
// partial archive. libzip writes no file for an archive without members, so an empty map is
// written by hand (a zip end-of-central-directory record alone, which numpy and libzip read).

/// The text of a libzip error code.
inline std::string zip_error_text(int code) {
  zip_error_t e;
  zip_error_init_with_code(&e, code);
  std::string s = zip_error_strerror(&e);
  zip_error_fini(&e);
  return s;
}

struct zip_discarder {
  void operator()(zip_t* z) const { zip_discard(z); }
};
struct zip_file_closer {
  void operator()(zip_file_t* f) const { zip_fclose(f); }
};

/// Whether the file starts with the .npy magic string (to suggest xf::load_npy).
inline bool starts_like_npy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char b[6] = {};
  return in.read(b, 6) && std::string_view(b, 6) == std::string_view("\x93NUMPY", 6);
}

/// Whether the file starts with a zip local-file header ("PK\3\4").
inline bool starts_like_zip(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char b[4] = {};
  return in.read(b, 4) && std::string_view(b, 4) == std::string_view("PK\x03\x04", 4);
}

/// Writes `arrays` as an .npz archive, each member stored or deflated.
inline void write_npz(const char* fn, const std::string& path, const std::map<std::string, tensor>& arrays,
                      bool compressed) {
  const std::string where = quoted_path(path);
  // every tensor is checked, and made contiguous, before the file is touched
  struct member {
    std::string name, header;
    tensor data;
  };
  std::vector<member> members;
  members.reserve(arrays.size());
  for (const auto& [key, t] : arrays) {
    if (key.find('\0') != std::string::npos)
      fail(fn, ": the key \"", key.c_str(), "...\" has a NUL character, which a zip member name (\"<key>.npy\") "
           "cannot hold; rename it (writing the .npz file ", where, ")");
    const std::string what = "member '" + key + ".npy' of the .npz file " + where;
    tensor c = npy_savable(t, fn, what);
    members.push_back({key + ".npy", npy_header_of(c), std::move(c)});
  }
  if (members.empty()) {  // (see NOTE: [npz files through libzip])
    static constexpr char end_record[22] = {'P', 'K', 5, 6};
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(end_record, sizeof end_record);
    out.close();
    if (!out)
      fail(fn, ": cannot write the (empty) .npz file of .npy arrays ", where,
           "; check that its folder exists and is writable");
    return;
  }
  if (const std::size_t slash = path.find_last_of('/'); slash != std::string::npos && slash > 0) {
    const std::string folder = path.substr(0, slash);
    struct stat st {};
    if (::stat(folder.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
      fail(fn, ": cannot write the .npz file of .npy arrays ", where, ": its folder ", quoted_path(folder),
           " does not exist; create it first");
  }
  int code = 0;
  std::unique_ptr<zip_t, zip_discarder> z(zip_open(path.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &code));
  if (!z)
    fail(fn, ": cannot create the .npz file of .npy arrays ", where, " (", zip_error_text(code),
         "); check that its folder is writable");
  for (const member& m : members) {
    const std::string_view data = npy_data_of(m.data);
    zip_buffer_fragment_t parts[2] = {
        {reinterpret_cast<zip_uint8_t*>(const_cast<char*>(m.header.data())), m.header.size()},
        {reinterpret_cast<zip_uint8_t*>(const_cast<char*>(data.data())), data.size()}};
    zip_source_t* src = zip_source_buffer_fragment(z.get(), parts, data.empty() ? 1 : 2, 0);
    if (!src) fail(fn, ": libzip failed to add member '", m.name, "' to the .npz file of .npy arrays ", where, " (",
                   zip_strerror(z.get()), ")");
    const zip_int64_t idx = zip_file_add(z.get(), m.name.c_str(), src, ZIP_FL_ENC_UTF_8);
    if (idx < 0) {
      zip_source_free(src);
      fail(fn, ": libzip failed to add member '", m.name, "' to the .npz file of .npy arrays ", where, " (",
           zip_strerror(z.get()), ")");
    }
    if (zip_set_file_compression(z.get(), static_cast<zip_uint64_t>(idx), compressed ? ZIP_CM_DEFLATE : ZIP_CM_STORE, 0) < 0)
      fail(fn, ": libzip cannot set the compression of member '", m.name, "' of ", where, " (", zip_strerror(z.get()), ")");
  }
  // zip_close writes everything (reading the tensors' buffers, alive in `members`) and frees z
  if (zip_close(z.get()) < 0)
    fail(fn, ": writing the .npz file of .npy arrays ", where, " failed (", zip_strerror(z.get()),
         "); check the free space and permissions");
  z.release();
}

}  // namespace detail

/// Writes `arrays` to `path` as a NumPy .npz file, like numpy.savez: a zip archive with one
/// uncompressed member "<key>.npy" per entry (each written as xf::save_npy writes a file), which
/// numpy.load and xf::load_npz read back. Throws xf::error ("npy" and the path) for a tensor
/// that xf::save_npy rejects (naming its key) or a failed write; the file is then left as it was.
inline void save_npz(const std::string& path, const std::map<std::string, tensor>& arrays) {
  detail::write_npz("xf::save_npz", path, arrays, false);
}

/// Like xf::save_npz, with each member deflated, like numpy.savez_compressed.
inline void save_npz_compressed(const std::string& path, const std::map<std::string, tensor>& arrays) {
  detail::write_npz("xf::save_npz_compressed", path, arrays, true);
}

/// Reads a NumPy .npz file (from numpy.savez, numpy.savez_compressed, xf::save_npz): a map from
/// each member's name without its ".npy" suffix, as numpy.load names them, to its array, read
/// as xf::load_npy reads a file (same dtype rule). Throws xf::error ("npy" and the path) for a
/// missing, truncated or foreign file, and for a member that is not a valid .npy array or fails
/// its CRC check (naming the member).
inline std::map<std::string, tensor> load_npz(const std::string& path) {
  const std::string where = detail::quoted_path(path);
  const char* what = "the .npz file (a zip of .npy arrays) ";
  if (const std::string why = detail::npy_unreadable_reason(path); !why.empty())
    detail::fail("xf::load_npz: cannot read ", what, where, ": ", why);
  int code = 0;
  std::unique_ptr<zip_t, detail::zip_discarder> z(zip_open(path.c_str(), ZIP_RDONLY, &code));
  if (!z) {
    if (detail::starts_like_npy(path))
      detail::fail("xf::load_npz: ", where, " is a single .npy array, not an .npz archive; read it with xf::load_npy");
    if (code == ZIP_ER_NOZIP && detail::starts_like_zip(path))
      detail::fail("xf::load_npz: ", what, where, " is truncated or damaged: it starts like a zip archive but has no "
                   "valid end record (", detail::zip_error_text(code), "); write it again");
    detail::fail("xf::load_npz: cannot read ", what, where, " (", detail::zip_error_text(code),
                 code == ZIP_ER_NOZIP ? "; a file written by numpy.savez or xf::save_npz was expected" : "", ")");
  }
  std::map<std::string, tensor> out;
  const zip_int64_t n = zip_get_num_entries(z.get(), 0);
  for (zip_int64_t i = 0; i < n; ++i) {
    const auto index = static_cast<zip_uint64_t>(i);
    zip_stat_t st;
    zip_stat_init(&st);
    if (zip_stat_index(z.get(), index, 0, &st) < 0 || !(st.valid & ZIP_STAT_NAME) || !(st.valid & ZIP_STAT_SIZE))
      detail::fail("xf::load_npz: ", what, where, " is damaged: entry ", i, " cannot be read (", zip_strerror(z.get()), ")");
    const std::string name = st.name;
    if (!name.empty() && name.back() == '/') continue;  // a folder entry holds no array
    std::string key = name;
    if (key.size() >= 4 && key.compare(key.size() - 4, 4, ".npy") == 0) key.resize(key.size() - 4);
    const std::string member_where = "member '" + name + "' of " + where;
    if (out.count(key))
      detail::fail("xf::load_npz: ", member_where, " has the same key '", key,
                   "' as an earlier member (numpy names a member \"<key>.npy\" by its key); rename one of them");
    std::unique_ptr<zip_file_t, detail::zip_file_closer> f(zip_fopen_index(z.get(), index, 0));
    if (!f)
      detail::fail("xf::load_npz: cannot open ", member_where, " as a .npy array (", zip_strerror(z.get()), ")");
    detail::npy_reader r{"xf::load_npz", member_where, st.size, 0, {}};
    r.read_some = [&](char* dst, std::size_t len) -> std::size_t {
      const zip_int64_t got = zip_fread(f.get(), dst, len);
      if (got < 0)
        r.fail_here("reading this .npy member failed (", zip_file_strerror(f.get()),
                    "); the .npz file is damaged: write it again");
      return static_cast<std::size_t>(got);
    };
    tensor t = detail::read_npy(r);
    // read to the member's end: libzip checks the CRC there (NOTE: [npz files through libzip])
    char rest[4096];
    while (r.read_some(rest, sizeof rest) > 0) {
    }
    out.emplace(std::move(key), std::move(t));
  }
  return out;
}

}  // namespace xfunc
