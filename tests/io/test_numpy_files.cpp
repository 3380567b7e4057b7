// xf::save_npy, xf::load_npy, xf::save_npz, xf::load_npz: files numpy wrote (tests/io/data, from
// generate_numpy_files.py, with their expected values), round trips, and every error.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include <zip.h>

#include <xfunc/io/npz.hpp>
#include <xfunc/xfunc.hpp>

#include "../support/bitwise.hpp"

namespace xf = xfunc;
namespace fs = std::filesystem;
using Catch::Matchers::Contains;

#ifndef XFUNC_TEST_IO_DATA_DIR
#error "XFUNC_TEST_IO_DATA_DIR must name tests/io/data (tests/io/CMakeLists.txt defines it)"
#endif

namespace {

const fs::path data_dir = XFUNC_TEST_IO_DATA_DIR;

/// A folder for this process's files, removed at exit.
struct temp_folder {
  fs::path path = fs::temp_directory_path() / ("xfunc_test_io_numpy_" + std::to_string(::getpid()));
  temp_folder() {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~temp_folder() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};
fs::path temp(const std::string& name) {
  static temp_folder folder;
  return folder.path / name;
}

std::string read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}
fs::path write_bytes(const fs::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return p;
}

/// Offset where the data of a .npy file starts (after magic, version, length and header).
std::size_t npy_data_offset(const std::string& file) {
  const auto b = [&](std::size_t i) { return static_cast<std::size_t>(static_cast<unsigned char>(file[i])); };
  if (file[6] == 1) return 10 + (b(8) | b(9) << 8);
  return 12 + (b(8) | b(9) << 8 | b(10) << 16 | b(11) << 24);
}

/// Expected contents of a file numpy wrote (expected_values.inc).
struct expected_array {
  const char* file;
  const char* member;  // "" for a .npy file
  xf::dtype dtype;
  std::vector<std::int64_t> shape;
  std::vector<std::int64_t> ints;  // int64 and bool
  std::vector<double> floats;      // float32 and float64 (exact)
};
#define XFUNC_TEST_INF std::numeric_limits<double>::infinity()
#define XFUNC_TEST_NAN std::numeric_limits<double>::quiet_NaN()
const std::vector<expected_array> expected = {
#include "data/expected_values.inc"
};
#undef XFUNC_TEST_INF
#undef XFUNC_TEST_NAN

bool same_float(double got, double want) {
  if (std::isnan(want)) return std::isnan(got);
  return got == want && std::signbit(got) == std::signbit(want);
}

/// Checks that t holds what numpy saved (dtype, shape, values in C order; contiguous).
void check_against(const xf::tensor& t, const expected_array& e) {
  INFO(e.file << " " << e.member);
  REQUIRE(t.dtype() == e.dtype);
  REQUIRE(t.shape() == xf::shape_t(e.shape.begin(), e.shape.end()));
  REQUIRE(t.is_contiguous());
  const auto n = static_cast<std::size_t>(t.numel());
  REQUIRE((e.dtype == xf::f32 || e.dtype == xf::f64 ? e.floats.size() : e.ints.size()) == n);
  for (std::size_t i = 0; i < n; ++i) {
    INFO("element " << i);
    switch (e.dtype) {
      case xf::dtype::boolean: CHECK(t.impl()->data<bool>()[i] == (e.ints[i] != 0)); break;
      case xf::dtype::int64: CHECK(t.impl()->data<std::int64_t>()[i] == e.ints[i]); break;
      case xf::dtype::float32: CHECK(same_float(t.impl()->data<float>()[i], e.floats[i])); break;
      case xf::dtype::float64: CHECK(same_float(t.impl()->data<double>()[i], e.floats[i])); break;
    }
  }
}

/// f() throws xf::error whose message names "npy", the path, and each phrase.
template <class F>
void check_fails(F&& f, const fs::path& path, std::vector<std::string> phrases = {}) {
  INFO(path);
  try {
    f();
    FAIL("no exception");
  } catch (const xf::error& e) {
    const std::string msg = e.what();
    INFO(msg);
    CHECK(msg.find("npy") != std::string::npos);
    CHECK(msg.find(path.string()) != std::string::npos);
    for (const auto& p : phrases) {
      INFO(p);
      CHECK(msg.find(p) != std::string::npos);
    }
  }
}

/// A tensor of dtype d and shape s, its values a formula of the position.
xf::tensor sample(xf::dtype d, const xf::shape_t& s) {
  const std::int64_t n = xf::detail::numel_of(s);
  const xf::tensor k = xf::arange(0.0, static_cast<double>(n), 1.0, xf::f64);
  const xf::tensor t = d == xf::b8 ? xf::sin(k) > 0.0 : (k * 3.0 - 7.0).to(d);
  return t.reshape(s);
}

/// A version 1.0 .npy file with header dict `dict` (padded as numpy pads it) and `data`.
std::string npy_with_header(const std::string& dict, const std::string& data) {
  std::string h = dict;
  while ((10 + h.size() + 1) % 64) h += ' ';
  h += '\n';
  std::string out("\x93NUMPY\x01\x00", 8);
  out += static_cast<char>(h.size() & 0xff);
  out += static_cast<char>(h.size() >> 8);
  return out + h + data;
}

std::string zip_method_of(const fs::path& p, const char* member) {
  int code = 0;
  zip_t* z = zip_open(p.c_str(), ZIP_RDONLY, &code);
  REQUIRE(z);
  zip_stat_t st;
  zip_stat_init(&st);
  REQUIRE(zip_stat(z, member, 0, &st) == 0);
  zip_discard(z);
  return st.comp_method == ZIP_CM_STORE ? "stored" : st.comp_method == ZIP_CM_DEFLATE ? "deflated" : "other";
}

}  // namespace

