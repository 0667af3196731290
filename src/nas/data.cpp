// IDX (plain or gzip) and digits-CSV loaders and the standardisation: the one data loader of the nas module.
#include "kubetune/nas/data.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iterator>
#include <limits>
#include <sstream>
#ifdef KUBETUNE_HAVE_ZLIB
#include <zlib.h>
#endif

#include "kubetune/core/error.hpp"

namespace kubetune::nas {

void Dataset::validate() const {
  KT_CHECK(n >= 0 && c >= 1 && h >= 1 && w >= 1, InvalidArgument, "dataset: bad shape [", n, ", ", c, ", ", h, ", ",
           w, "]");
  KT_CHECK(x.size() == static_cast<std::size_t>(n) * c * h * w, InvalidArgument, "dataset: x has ", x.size(),
           " values for shape [", n, ", ", c, ", ", h, ", ", w, "]");
  KT_CHECK(y.size() == static_cast<std::size_t>(n), InvalidArgument, "dataset: ", y.size(), " labels for ", n,
           " images");
  for (int i = 0; i < n; ++i)
    KT_CHECK(y[i] >= 0 && (num_classes == 0 || y[i] < num_classes), InvalidArgument, "dataset: label y[", i,
             "] = ", y[i], " out of range");
}

Dataset Dataset::head(int count) const {
  if (count <= 0 || count >= n) return *this;
  Dataset d = *this;
  d.n = count;
  d.x.resize(static_cast<std::size_t>(count) * c * h * w);
  d.y.resize(count);
  return d;
}

namespace {

constexpr std::uint8_t kGzip0 = 0x1f, kGzip1 = 0x8b;

std::string hex(unsigned v) {
  std::ostringstream os;
  os << "0x" << std::hex << std::setw(2) << std::setfill('0') << v;
  return os.str();
}

#ifdef KUBETUNE_HAVE_ZLIB
/// gunzip of a whole file held in memory; concatenated gzip members are read one after the other (as gzip does).
std::vector<std::uint8_t> gunzip(const std::vector<std::uint8_t>& in, const std::string& path) {
  std::vector<std::uint8_t> out;
  z_stream zs{};
  KT_CHECK(inflateInit2(&zs, 16 + MAX_WBITS) == Z_OK, IoError, "gzip: cannot start zlib for '", path, "'");
  zs.next_in = const_cast<Bytef*>(in.data());
  zs.avail_in = static_cast<uInt>(in.size());  // IDX files are far below 4 GiB; checked by the caller
  std::vector<std::uint8_t> chunk(1 << 16);
  int rc = Z_OK;
  for (;;) {
    zs.next_out = chunk.data();
    zs.avail_out = static_cast<uInt>(chunk.size());
    rc = inflate(&zs, Z_NO_FLUSH);
    out.insert(out.end(), chunk.data(), chunk.data() + (chunk.size() - zs.avail_out));
    if (rc == Z_STREAM_END) {
      if (zs.avail_in == 0) break;
      if (zs.avail_in >= 2 && zs.next_in[0] == kGzip0 && zs.next_in[1] == kGzip1) {  // next member
        inflateReset(&zs);
        continue;
      }
      break;  // trailing bytes after the last member: ignored, as gzip does
    }
    if (rc != Z_OK) break;
    if (zs.avail_in == 0 && zs.avail_out != 0) {  // input exhausted before the end of the stream
      rc = Z_BUF_ERROR;
      break;
    }
  }
  const char* msg = zs.msg;
  inflateEnd(&zs);
  KT_CHECK(rc == Z_STREAM_END, IoError, "gzip: '", path, "' is ", rc == Z_BUF_ERROR ? "truncated" : "corrupt",
           msg ? std::string(" (") + msg + ")" : std::string());
  return out;
}
#endif

std::uint32_t be32(const std::uint8_t* p) {
  return (std::uint32_t(p[0]) << 24) | (std::uint32_t(p[1]) << 16) | (std::uint32_t(p[2]) << 8) | p[3];
}

const char* idx_type_name(unsigned t) {
  switch (t) {
    case 0x08: return "unsigned byte";
    case 0x09: return "signed byte";
    case 0x0B: return "int16";
    case 0x0C: return "int32";
    case 0x0D: return "float32";
    case 0x0E: return "float64";
    default: return "unknown";
  }
}

bool exists(const std::string& p) {
  std::error_code ec;
  return std::filesystem::is_regular_file(p, ec);
}

}  // namespace

bool gzip_supported() noexcept {
#ifdef KUBETUNE_HAVE_ZLIB
  return true;
#else
  return false;
#endif
}

std::vector<std::uint8_t> read_file_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  KT_CHECK(f.is_open(), IoError, "cannot open '", path, "'");
  std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  KT_CHECK(!f.bad(), IoError, "cannot read '", path, "'");
  if (bytes.size() < 2 || bytes[0] != kGzip0 || bytes[1] != kGzip1) return bytes;
#ifdef KUBETUNE_HAVE_ZLIB
  KT_CHECK(bytes.size() < (std::size_t{1} << 32), IoError, "gzip: '", path, "' is larger than 4 GiB");
  return gunzip(bytes, path);
#else
  KT_THROW(Unsupported, "'", path, "' is gzip-compressed but kubetune was built without zlib (gunzip it first)");
#endif
}

