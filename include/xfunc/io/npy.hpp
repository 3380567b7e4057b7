#pragma once
/// \file
/// NumPy .npy files: xf::save_npy and xf::load_npy (docs/interchange.md).
#include <algorithm>
#include <bit>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <sys/stat.h>

#include <xfunc/backend/cpu.hpp>
#include <xfunc/core/error.hpp>
#include <xfunc/core/tensor.hpp>
#include <xfunc/dispatch/wrappers.hpp>

namespace xfunc {
namespace detail {

// NOTE: [NumPy files and xtensor's xnpy]
// The .npy format (numpy.lib.format): the magic "\x93NUMPY", a major and minor version byte, the
// header length (2 bytes little endian in version 1.0, 4 bytes in 2.0 and 3.0), a header that is a
// Python dict literal {'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), } padded with
// spaces and ended by '\n', then the elements in C or Fortran order, in the byte order of descr.
//
// What we take from xtensor/xnpy.hpp, and why: nothing, in the end.
// - Writing: xt::detail::write_header writes exactly the header numpy writes, and we used it at
//   first; but <xtensor/xnpy.hpp> brings <regex>, <complex>, <iostream> and xadapt into every
//   translation unit that includes <xfunc/xfunc.hpp> (about 1 s of parsing at -O2 on our
//   machine), for 25 lines of formatting. npy_header_of below writes the same bytes (version 1.0,
//   or 2.0 when long; numpy's key order; padded with spaces to a multiple of 64 bytes, ended by
//   '\n'). xt::dump_npy, which also writes the data, does not check that the writes succeeded
//   and goes through an xexpression per dtype; we write the contiguous buffer in one call and
//   check the stream.
// - Reading: xt::load_npy<T> needs the element type at compile time and the exact
//   typestring of the host (no widening, no other byte order); it reads the header length with
//   signed chars (a length byte >= 0x80 is sign-extended into a wrong length); it allocates what
//   the header's shape asks for before knowing whether the file holds that much; it ignores a
//   short read (a truncated file loads as garbage); its shape parser accepts junk; it requires the
//   header keys in one order (the format says readers must not); it has no version 3.0; and its
//   errors are std::runtime_error without the file's name. So the reader below is ours: a small
//   parser for the header dict, checks of every length against the bytes there are, and a
//   conversion loop for byte order, Fortran order and widening.
// The byte order written is the host's, marked in descr ('<' on every platform xfunc builds for);
// the reader accepts '<', '>', '|' and '='.

/// The bytes of one .npy file, from a file or an .npz member; every read is checked against the
/// size, so that a short file is reported as truncated rather than read past.
struct npy_reader {
  const char* fn;         // the public call, e.g. "xf::load_npy"
  std::string where;      // "'/p/a.npy'" or "member 'a.npy' of '/p/b.npz'"
  std::uint64_t size = 0;  // bytes in all
  std::uint64_t pos = 0;
  /// Reads up to n bytes into dst and returns how many (0 at the end); throws on an I/O error.
  std::function<std::size_t(char*, std::size_t)> read_some;

  template <class... A>
  [[noreturn]] void fail_here(const A&... parts) const {
    fail(fn, ": ", where, ": ", parts...);
  }
  std::uint64_t left() const { return size - pos; }
  /// Reads exactly n bytes; `what` names them in the message when the file ends first.
  void read_exact(char* dst, std::uint64_t n, const char* what) {
    if (left() < n)
      fail_here("truncated .npy file: its ", what, " needs ", n, " bytes at offset ", pos, ", but only ", left(),
                " remain (", size, " bytes in all); the file was cut short (an interrupted write or copy?): write it again");
    std::uint64_t got = 0;
    while (got < n) {
      const std::size_t k = read_some(dst + got, static_cast<std::size_t>(std::min<std::uint64_t>(n - got, 1u << 30)));
      if (k == 0)
        fail_here("truncated .npy file: it ended after ", pos + got, " of the ", size,
                  " bytes it had when opened (it shrank while being read?); read it again once it is complete");
      got += k;
    }
    pos += n;
  }
};

/// What the header of a .npy file says.
struct npy_header {
  std::string descr;
  bool fortran_order = false;
  std::vector<std::int64_t> shape;
};

/// Printable excerpt of a header for messages (non-ASCII bytes as '?', at most 120 characters).
inline std::string npy_header_excerpt(std::string_view h) {
  std::string out;
  for (char c : h.substr(0, 120)) out += (c >= 0x20 && c < 0x7f) ? c : (c == '\n' ? ' ' : '?');
  if (h.size() > 120) out += "...";
  return out;
}

/// "(2, 3)", "(3,)" or "()", as Python prints a shape.
inline std::string npy_shape_text(const std::vector<std::int64_t>& shape) {
  std::string out = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + (shape.size() == 1 ? ",)" : ")");
}

/// A parser for the header dict: the subset of Python literals numpy writes (strings, True and
/// False, tuples of integers), in any key order, with any whitespace, a trailing comma allowed.
class npy_header_parser {
 public:
  npy_header_parser(std::string_view text, const npy_reader& r) : s_(text), r_(r) {}