TEST_CASE("load_npy reads every dtype, byte order and layout numpy writes", "[io][npy]") {
  int files = 0;
  for (const auto& e : expected) {
    if (*e.member) continue;
    check_against(xf::load_npy(data_dir / e.file), e);
    ++files;
  }
  CHECK(files >= 25);  // the whole table ran
}

TEST_CASE("load_npz reads np.savez and np.savez_compressed files", "[io][npz]") {
  for (const char* name : {"savez.npz", "savez_compressed.npz"}) {
    INFO(name);
    const auto arrays = xf::load_npz(data_dir / name);
    std::size_t members = 0;
    for (const auto& e : expected) {
      if (std::string(e.file) != name) continue;
      ++members;
      REQUIRE(arrays.count(e.member) == 1);
      check_against(arrays.at(e.member), e);
    }
    CHECK(members == 4);
    CHECK(arrays.size() == members);
  }
}

TEST_CASE("save_npy then load_npy gives back every dtype and shape, bit for bit", "[io][npy]") {
  const std::vector<xf::shape_t> shapes = {{}, {0}, {5}, {2, 3}, {0, 4}, {2, 1, 3}, {1, 2, 1, 2, 2}};
  for (xf::dtype d : {xf::f32, xf::f64, xf::i64, xf::b8})
    for (const auto& s : shapes) {
      INFO(d << " " << s);
      const xf::tensor t = sample(d, s);
      const fs::path p = temp("round_trip.npy");
      xf::save_npy(p, t);
      const xf::tensor u = xf::load_npy(p);
      CHECK(u.dtype() == d);
      CHECK(u.shape() == s);
      CHECK(u.is_contiguous());
      CHECK(xfunc_test::bitwise_equal(u, t));
      // the layout numpy writes: a header padded to 64 bytes, then exactly the C-order data
      const std::string bytes = read_bytes(p);
      CHECK(bytes.substr(0, 8) == std::string("\x93NUMPY\x01\x00", 8));
      CHECK(npy_data_offset(bytes) % 64 == 0);
      CHECK(bytes.size() == npy_data_offset(bytes) + static_cast<std::size_t>(t.numel()) * xf::dtype_size(d));
      CHECK_THAT(bytes, Contains("'fortran_order': False"));
    }
}