IdxArray parse_idx(const std::vector<std::uint8_t>& b, const std::string& path) {
  KT_CHECK(b.size() >= 4, IoError, "idx: '", path, "' has ", b.size(), " bytes, too short for the 4-byte magic");
  KT_CHECK(b[0] == 0 && b[1] == 0, IoError, "idx: '", path, "' field 'magic' starts with ", hex(b[0]), " ",
           hex(b[1]), ", expected 0x00 0x00 (not an IDX file)");
  KT_CHECK(b[2] == 0x08, IoError, "idx: '", path, "' field 'type' = ", hex(b[2]), " (", idx_type_name(b[2]),
           "), expected 0x08 (unsigned byte)");
  const unsigned ndim = b[3];
  KT_CHECK(ndim >= 1, IoError, "idx: '", path, "' field 'ndim' = 0, expected >= 1");
  const std::size_t header = 4 + 4 * static_cast<std::size_t>(ndim);
  KT_CHECK(b.size() >= header, IoError, "idx: '", path, "' is truncated in its header: 'ndim' = ", ndim, " needs ",
           header, " bytes, the file has ", b.size());
  IdxArray a;
  a.dims.resize(ndim);
  std::uint64_t count = 1;
  for (unsigned i = 0; i < ndim; ++i) {
    a.dims[i] = be32(b.data() + 4 + 4 * i);
    count *= a.dims[i];
    KT_CHECK(count <= b.size(), IoError, "idx: '", path, "' field 'dims[", i, "]' = ", a.dims[i],
             ": the dims ask for more values than the file's ", b.size(), " bytes");
  }
  const std::size_t payload = b.size() - header;
  KT_CHECK(payload == count, IoError, "idx: '", path, "' field 'values': ", payload, " bytes after the header for ",
           count, " values (dims ", [&] {
             std::ostringstream os;
             for (unsigned i = 0; i < ndim; ++i) os << (i ? " x " : "") << a.dims[i];
             return os.str();
           }(),
           payload < count ? "): truncated" : "): trailing bytes");
  a.values.assign(b.begin() + static_cast<std::ptrdiff_t>(header), b.end());
  return a;
}

IdxArray read_idx_file(const std::string& path) { return parse_idx(read_file_bytes(path), path); }

Dataset read_idx(const std::string& images_path, const std::string& labels_path, int limit) {
  KT_CHECK(limit >= 0, InvalidArgument, "param 'limit' = ", limit, " must be >= 0 (0: all samples)");
  IdxArray im = read_idx_file(images_path);
  KT_CHECK(im.dims.size() == 3, IoError, "idx: '", images_path, "' field 'ndim' = ", im.dims.size(),
           ", expected 3 for images [n, h, w]");
  IdxArray lb = read_idx_file(labels_path);
  KT_CHECK(lb.dims.size() == 1, IoError, "idx: '", labels_path, "' field 'ndim' = ", lb.dims.size(),
           ", expected 1 for labels [n]");
  KT_CHECK(im.dims[0] == lb.dims[0], IoError, "idx: '", images_path, "' holds ", im.dims[0], " images but '",
           labels_path, "' ", lb.dims[0], " labels (field 'dims[0]')");
  KT_CHECK(im.dims[0] <= static_cast<std::uint32_t>(std::numeric_limits<int>::max()) && im.dims[1] >= 1 &&
               im.dims[2] >= 1 && im.dims[1] <= 65535 && im.dims[2] <= 65535,
           IoError, "idx: '", images_path, "' field 'dims' = ", im.dims[0], " x ", im.dims[1], " x ", im.dims[2],
           " is not a usable image set");
  std::uint32_t n = im.dims[0];
  if (limit > 0 && static_cast<std::uint32_t>(limit) < n) n = static_cast<std::uint32_t>(limit);
  Dataset d;
  d.n = static_cast<int>(n);
  d.c = 1;
  d.h = static_cast<int>(im.dims[1]);
  d.w = static_cast<int>(im.dims[2]);
  const std::size_t count = static_cast<std::size_t>(n) * d.h * d.w;
  d.x.resize(count);
  for (std::size_t i = 0; i < count; ++i) d.x[i] = im.values[i] / 255.0f;
  d.y.assign(lb.values.begin(), lb.values.begin() + n);
  int mx = 0;
  for (int v : d.y) mx = std::max(mx, v);
  d.num_classes = mx + 1;
  return d;
}