  npy_header parse() {
    npy_header h;
    bool have_descr = false, have_fortran = false, have_shape = false;
    ws();
    expect('{', "the header must be a Python dict, starting with '{'");
    for (;;) {
      ws();
      if (eat('}')) break;
      const std::string key = string_lit("a key");
      ws();
      expect(':', "':' after a key");
      ws();
      if (key == "descr") {
        if (peek() == '[')  // numpy writes structured dtypes as a list of (name, type) pairs
          r_.fail_here("unsupported dtype in the .npy header: a structured (record) array, fields ",
                       npy_header_excerpt(s_.substr(i_, s_.find(']', i_) - i_ + 1)),
                       "; xfunc tensors hold one numeric type: save each field as its own array (a['field'])");
        h.descr = string_lit("the 'descr' value (a dtype string such as '<f8')");
        have_descr = true;
      } else if (key == "fortran_order") {
        if (word("True")) h.fortran_order = true;
        else if (word("False")) h.fortran_order = false;
        else bad("the 'fortran_order' value must be True or False");
        have_fortran = true;
      } else if (key == "shape") {
        h.shape = shape_tuple();
        have_shape = true;
      } else {
        bad("unknown key '" + key + "' (a .npy header has exactly 'descr', 'fortran_order' and 'shape')");
      }
      ws();
      if (eat(',')) continue;
      ws();
      expect('}', "',' or '}' after a value");
      break;
    }
    ws();
    if (i_ != s_.size()) bad("text after the closing '}'");
    if (!have_descr) bad("no 'descr' key");
    if (!have_fortran) bad("no 'fortran_order' key");
    if (!have_shape) bad("no 'shape' key");
    return h;
  }

 private:
  [[noreturn]] void bad(const std::string& what) const {
    r_.fail_here("malformed .npy header (", what, ", at character ", i_, " of \"", npy_header_excerpt(s_),
                 "\"); the file is damaged or was not written by numpy: write it again with numpy.save");
  }
  char peek() const { return i_ < s_.size() ? s_[i_] : '\0'; }
  void ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) ++i_;
  }
  bool eat(char c) {
    if (peek() != c) return false;
    ++i_;
    return true;
  }
  void expect(char c, const char* what) {
    if (!eat(c)) bad(std::string("expected ") + what);
  }
  bool word(std::string_view w) {
    if (s_.substr(i_, w.size()) != w) return false;
    i_ += w.size();
    return true;
  }
  std::string string_lit(const char* what) {
    const char q = peek();
    if (q != '\'' && q != '"') bad(std::string("expected a quoted string for ") + what);
    ++i_;
    std::string out;
    while (i_ < s_.size() && s_[i_] != q) {
      if (s_[i_] == '\\') bad("an escape sequence in a string (numpy writes none)");
      out += s_[i_++];
    }
    if (!eat(q)) bad("an unterminated string");
    return out;
  }
  std::vector<std::int64_t> shape_tuple() {
    std::vector<std::int64_t> shape;
    expect('(', "'(' opening the 'shape' tuple");
    for (;;) {
      ws();
      if (eat(')')) break;
      std::int64_t v = 0;
      const char* b = s_.data() + i_;
      const char* e = s_.data() + s_.size();
      if (b == e || *b < '0' || *b > '9') bad("the 'shape' tuple must hold non-negative integers");
      const auto [p, ec] = std::from_chars(b, e, v);
      if (ec != std::errc()) bad("an extent in 'shape' does not fit a 64-bit integer");
      i_ += static_cast<std::size_t>(p - b);
      eat('L');  // Python 2 wrote long integers with a suffix
      shape.push_back(v);
      ws();
      if (eat(',')) continue;
      ws();
      if (shape.size() == 1) bad("a 1-element 'shape' tuple needs a trailing comma, as in (3,)");
      expect(')', "',' or ')' in the 'shape' tuple");
      break;
    }
    return shape;
  }