TEST_CASE("save_npy keeps special float values and int64 extremes", "[io][npy]") {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  const double tiny = std::numeric_limits<double>::denorm_min(), big = std::numeric_limits<double>::max();
  const xf::tensor t{0.0, -0.0, inf, -inf, nan, -nan, tiny, big, -big};
  for (xf::dtype d : {xf::f64, xf::f32}) {
    const xf::tensor v = t.to(d);
    const fs::path p = temp("specials.npy");
    xf::save_npy(p, v);
    CHECK(xfunc_test::bitwise_equal(xf::load_npy(p), v));
  }
  const xf::tensor extremes{std::numeric_limits<std::int64_t>::min(), std::int64_t{-1}, std::numeric_limits<std::int64_t>::max()};
  xf::save_npy(temp("extremes.npy"), extremes);
  CHECK(xfunc_test::bitwise_equal(xf::load_npy(temp("extremes.npy")), extremes));
}

TEST_CASE("save_npy writes views and non-contiguous tensors in C order", "[io][npy]") {
  const xf::tensor base = sample(xf::f64, {3, 4, 5});
  const std::vector<std::pair<const char*, xf::tensor>> views = {
      {"transpose", base.transpose(0, 2)},
      {"permute", base.permute({1, 2, 0})},
      {"narrow", base.narrow(2, 1, 3)},
      {"select", base.select(1, 2)},
      {"expand", sample(xf::i64, {1, 4}).expand({3, 4})},
      {"diagonal", sample(xf::f32, {4, 4}).diagonal()},
      {"bool transpose", sample(xf::b8, {2, 5}).t()},
      {"deferred pointwise", base * 2.0 + 1.0},
  };
  for (const auto& [what, v] : views) {
    INFO(what);
    const fs::path p = temp("view.npy");
    xf::save_npy(p, v);
    const xf::tensor u = xf::load_npy(p);
    CHECK(u.is_contiguous());
    CHECK(xfunc_test::bitwise_equal(u, v.contiguous()));
  }
}

TEST_CASE("save_npz then load_npz: stored and deflated members, any keys", "[io][npz]") {
  const std::map<std::string, xf::tensor> arrays = {
      {"w", sample(xf::f32, {2, 3})},
      {"b", sample(xf::f64, {4}).narrow(0, 1, 2)},
      {"steps", sample(xf::i64, {})},
      {"mask", sample(xf::b8, {3, 2}).t()},
      {"empty", sample(xf::f64, {0, 3})},
      {"name.npy", sample(xf::i64, {2})},  // member "name.npy.npy", read back as "name.npy", as numpy does
      {"dir/inner", sample(xf::f32, {1})},
  };
  for (bool compressed : {false, true}) {
    INFO((compressed ? "save_npz_compressed" : "save_npz"));
    const fs::path p = temp(compressed ? "deflated.npz" : "stored.npz");
    if (compressed) xf::save_npz_compressed(p, arrays);
    else xf::save_npz(p, arrays);
    CHECK(zip_method_of(p, "w.npy") == (compressed ? "deflated" : "stored"));
    const auto back = xf::load_npz(p);
    REQUIRE(back.size() == arrays.size());
    for (const auto& [k, v] : arrays) {
      INFO(k);
      REQUIRE(back.count(k) == 1);
      CHECK(xfunc_test::bitwise_equal(back.at(k), v.contiguous()));
    }
  }
  // an empty map is an empty archive (libzip alone would write no file); overwriting a non-zip
  const fs::path p = temp("was_text.npz");
  write_bytes(p, "not a zip\n");
  xf::save_npz(p, {});
  CHECK(xf::load_npz(p).empty());
  xf::save_npz(p, {{"x", sample(xf::f32, {2})}});
  CHECK(xf::load_npz(p).size() == 1);
}