std::string fashion_mnist_dir(const std::string& dir) {
  if (!dir.empty()) return dir;
  const char* env = std::getenv(kSharedDataEnv);
  if (env && *env) return std::string(env) + "/fashion-mnist";
  return kFashionMnistDir;
}

std::string fashion_mnist_file(const std::string& dir, bool train, const std::string& kind) {
  KT_CHECK(kind == "images-idx3-ubyte" || kind == "labels-idx1-ubyte", InvalidArgument, "param 'kind' = '", kind,
           "' must be 'images-idx3-ubyte' or 'labels-idx1-ubyte'");
  const std::string base = fashion_mnist_dir(dir) + "/" + (train ? "train" : "t10k") + "-" + kind;
  if (exists(base)) return base;
  if (exists(base + ".gz")) return base + ".gz";
  return {};
}

bool fashion_mnist_available(const std::string& dir, bool train) {
  return !fashion_mnist_file(dir, train, "images-idx3-ubyte").empty() &&
         !fashion_mnist_file(dir, train, "labels-idx1-ubyte").empty();
}

Dataset load_fashion_mnist(const std::string& dir, bool train, int limit) {
  const std::string where = fashion_mnist_dir(dir);
  std::string paths[2];
  const char* kinds[2] = {"images-idx3-ubyte", "labels-idx1-ubyte"};
  for (int i = 0; i < 2; ++i) {
    paths[i] = fashion_mnist_file(dir, train, kinds[i]);
    if (paths[i].empty())
      KT_THROW(NotFound, "Fashion-MNIST file ", train ? "train" : "t10k", "-", kinds[i], "[.gz] not found in '",
               where, "' (pass the directory, set ", kSharedDataEnv,
               ", or install Debian's dataset-fashion-mnist package)");
  }
  Dataset d = read_idx(paths[0], paths[1], limit);
  for (int i = 0; i < d.n; ++i)
    KT_CHECK(d.y[i] < 10, IoError, "idx: '", paths[1], "' label ", i, " = ", d.y[i],
             " is not a Fashion-MNIST class (0..9)");
  d.num_classes = 10;
  return d;
}

Dataset load_digits_csv(const std::string& path) {
  std::ifstream in(path);
  KT_CHECK(in.is_open(), IoError, "digits: cannot open '", path, "'");
  Dataset d;
  d.c = 1;
  d.h = 8;
  d.w = 8;
  d.num_classes = 10;
  std::string line;
  int lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (line.empty()) continue;
    std::stringstream ss(line);
    std::string tok;
    std::vector<double> vals;
    while (std::getline(ss, tok, ',')) vals.push_back(std::stod(tok));
    KT_CHECK(vals.size() == 65, IoError, "digits: line ", lineno, " of '", path, "' has ", vals.size(),
             " fields, expected 65");
    for (int i = 0; i < 64; ++i) d.x.push_back(static_cast<float>(vals[i] / 16.0));
    d.y.push_back(static_cast<int>(vals[64]));
    ++d.n;
  }
  d.validate();
  return d;
}

void standardize(float* x, std::int64_t n, int c, std::int64_t hw) {
  KT_CHECK(n >= 0 && c >= 1 && hw >= 1, InvalidArgument, "standardize: bad shape [n=", n, ", c=", c, ", hw=", hw, "]");
  if (n == 0) return;
  KT_CHECK(x != nullptr, InvalidArgument, "param 'x' must not be null");
  const double count = static_cast<double>(n) * static_cast<double>(hw);
  for (int ch = 0; ch < c; ++ch) {
    double s = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      const float* p = x + (i * c + ch) * hw;
      for (std::int64_t q = 0; q < hw; ++q) s += p[q];
    }
    const double mean = s / count;
    double ss = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      const float* p = x + (i * c + ch) * hw;
      for (std::int64_t q = 0; q < hw; ++q) ss += (p[q] - mean) * (p[q] - mean);
    }
    const double sd = std::sqrt(ss / count);
    const double inv = sd > 0 ? 1.0 / sd : 0.0;  // a constant channel becomes all zeros
    for (std::int64_t i = 0; i < n; ++i) {
      float* p = x + (i * c + ch) * hw;
      for (std::int64_t q = 0; q < hw; ++q) p[q] = static_cast<float>((p[q] - mean) * inv);
    }
  }
}

void standardize(Dataset& d) {
  d.validate();
  standardize(d.x.data(), d.n, d.c, static_cast<std::int64_t>(d.h) * d.w);
}

}  // namespace kubetune::nas