  std::string_view s_;
  const npy_reader& r_;
  std::size_t i_ = 0;
};

/// The element type of a .npy file: its kind ('b', 'i', 'u', 'f'), size in bytes, whether its
/// byte order differs from the host's, and the xfunc dtype it loads as.
struct npy_dtype {
  char kind = 0;
  std::size_t size = 0;
  bool swap = false;
  dtype to = dtype::float32;
};

/// Parses descr and applies the widening rule (see docs/interchange.md, "NumPy files"): bool →
/// bool; int8..int64 and uint8..uint32 → int64; uint64 → int64 when every value fits; float16 and
/// float32 → float32; float64 → float64. Anything else throws, saying what it is.
inline npy_dtype parse_npy_descr(const std::string& descr, const npy_reader& r) {
  std::string_view d = descr;
  char order = '=';
  if (!d.empty() && (d[0] == '<' || d[0] == '>' || d[0] == '|' || d[0] == '=')) {
    order = d[0];
    d.remove_prefix(1);
  }
  npy_dtype out;
  out.kind = d.empty() ? '\0' : d[0];
  if (!d.empty()) d.remove_prefix(1);
  std::size_t size = 0;
  const auto [p, ec] = std::from_chars(d.data(), d.data() + d.size(), size);
  const std::string_view rest = d.substr(static_cast<std::size_t>(p - d.data()));
  const bool sized = ec == std::errc() && rest.empty();
  out.size = sized ? size : 0;
  auto unsupported = [&](const char* what, const char* fix) {
    r.fail_here("unsupported dtype '", descr, "' in the .npy header (", what,
                "); xf::load_npy reads bool, int8/16/32/64, uint8/16/32/64 (values up to 2^63-1) and "
                "float16/32/64 into xfunc's bool, int64, float32 and float64: ", fix);
  };
  const char* convert = "convert the array in numpy first, e.g. np.save(path, a.astype(np.float64))";
  switch (out.kind) {
    case 'b':
      if (sized && size == 1) out.to = dtype::boolean;
      else unsupported("a boolean of unusual size", convert);
      break;
    case 'i':
    case 'u':
      if (sized && (size == 1 || size == 2 || size == 4 || size == 8)) out.to = dtype::int64;
      else unsupported("an integer of unusual size", convert);
      break;
    case 'f':
      if (sized && size == 2) out.to = dtype::float32;  // float16 widens exactly to float32
      else if (sized && size == 4) out.to = dtype::float32;
      else if (sized && size == 8) out.to = dtype::float64;
      else if (sized && (size == 10 || size == 12 || size == 16))
        unsupported("long double: converting it to float64 would round it silently",
                    "if float64 precision is enough, save a.astype(np.float64)");
      else unsupported("a float of unusual size", convert);
      break;
    case 'c': unsupported("complex numbers; xfunc tensors are real", "save a.real and a.imag as two arrays"); break;
    case 'O':
      unsupported("Python objects, stored with pickle, which this reader does not run",
                  "convert the array to a numeric dtype in numpy (a.astype(np.float64))");
      break;
    case 'U':
    case 'S':
    case 'a': unsupported("strings", "xfunc tensors hold numbers only; encode the strings as integer codes"); break;
    case 'V': unsupported("raw bytes (void)", convert); break;
    case 'M':
    case 'm': unsupported("datetimes or timedeltas", "save a.astype(np.int64) (counts of the unit) instead"); break;
    default: unsupported("not a dtype this reader knows", convert);
  }
  if (size > 1) {
    if (order == '|' || order == '=') out.swap = false;  // (numpy writes '|' for 1-byte types only)
    else out.swap = (order == '<') != (std::endian::native == std::endian::little);
  }
  return out;
}