TEST_CASE("load_npy: missing, empty, truncated and foreign files", "[io][npy][errors]") {
  check_fails([&] { xf::load_npy(temp("does_not_exist.npy")); }, temp("does_not_exist.npy"), {"no such file"});
  check_fails([&] { xf::load_npy(temp("")); }, temp(""), {"directory"});
  check_fails([&] { xf::load_npy(write_bytes(temp("empty.npy"), "")); }, temp("empty.npy"), {"empty"});

  // a file numpy wrote, cut at every part of its layout
  const std::string whole = read_bytes(data_dir / "f8.npy");
  const std::size_t data = npy_data_offset(whole);
  for (std::size_t cut : {std::size_t(3), std::size_t(6), std::size_t(7), std::size_t(8), std::size_t(9),
                          std::size_t(10), std::size_t(40), data - 1, data, data + 1, data + 8, whole.size() - 1}) {
    INFO("cut at " << cut << " of " << whole.size());
    const fs::path p = write_bytes(temp("cut.npy"), whole.substr(0, cut));
    check_fails([&] { xf::load_npy(p); }, p, {"truncated"});
  }
  // Fortran order and big endian take another path through the reader
  const std::string fortran = read_bytes(data_dir / "fortran_be_i4.npy");
  const fs::path pf = write_bytes(temp("cut_fortran.npy"), fortran.substr(0, fortran.size() - 3));
  check_fails([&] { xf::load_npy(pf); }, pf, {"truncated"});

  // foreign files
  const fs::path text = write_bytes(temp("text.npy"), "x,y\n1,2\n");
  check_fails([&] { xf::load_npy(text); }, text, {"magic"});
  std::string bad_magic = whole;
  bad_magic[1] = 'M';
  const fs::path pm = write_bytes(temp("bad_magic.npy"), bad_magic);
  check_fails([&] { xf::load_npy(pm); }, pm, {"magic"});
  check_fails([&] { xf::load_npy(data_dir / "savez.npz"); }, data_dir / "savez.npz", {"xf::load_npz"});
}

TEST_CASE("load_npy: malformed headers and unknown versions", "[io][npy][errors]") {
  const std::string data(12 * 8, '\0');  // room for the (3, 4) float64 array of the valid header
  const std::string valid = "{'descr': '<f8', 'fortran_order': False, 'shape': (3, 4), }";
  const fs::path pv = write_bytes(temp("valid_header.npy"), npy_with_header(valid, data));
  CHECK(xf::load_npy(pv).shape() == xf::shape_t{3, 4});
  const std::vector<std::pair<std::string, std::string>> headers = {
      {"{'dtype': '<f8', 'fortran_order': False, 'shape': (3, 4), }", "unknown key"},
      {"{'descr': '<f8', 'fortran_order': Nope, 'shape': (3, 4), }", "True or False"},
      {"['descr', '<f8', 'fortran_order', False, 'shape', (3, 4)]", "Python dict"},
      {"{'descr': '<f8', 'fortran_order': False, 'shape': (3, x), }", "non-negative integers"},
      {"{'descr': '<f8', 'fortran_order': False, 'shape': (3, -4), }", "non-negative integers"},
      {"{'descr': '<f8', 'fortran_order': False, 'shape': [3, 4], }", "'('"},
      {"{'descr': '<f8', 'fortran_order': False, 'shape': (12), }", "trailing comma"},
      {"{'descr': '<f8', 'fortran_order': False, 'shape' (3, 4), }", "':'"},
      {"{'descr': '<f8', 'fortran_order': False, }", "no 'shape' key"},
      {"{'descr': '<f8', 'shape': (3, 4), }", "no 'fortran_order' key"},
      {"{'descr': '<f8', 'fortran_order': False, 'shape': (3, 4), } x", "after the closing"},
      {"{'descr': '<f8', 'fortran_order': False, 'shape': (3, 4), ", "a quoted string for a key"},
      {"{'descr': '<f8, 'fortran_order': False, 'shape': (3, 4), }", "',' or '}'"},
      {"{'descr': '<f3', 'fortran_order': False, 'shape': (3, 4), }", "unsupported dtype '<f3'"},
      {"{'descr': 'xyz', 'fortran_order': False, 'shape': (3, 4), }", "unsupported dtype 'xyz'"},
      {"{'descr': '<f8', 'fortran_order': False, 'shape': (3, 5), }", "truncated"},
      {"{'descr': '<f8', 'fortran_order': True, 'shape': (4, 4), }", "truncated"},
      // sizes no file holds: rejected before any allocation
      {"{'descr': '<f8', 'fortran_order': False, 'shape': (9223372036854775807, 4), }", "truncated"},
      {"{'descr': '<i1', 'fortran_order': False, 'shape': (4294967296, 4294967296, 2), }", "truncated"},
      {"{'descr': '<f8', 'fortran_order': False, 'shape': (99999999999999999999,), }", "does not fit"},
  };
  int i = 0;
  for (const auto& [header, phrase] : headers) {
    const fs::path p = write_bytes(temp("bad_header_" + std::to_string(i++) + ".npy"), npy_with_header(header, data));
    check_fails([&] { xf::load_npy(p); }, p, {phrase});
  }
  // a header length past the end of the file, and versions that do not exist
  std::string long_header = npy_with_header(valid, data);
  long_header[8] = '\xff';
  long_header[9] = '\xff';
  const fs::path pl = write_bytes(temp("long_header.npy"), long_header);
  check_fails([&] { xf::load_npy(pl); }, pl, {"truncated", "header"});
  for (char major : {'\0', '\x04', '\x09'}) {
    std::string v = npy_with_header(valid, data);
    v[6] = major;
    const fs::path p = write_bytes(temp("version.npy"), v);
    check_fails([&] { xf::load_npy(p); }, p, {"version"});
  }
}

