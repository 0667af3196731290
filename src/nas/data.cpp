// IDX and digits-CSV loaders for the DARTS demo and tests.
#include "kubetune/nas/data.hpp"

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>

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
std::uint32_t be32(std::istream& in, const std::string& path) {
  unsigned char b[4];
  in.read(reinterpret_cast<char*>(b), 4);
  KT_CHECK(in.good(), IoError, "idx: truncated header in '", path, "'");
  return (std::uint32_t(b[0]) << 24) | (std::uint32_t(b[1]) << 16) | (std::uint32_t(b[2]) << 8) | b[3];
}
}  // namespace

Dataset read_idx(const std::string& images_path, const std::string& labels_path, int limit) {
  std::ifstream fi(images_path, std::ios::binary), fl(labels_path, std::ios::binary);
  KT_CHECK(fi.is_open(), IoError, "idx: cannot open '", images_path, "'");
  KT_CHECK(fl.is_open(), IoError, "idx: cannot open '", labels_path, "'");
  std::uint32_t m = be32(fi, images_path);
  KT_CHECK(m == 0x803, IoError, "idx: '", images_path, "' has magic 0x", std::hex, m,
           " (expected 0x803; gzip files must be decompressed first)");
  std::uint32_t n = be32(fi, images_path), h = be32(fi, images_path), w = be32(fi, images_path);
  std::uint32_t ml = be32(fl, labels_path);
  KT_CHECK(ml == 0x801, IoError, "idx: '", labels_path, "' has magic 0x", std::hex, ml, " (expected 0x801)");
  std::uint32_t nl = be32(fl, labels_path);
  KT_CHECK(nl == n, IoError, "idx: ", n, " images but ", nl, " labels");
  if (limit > 0 && static_cast<std::uint32_t>(limit) < n) n = static_cast<std::uint32_t>(limit);
  Dataset d;
  d.n = static_cast<int>(n);
  d.c = 1;
  d.h = static_cast<int>(h);
  d.w = static_cast<int>(w);
  std::vector<unsigned char> buf(static_cast<std::size_t>(n) * h * w);
  fi.read(reinterpret_cast<char*>(buf.data()), static_cast<std::streamsize>(buf.size()));
  KT_CHECK(fi.good(), IoError, "idx: '", images_path, "' is truncated");
  d.x.resize(buf.size());
  for (std::size_t i = 0; i < buf.size(); ++i) d.x[i] = buf[i] / 255.0f;
  std::vector<unsigned char> lb(n);
  fl.read(reinterpret_cast<char*>(lb.data()), n);
  KT_CHECK(fl.good(), IoError, "idx: '", labels_path, "' is truncated");
  d.y.assign(lb.begin(), lb.end());
  int mx = 0;
  for (int v : d.y) mx = std::max(mx, v);
  d.num_classes = mx + 1;
  return d;
}

bool fashion_mnist_available(const std::string& dir, bool train) {
  const std::string p = train ? "train" : "t10k";
  namespace fs = std::filesystem;
  return fs::exists(dir + "/" + p + "-images-idx3-ubyte") && fs::exists(dir + "/" + p + "-labels-idx1-ubyte");
}

Dataset load_fashion_mnist(const std::string& dir, bool train, int limit) {
  const std::string p = train ? "train" : "t10k";
  if (!fashion_mnist_available(dir, train)) {
    const bool gz = std::filesystem::exists(dir + "/" + p + "-images-idx3-ubyte.gz");
    KT_THROW(NotFound, "fashion-mnist: no uncompressed ", p, " files in '", dir, "'",
             gz ? " (found .gz files: gunzip them or use the Python loader)"
                : " (install Debian's dataset-fashion-mnist package)");
  }
  Dataset d = read_idx(dir + "/" + p + "-images-idx3-ubyte", dir + "/" + p + "-labels-idx1-ubyte", limit);
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

void standardize(Dataset& d) {
  const std::size_t hw = static_cast<std::size_t>(d.h) * d.w;
  for (int ch = 0; ch < d.c; ++ch) {
    double s = 0, s2 = 0;
    for (int i = 0; i < d.n; ++i)
      for (std::size_t p = 0; p < hw; ++p) {
        double v = d.x[(static_cast<std::size_t>(i) * d.c + ch) * hw + p];
        s += v;
        s2 += v * v;
      }
    const double cnt = static_cast<double>(d.n) * hw;
    const double mean = s / cnt, sd = std::sqrt(std::max(s2 / cnt - mean * mean, 1e-12));
    for (int i = 0; i < d.n; ++i)
      for (std::size_t p = 0; p < hw; ++p) {
        float& v = d.x[(static_cast<std::size_t>(i) * d.c + ch) * hw + p];
        v = static_cast<float>((v - mean) / sd);
      }
  }
}

}  // namespace kubetune::nas