/// The IEEE half-precision value with bits h, as a float (exact: every half is a float).
inline float half_to_float(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
  if (exp == 0) {  // zero or subnormal: man * 2^-24
    const float f = std::ldexp(static_cast<float>(man), -24);
    return sign ? -f : f;
  }
  const std::uint32_t bits = exp == 0x1f ? (sign | 0x7f800000u | (man << 13))  // inf, nan (payload kept)
                                         : (sign | ((exp + 112u) << 23) | (man << 13));
  return std::bit_cast<float>(bits);
}

/// Destination offsets, in file order: C order is the identity; Fortran order walks the C-order
/// buffer with the first index fastest.
class npy_order {
 public:
  npy_order(const std::vector<std::int64_t>& shape, bool fortran)
      : shape_(shape), fortran_(fortran && shape.size() > 1), idx_(shape.size(), 0), cstride_(shape.size(), 1) {
    for (std::size_t k = shape.size(); k-- > 1;) cstride_[k - 1] = cstride_[k] * shape[k];
  }
  /// Offset of the next element and advances.
  std::int64_t next() {
    if (!fortran_) return off_++;
    const std::int64_t here = off_;
    // odometer, dimension 0 fastest
    for (std::size_t k = 0; k < shape_.size(); ++k) {
      off_ += cstride_[k];
      if (++idx_[k] < shape_[k] || k + 1 == shape_.size()) break;
      off_ -= idx_[k] * cstride_[k];
      idx_[k] = 0;
    }
    return here;
  }

 private:
  std::vector<std::int64_t> shape_;
  bool fortran_;
  std::vector<std::int64_t> idx_, cstride_;
  std::int64_t off_ = 0;
};

/// Reads n elements of file type S, converts each to D, stores them at their C-order places.
template <class S, class D, class Conv>
void read_npy_elements(npy_reader& r, D* out, std::int64_t n, const npy_header& h, bool swap, Conv conv) {
  npy_order order(h.shape, h.fortran_order);
  constexpr std::int64_t chunk = std::max<std::int64_t>(1, (std::int64_t(1) << 16) / std::int64_t(sizeof(S)));
  std::vector<char> buf(static_cast<std::size_t>(std::min(n, chunk)) * sizeof(S));
  for (std::int64_t done = 0; done < n;) {
    const std::int64_t k = std::min(n - done, chunk);
    r.read_exact(buf.data(), static_cast<std::uint64_t>(k) * sizeof(S), "data");
    for (std::int64_t j = 0; j < k; ++j) {
      char* e = buf.data() + j * std::int64_t(sizeof(S));
      if (swap) std::reverse(e, e + sizeof(S));
      S v;
      std::memcpy(&v, e, sizeof(S));
      out[order.next()] = conv(v, done + j);
    }
    done += k;
  }
}