TEST_CASE("load_npy: unsupported dtypes say what they are", "[io][npy][errors]") {
  const std::vector<std::pair<const char*, std::vector<std::string>>> files = {
      {"unsupported_complex64.npy", {"unsupported dtype", "complex"}},
      {"unsupported_u8_too_big.npy", {"uint64", "does not fit int64"}},
      {"unsupported_unicode.npy", {"unsupported dtype", "strings"}},
      {"unsupported_bytes.npy", {"unsupported dtype", "strings"}},
      {"unsupported_structured.npy", {"unsupported dtype", "structured"}},
      {"unsupported_datetime.npy", {"unsupported dtype", "datetime"}},
      {"unsupported_longdouble.npy", {"unsupported dtype", "long double"}},
      {"unsupported_object.npy", {"unsupported dtype", "pickle"}},
      {"unsupported_17_dims.npy", {"17 dimensions", "at most 16"}},
  };
  for (const auto& [name, phrases] : files) {
    const fs::path p = data_dir / name;  // (C++20 lambdas cannot capture structured bindings in clang 14)
    check_fails([&] { xf::load_npy(p); }, p, phrases);
  }
}

TEST_CASE("load_npz: missing, truncated and foreign files, bad members", "[io][npz][errors]") {
  check_fails([&] { xf::load_npz(temp("missing.npz")); }, temp("missing.npz"), {"no such file"});
  const fs::path text = write_bytes(temp("text.npz"), "hello\n");
  check_fails([&] { xf::load_npz(text); }, text, {"Not a zip archive"});
  check_fails([&] { xf::load_npz(data_dir / "f8.npy"); }, data_dir / "f8.npy", {"xf::load_npy"});
  check_fails([&] { xf::load_npz(write_bytes(temp("empty.npz"), "")); }, temp("empty.npz"));

  const std::string whole = read_bytes(data_dir / "savez_compressed.npz");
  for (std::size_t cut : {std::size_t(2), std::size_t(30), whole.size() / 2, whole.size() - 23, whole.size() - 1}) {
    INFO("cut at " << cut << " of " << whole.size());
    const fs::path p = write_bytes(temp("cut.npz"), whole.substr(0, cut));
    check_fails([&] { xf::load_npz(p); }, p);
  }
  check_fails([&] { xf::load_npz(data_dir / "member_not_npy.npz"); }, data_dir / "member_not_npy.npz",
              {"member 'notes.npy'", "magic"});
  check_fails([&] { xf::load_npz(data_dir / "member_truncated.npz"); }, data_dir / "member_truncated.npz",
              {"member 'cut.npy'", "truncated"});
  check_fails([&] { xf::load_npz(data_dir / "duplicate_key.npz"); }, data_dir / "duplicate_key.npz",
              {"member 'a'", "same key 'a'"});
  check_fails([&] { xf::load_npz(data_dir / "bad_crc.npz"); }, data_dir / "bad_crc.npz", {"member 'x.npy'", "CRC"});
}