/// The tensor a .npy stream holds (see NOTE: [NumPy files and xtensor's xnpy]).
inline tensor read_npy(npy_reader& r) {
  // magic and version
  constexpr std::string_view magic("\x93NUMPY", 6);
  char pre[8] = {};
  const std::size_t have = static_cast<std::size_t>(std::min<std::uint64_t>(r.size, 8));
  r.read_exact(pre, have, "magic string");
  const std::string_view got(pre, std::min<std::size_t>(have, 6));
  if (got != magic.substr(0, got.size()) || r.size == 0) {
    if (have >= 4 && std::string_view(pre, 2) == "PK")
      r.fail_here("not a .npy file: it is a zip archive (an .npz file of several arrays?); read it with xf::load_npz");
    r.fail_here(r.size == 0 ? "empty file, not a .npy array"
                            : "not a .npy file: it does not start with the .npy magic string \"\\x93NUMPY\"",
                "; pass a file written by numpy.save or xf::save_npy");
  }
  if (have < 8) r.read_exact(pre + have, 8 - have, "magic string and format version");  // throws: truncated
  const int major = static_cast<unsigned char>(pre[6]), minor = static_cast<unsigned char>(pre[7]);
  if (!((major == 1 || major == 2 || major == 3) && minor == 0))
    r.fail_here("unsupported .npy format version ", major, ".", minor,
                " (this reader knows 1.0, 2.0 and 3.0); save the file with numpy.save or xf::save_npy");
  // header length, little endian, 2 bytes (1.0) or 4 (2.0, 3.0)
  unsigned char len_bytes[4] = {};
  const unsigned len_size = major == 1 ? 2 : 4;
  r.read_exact(reinterpret_cast<char*>(len_bytes), len_size, "header length");
  std::uint64_t hlen = 0;
  for (unsigned i = len_size; i-- > 0;) hlen = (hlen << 8) | len_bytes[i];
  std::string text(static_cast<std::size_t>(std::min<std::uint64_t>(hlen, r.left())), '\0');
  r.read_exact(text.data(), hlen, "header");
  const npy_header h = npy_header_parser(text, r).parse();
  const npy_dtype ft = parse_npy_descr(h.descr, r);

  // shape: within xfunc's limits, and the data there in full before anything is allocated
  if (h.shape.size() > shape_t::max_dims)
    r.fail_here("the .npy array has ", h.shape.size(), " dimensions; xfunc tensors have at most ", shape_t::max_dims,
                ": reshape it in numpy first");
  // the element count, or that it exceeds 2^64 (only when no extent is 0)
  std::uint64_t n = 1;
  bool overflow = false;
  if (std::find(h.shape.begin(), h.shape.end(), 0) != h.shape.end()) n = 0;
  else
    for (std::int64_t e : h.shape) {
      const auto u = static_cast<std::uint64_t>(e);
      if (n > std::numeric_limits<std::uint64_t>::max() / u) overflow = true;
      n *= u;
    }
  if (overflow || (n > 0 && n > r.left() / ft.size))
    r.fail_here("truncated .npy file: its header says shape ", npy_shape_text(h.shape), " of '", h.descr, "', ",
                overflow ? std::string("more bytes than any file holds") : std::to_string(n * ft.size) + " bytes of data",
                ", but only ", r.left(), " bytes follow the header; the file was cut short (an interrupted write or copy?): "
                "write it again");
  tensor t;
  try {
    t = empty_dense(shape_t(h.shape.begin(), h.shape.end()), ft.to, cpu, "xf::load_npy");
  } catch (const error& e) {
    r.fail_here("cannot make a tensor for the .npy array: ", e.what());
  }
  const auto count = static_cast<std::int64_t>(n);
  if (count == 0) return t;

  auto same = [](auto v, std::int64_t) { return v; };
  auto widen = [](auto v, std::int64_t) { return static_cast<std::int64_t>(v); };
  switch (ft.kind) {
    case 'b': {
      bool* out = t.impl()->data<bool>();
      read_npy_elements<unsigned char>(r, out, count, h, false, [](unsigned char v, std::int64_t) { return v != 0; });
      break;
    }
    case 'i': {
      std::int64_t* out = t.impl()->data<std::int64_t>();
      if (ft.size == 1) read_npy_elements<std::int8_t>(r, out, count, h, false, widen);
      else if (ft.size == 2) read_npy_elements<std::int16_t>(r, out, count, h, ft.swap, widen);
      else if (ft.size == 4) read_npy_elements<std::int32_t>(r, out, count, h, ft.swap, widen);
      else if (!ft.swap && (!h.fortran_order || h.shape.size() < 2))  // the file's bytes are the tensor's
        r.read_exact(reinterpret_cast<char*>(out), n * 8, "data");
      else read_npy_elements<std::int64_t>(r, out, count, h, ft.swap, same);
      break;
    }
    case 'u': {
      std::int64_t* out = t.impl()->data<std::int64_t>();
      if (ft.size == 1) read_npy_elements<std::uint8_t>(r, out, count, h, false, widen);
      else if (ft.size == 2) read_npy_elements<std::uint16_t>(r, out, count, h, ft.swap, widen);
      else if (ft.size == 4) read_npy_elements<std::uint32_t>(r, out, count, h, ft.swap, widen);
      else
        read_npy_elements<std::uint64_t>(r, out, count, h, ft.swap, [&](std::uint64_t v, std::int64_t i) {
          if (v > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
            r.fail_here("uint64 value ", v, " (element ", i, " in file order) does not fit int64, xfunc's integer dtype; "
                        "convert the array in numpy first (a.astype(np.float64), or a.astype(np.int64) if wrapping is meant)");
          return static_cast<std::int64_t>(v);
        });
      break;
    }
    case 'f': {
      const bool direct = !ft.swap && (!h.fortran_order || h.shape.size() < 2);
      if (ft.size == 2) {
        read_npy_elements<std::uint16_t>(r, t.impl()->data<float>(), count, h, ft.swap,
                                         [](std::uint16_t v, std::int64_t) { return half_to_float(v); });
      } else if (ft.size == 4) {
        float* out = t.impl()->data<float>();
        if (direct) r.read_exact(reinterpret_cast<char*>(out), n * 4, "data");
        else read_npy_elements<float>(r, out, count, h, ft.swap, same);
      } else {
        double* out = t.impl()->data<double>();
        if (direct) r.read_exact(reinterpret_cast<char*>(out), n * 8, "data");
        else read_npy_elements<double>(r, out, count, h, ft.swap, same);
      }
      break;
    }
    default: break;  // (parse_npy_descr accepted only these kinds)
  }
  return t;
}

/// The plain cpu tensor to save for t, contiguous in C order: rejects undefined and meta tensors
/// and tensors of a transform that is running. `fn` and `what` name the call and the file.
inline tensor npy_savable(const tensor& t, const char* fn, const std::string& what) {
  if (!t.defined())
    fail(fn, ": cannot save an undefined tensor (a default-constructed xf::tensor) to ", what, "; assign it a value first");
  tensor v = t;
  while (!v.impl()->is_dense()) {
    const tensor_impl& p = *v.impl();
    const char* kind = p.kind == impl_kind::batched  ? "a batched tensor of xf::vmap"
                       : p.kind == impl_kind::grad   ? "a gradient-tracking tensor of xf::grad/xf::vjp"
                       : p.kind == impl_kind::dual   ? "a dual tensor of xf::jvp"
                                                     : "a tensor of xf::functionalize";
    if (p.is_live_wrapper())
      fail(fn, ": cannot save ", kind, " (level ", p.owner_level, ") to ", what,
           " while that transform runs: inside it, a tensor stands for values the transform is still computing "
           "(each example of a batch, a traced value); return the tensor from the transformed function and save "
           "the result");
    if (p.kind == impl_kind::batched)
      fail(fn, ": cannot save a tensor that escaped a vmap call to ", what,
           ": outside vmap it has no value (each example had its own); return it from the vmapped function instead, "
           "so that vmap stacks it, and save that");
    v = tensor(p.inner);  // a wrapper of a transform that has returned is its value
  }
  if (v.device() != cpu)
    fail(fn, ": cannot save a ", v.device(), " tensor to ", what, ": ",
         v.device() == meta ? "meta tensors have shapes but no data; compute the tensor on xf::cpu"
                            : "only cpu tensors are saved; copy it with .to(xf::cpu) first");
  return backend::contiguous_as(v, v.dtype());
}

/// The .npy header (magic, version, length, dict, padding) of a contiguous tensor, byte for byte
/// what numpy.save writes (NOTE: [NumPy files and xtensor's xnpy]).
inline std::string npy_header_of(const tensor& c) {
  const char* descr = c.dtype() == dtype::float32   ? "<f4"
                      : c.dtype() == dtype::float64 ? "<f8"
                      : c.dtype() == dtype::int64   ? "<i8"
                                                    : "|b1";
  static_assert(std::endian::native == std::endian::little, "xf::save_npy writes little-endian descrs");
  std::string dict = std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': (";
  for (std::size_t d = 0; d < c.shape().size(); ++d)
    dict += std::to_string(c.shape()[d]) + (c.shape().size() == 1 ? "," : d + 1 < c.shape().size() ? ", " : "");
  dict += "), }";
  // magic (6) + version (2) + length (2, or 4 in version 2.0) + dict + padding + '\n', a multiple of 64
  const bool v2 = 6 + 2 + 2 + dict.size() + 1 >= 255 * 255;
  const std::size_t prefix = v2 ? 12 : 10;
  const std::size_t total = (prefix + dict.size() + 1 + 63) / 64 * 64;
  dict.append(total - prefix - dict.size() - 1, ' ');
  dict += '\n';
  const std::size_t len = dict.size();
  std::string out = "\x93NUMPY";
  out += static_cast<char>(v2 ? 2 : 1);
  out += '\0';
  for (std::size_t i = 0; i < (v2 ? 4u : 2u); ++i) out += static_cast<char>((len >> (8 * i)) & 0xff);
  return out + dict;
}

/// The data bytes of a contiguous tensor.
inline std::string_view npy_data_of(const tensor& c) {
  const auto bytes = static_cast<std::size_t>(c.numel()) * dtype_size(c.dtype());
  return visit_dtype(c.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    return std::string_view(reinterpret_cast<const char*>(c.impl()->template data<T>()), bytes);
  });
}