TEST_CASE("save_npy and save_npz reject tensors without values of their own", "[io][npy][errors]") {
  const fs::path p = temp("rejected.npy"), pz = temp("rejected.npz");
  check_fails([&] { xf::save_npy(p, xf::tensor()); }, p, {"undefined"});
  check_fails([&] { xf::save_npy(p, xf::zeros({2, 3}, xf::f32, xf::meta)); }, p, {"meta"});
  check_fails([&] { xf::save_npz(pz, {{"a", xf::ones({2})}, {"m", xf::zeros({2}, xf::f32, xf::meta)}}); }, pz,
              {"member 'm.npy'", "meta"});
  const xf::tensor x = sample(xf::f32, {2, 3});
  check_fails([&] { xf::vmap([&](const xf::tensor& row) { xf::save_npy(p, row); return row; })(x); }, p,
              {"batched", "xf::vmap", "return the tensor"});
  check_fails(
      [&] {
        xf::vmap([&](const xf::tensor& row) { xf::save_npz(pz, {{"row", row}}); return row; })(x);
      },
      pz, {"member 'row.npy'", "batched"});
  check_fails([&] { xf::grad([&](const xf::tensor& v) { xf::save_npy(p, v); return xf::sum(v); })(x); }, p,
              {"gradient-tracking", "xf::grad"});
  CHECK_FALSE(fs::exists(p));
  CHECK_FALSE(fs::exists(pz));
  // after the transform returns: an escaped grad wrapper is its value; an escaped vmap one has none
  xf::tensor kept_grad, kept_vmap;
  xf::grad([&](const xf::tensor& v) { kept_grad = v * 2.0; return xf::sum(v); })(x);
  xf::save_npy(p, kept_grad);
  CHECK(xfunc_test::bitwise_equal(xf::load_npy(p), x * 2.0));
  xf::vmap([&](const xf::tensor& row) { kept_vmap = row; return row; })(x);
  check_fails([&] { xf::save_npy(p, kept_vmap); }, p, {"escaped a vmap"});
  // a folder that does not exist
  const fs::path nowhere = temp("no_such_folder") / "a.npy";
  check_fails([&] { xf::save_npy(nowhere, x); }, nowhere, {"cannot open"});
  const fs::path nowhere_z = temp("no_such_folder") / "a.npz";
  check_fails([&] { xf::save_npz(nowhere_z, {{"x", x}}); }, nowhere_z, {"does not exist"});
  // a key a zip member name cannot hold (the message names the file, as every other one)
  check_fails([&] { xf::save_npz(pz, {{std::string("a\0b", 3), x}}); }, pz, {"NUL"});
  CHECK_FALSE(fs::exists(pz));
}

TEST_CASE("save_npy writes the bytes numpy.save writes", "[io][npy]") {
  // numpy-written files of our dtypes (little endian, C order) saved again come out identical:
  // the same header (key order, shape text, padding to 64 bytes) and the same data
  for (const char* name : {"f4.npy", "f8.npy", "i8.npy", "b1.npy", "scalar_f8.npy", "scalar_bool.npy", "empty_f4.npy",
                           "empty_i8.npy"}) {
    INFO(name);
    const fs::path out = temp(std::string("again_") + name);
    xf::save_npy(out, xf::load_npy(data_dir / name));
    CHECK(read_bytes(out) == read_bytes(data_dir / name));
  }
}