/// "'path'" for messages.
inline std::string quoted_path(const std::string& p) { return "'" + p + "'"; }

/// Why a file cannot be opened for reading, or "" when it can be tried: missing, a directory...
/// (POSIX stat rather than <filesystem>, which would cost every includer of xfunc.hpp its parse.)
inline std::string npy_unreadable_reason(const std::string& path, std::uint64_t* size = nullptr) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    return errno == ENOENT ? "no such file; check the path" : std::strerror(errno);
  if (S_ISDIR(st.st_mode)) return "it is a directory, not a file";
  if (!S_ISREG(st.st_mode)) return "not a regular file";
  if (size) *size = static_cast<std::uint64_t>(st.st_size);
  return "";
}

}  // namespace detail

/// Writes t to `path` as a NumPy .npy file (format 1.0, C order, the host's byte order: little
/// endian on every platform xfunc builds for), which numpy.load reads with t's dtype and shape.
/// Views and non-contiguous tensors are written in C order. The path is used as given (no ".npy"
/// is appended). Throws xf::error ("npy" and the path) for an undefined or meta tensor, a tensor
/// of a transform that is running (save the transform's result instead), or a failed write.
inline void save_npy(const std::string& path, const tensor& t) {
  const std::string what = "the .npy file " + detail::quoted_path(path);
  const tensor c = detail::npy_savable(t, "xf::save_npy", what);
  const std::string header = detail::npy_header_of(c);
  const std::string_view data = detail::npy_data_of(c);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) {
    const int err = errno;
    detail::fail("xf::save_npy: cannot open ", what, " for writing (", std::strerror(err),
                 "); check that its folder exists and is writable");
  }
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
  out.close();
  if (!out) {
    const int err = errno;
    std::remove(path.c_str());  // a partial file would load as truncated later
    detail::fail("xf::save_npy: writing ", what, " failed (", std::strerror(err), "); check the free space and permissions");
  }
}

/// Reads a NumPy .npy file. Element types widen to xfunc's dtypes: bool → xf::b8; int8, int16,
/// int32, int64, uint8, uint16, uint32 → xf::i64; uint64 → xf::i64 when every value fits (else it
/// throws); float16, float32 → xf::f32; float64 → xf::f64. Big- and little-endian files and C and
/// Fortran order are read; the result is a contiguous cpu tensor in C order. Throws xf::error
/// ("npy" and the path) for a missing, truncated or foreign file, a malformed header, an
/// unsupported dtype (complex, object, strings, structured, datetime, long double) or more than
/// 16 dimensions.
inline tensor load_npy(const std::string& path) {
  const std::string where = detail::quoted_path(path);
  std::uint64_t size = 0;
  if (const std::string why = detail::npy_unreadable_reason(path, &size); !why.empty())
    detail::fail("xf::load_npy: cannot read the .npy file ", where, ": ", why);
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int err = errno;
    detail::fail("xf::load_npy: cannot open the .npy file ", where, " (", std::strerror(err), "); check its permissions");
  }
  detail::npy_reader r{"xf::load_npy", where, size, 0, {}};
  r.read_some = [&](char* dst, std::size_t n) -> std::size_t {
    in.read(dst, static_cast<std::streamsize>(n));
    if (in.bad()) r.fail_here("reading the .npy file failed (an I/O error)");
    return static_cast<std::size_t>(in.gcount());
  };
  return detail::read_npy(r);
}

}  // namespace xfunc
