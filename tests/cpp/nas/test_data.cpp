// The nas data loader: IDX files written here (plain and gzip) read back exactly, malformed headers refused with
// errors naming the file and field, the Fashion-MNIST lookup, and the standardisation.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "kubetune/core/error.hpp"
#include "kubetune/nas/data.hpp"

using namespace kubetune::nas;
namespace fs = std::filesystem;

namespace {

using Bytes = std::vector<std::uint8_t>;

Bytes idx_bytes(const std::vector<std::uint32_t>& dims, const Bytes& values, std::uint8_t type = 0x08) {
  Bytes b{0, 0, type, static_cast<std::uint8_t>(dims.size())};
  for (auto d : dims)
    for (int s = 24; s >= 0; s -= 8) b.push_back(static_cast<std::uint8_t>(d >> s));
  b.insert(b.end(), values.begin(), values.end());
  return b;
}

std::uint32_t crc32(const Bytes& b) {
  std::uint32_t c = 0xFFFFFFFFu;
  for (std::uint8_t v : b) {
    c ^= v;
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
  }
  return ~c;
}

void le32(Bytes& out, std::uint32_t v) {
  for (int s = 0; s < 32; s += 8) out.push_back(static_cast<std::uint8_t>(v >> s));
}

/// A gzip member (RFC 1952) whose deflate stream (RFC 1951) is stored blocks of at most `block` bytes, written
/// by hand so the test does not depend on the encoder it checks.
Bytes gzip_stored(const Bytes& data, std::size_t block = 7) {
  Bytes g{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff};
  std::size_t pos = 0;
  do {
    const std::size_t len = std::min(block, data.size() - pos);
    const bool last = pos + len == data.size();
    g.push_back(last ? 1 : 0);
    g.push_back(static_cast<std::uint8_t>(len));
    g.push_back(static_cast<std::uint8_t>(len >> 8));
    g.push_back(static_cast<std::uint8_t>(~len));
    g.push_back(static_cast<std::uint8_t>(~len >> 8));
    g.insert(g.end(), data.begin() + static_cast<std::ptrdiff_t>(pos),
             data.begin() + static_cast<std::ptrdiff_t>(pos + len));
    pos += len;
  } while (pos < data.size());
  le32(g, crc32(data));
  le32(g, static_cast<std::uint32_t>(data.size()));
  return g;
}

class TempDir {
 public:
  TempDir() {
    path_ = fs::temp_directory_path() /
            ("kt_nas_data_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string write(const std::string& name, const Bytes& b) const {
    const std::string p = (path_ / name).string();
    std::ofstream f(p, std::ios::binary);
    f.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
    return p;
  }
  std::string str() const { return path_.string(); }

 private:
  fs::path path_;
};

// 3 images of 2 x 4 pixels, labels 2, 0, 9
const Bytes kPixels = {0, 1, 2, 3, 4, 5, 6, 7, 255, 254, 128, 127, 9, 8, 7, 6, 10, 20, 30, 40, 50, 60, 70, 80};
const Bytes kLabels = {2, 0, 9};

/// The message of the IoError `f` throws (fails the test when it throws nothing or something else).
template <class F>
std::string io_error(F f) {
  try {
    f();
  } catch (const kubetune::IoError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no IoError";
  return {};
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old, had_ = true;
    if (value) ::setenv(name, value, 1);
    else ::unsetenv(name);
  }
  ~ScopedEnv() {
    if (had_) ::setenv(name_, old_.c_str(), 1);
    else ::unsetenv(name_);
  }

 private:
  const char* name_;
  std::string old_;
  bool had_ = false;
};

}  // namespace

TEST(NasIdx, PlainFileReadsBackExactly) {
  TempDir dir;
  const std::string p = dir.write("images", idx_bytes({3, 2, 4}, kPixels));
  IdxArray a = read_idx_file(p);
  EXPECT_EQ(a.dims, (std::vector<std::uint32_t>{3, 2, 4}));
  EXPECT_EQ(a.values, kPixels);
  const std::string l = dir.write("labels", idx_bytes({3}, kLabels));
  Dataset d = read_idx(p, l);
  EXPECT_EQ(d.n, 3);
  EXPECT_EQ(d.c, 1);
  EXPECT_EQ(d.h, 2);
  EXPECT_EQ(d.w, 4);
  EXPECT_EQ(d.y, (std::vector<int>{2, 0, 9}));
  EXPECT_EQ(d.num_classes, 10);
  ASSERT_EQ(d.x.size(), kPixels.size());
  for (std::size_t i = 0; i < kPixels.size(); ++i) EXPECT_EQ(d.x[i], kPixels[i] / 255.0f) << i;
  Dataset two = read_idx(p, l, 2);
  EXPECT_EQ(two.n, 2);
  EXPECT_EQ(two.x.size(), 16u);
  EXPECT_EQ(two.y, (std::vector<int>{2, 0}));
  EXPECT_THROW(read_idx(p, l, -1), kubetune::InvalidArgument);
}

TEST(NasIdx, GzipFileReadsBackExactly) {
  TempDir dir;
  const Bytes raw = idx_bytes({3, 2, 4}, kPixels);
  // two members, the second split over several stored blocks: gunzip concatenates them
  Bytes gz = gzip_stored(Bytes(raw.begin(), raw.begin() + 10), 4);
  const Bytes second = gzip_stored(Bytes(raw.begin() + 10, raw.end()), 5);
  gz.insert(gz.end(), second.begin(), second.end());
  const std::string p = dir.write("images.gz", gz);
  const std::string unnamed = dir.write("images-without-suffix", gz);  // detected by its magic, not its name
  if (!gzip_supported()) {
    EXPECT_THROW(read_idx_file(p), kubetune::Unsupported);
    GTEST_SKIP() << "kubetune built without zlib (KUBETUNE_HAVE_ZLIB): .gz files are refused";
  }
  for (const auto& path : {p, unnamed}) {
    IdxArray a = read_idx_file(path);
    EXPECT_EQ(a.dims, (std::vector<std::uint32_t>{3, 2, 4}));
    EXPECT_EQ(a.values, kPixels);
  }
  EXPECT_EQ(read_file_bytes(p), raw);
  // a truncated and a corrupted stream name the file
  Bytes cut(gz.begin(), gz.begin() + static_cast<std::ptrdiff_t>(gz.size() / 2));
  const std::string pc = dir.write("cut.gz", cut);
  std::string m = io_error([&] { read_idx_file(pc); });
  EXPECT_TRUE(contains(m, pc) && contains(m, "truncated")) << m;
  Bytes bad = gzip_stored(raw);
  bad[bad.size() - 6] ^= 0xff;  // CRC
  const std::string pb = dir.write("bad.gz", bad);
  m = io_error([&] { read_idx_file(pb); });
  EXPECT_TRUE(contains(m, pb) && contains(m, "corrupt")) << m;
}

TEST(NasIdx, MalformedHeadersNameTheFileAndField) {
  TempDir dir;
  struct Case {
    const char* name;
    Bytes bytes;
    const char* field;
  };
  Bytes bad_magic = idx_bytes({3}, kLabels);
  bad_magic[1] = 7;
  Bytes short_header = idx_bytes({3, 2, 4}, {});
  short_header.resize(9);
  const std::vector<Case> cases = {
      {"tiny", {0, 0}, "magic"},
      {"magic", bad_magic, "field 'magic'"},
      {"type", idx_bytes({3}, {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, 0x0C), "field 'type' = 0x0c (int32)"},
      {"ndim", {0, 0, 8, 0}, "field 'ndim' = 0"},
      {"header", short_header, "truncated in its header"},
      {"truncated", idx_bytes({3, 2, 4}, Bytes(kPixels.begin(), kPixels.end() - 1)), "field 'values'"},
      {"trailing", idx_bytes({3}, {1, 2, 3, 4}), "trailing bytes"},
      {"huge", idx_bytes({4000000000u, 4000000000u}, {1}), "field 'dims[0]'"},
  };
  for (const auto& c : cases) {
    const std::string p = dir.write(c.name, c.bytes);
    const std::string m = io_error([&] { read_idx_file(p); });
    EXPECT_TRUE(contains(m, p)) << c.name << ": " << m;
    EXPECT_TRUE(contains(m, c.field)) << c.name << ": " << m;
  }
  EXPECT_TRUE(contains(io_error([&] { read_idx_file(dir.str() + "/absent"); }), "cannot open"));
  // read_idx checks the roles of the two files
  const std::string im = dir.write("im", idx_bytes({3, 2, 4}, kPixels));
  const std::string lb = dir.write("lb", idx_bytes({3}, kLabels));
  const std::string lb2 = dir.write("lb2", idx_bytes({2}, {1, 1}));
  std::string m = io_error([&] { read_idx(lb, lb); });
  EXPECT_TRUE(contains(m, lb) && contains(m, "'ndim' = 1, expected 3")) << m;
  m = io_error([&] { read_idx(im, im); });
  EXPECT_TRUE(contains(m, "'ndim' = 3, expected 1")) << m;
  m = io_error([&] { read_idx(im, lb2); });
  EXPECT_TRUE(contains(m, "3 images") && contains(m, "2 labels") && contains(m, "dims[0]")) << m;
}

TEST(NasFashionMnist, LookupIsExplicit) {
  {
    ScopedEnv env(kSharedDataEnv, nullptr);
    EXPECT_EQ(fashion_mnist_dir(), kFashionMnistDir);
    EXPECT_EQ(fashion_mnist_dir("/some/dir"), "/some/dir");
  }
  {
    ScopedEnv env(kSharedDataEnv, "/shared/data");
    EXPECT_EQ(fashion_mnist_dir(), "/shared/data/fashion-mnist");
    EXPECT_EQ(fashion_mnist_dir("/some/dir"), "/some/dir");  // the argument wins
  }
  EXPECT_THROW(fashion_mnist_file("/x", true, "images"), kubetune::InvalidArgument);
}

TEST(NasFashionMnist, ReadsPlainAndGzipLayouts) {
  TempDir dir;
  dir.write("t10k-images-idx3-ubyte", idx_bytes({3, 2, 4}, kPixels));
  dir.write("t10k-labels-idx1-ubyte", idx_bytes({3}, kLabels));
  EXPECT_TRUE(fashion_mnist_available(dir.str(), false));
  EXPECT_FALSE(fashion_mnist_available(dir.str(), true));
  Dataset d = load_fashion_mnist(dir.str(), false);
  EXPECT_EQ(d.n, 3);
  EXPECT_EQ(d.num_classes, 10);
  EXPECT_EQ(d.y, (std::vector<int>{2, 0, 9}));
  try {
    load_fashion_mnist(dir.str(), true);
    FAIL() << "missing train split accepted";
  } catch (const kubetune::NotFound& e) {
    EXPECT_TRUE(contains(e.what(), "train-images-idx3-ubyte") && contains(e.what(), dir.str())) << e.what();
  }
  // the train split gzip-compressed, as Debian ships it; a label >= 10 is refused
  dir.write("train-images-idx3-ubyte.gz", gzip_stored(idx_bytes({3, 2, 4}, kPixels), 100));
  dir.write("train-labels-idx1-ubyte.gz", gzip_stored(idx_bytes({3}, {1, 10, 3}), 100));
  EXPECT_TRUE(fashion_mnist_available(dir.str(), true));
  EXPECT_EQ(fashion_mnist_file(dir.str(), true, "labels-idx1-ubyte"), dir.str() + "/train-labels-idx1-ubyte.gz");
  if (!gzip_supported()) GTEST_SKIP() << "kubetune built without zlib";
  const std::string m = io_error([&] { load_fashion_mnist(dir.str(), true); });
  EXPECT_TRUE(contains(m, "label 1 = 10")) << m;
}

TEST(NasFashionMnist, SharedDataCopyWhenPresent) {
  const std::string shared = std::string(KT_SHARED_DATA_DIR) + "/fashion-mnist";
  if (!fashion_mnist_available(shared, false)) GTEST_SKIP() << "no Fashion-MNIST under " << shared;
  Dataset d = load_fashion_mnist(shared, false, 100);
  EXPECT_EQ(d.n, 100);
  EXPECT_EQ(d.h, 28);
  EXPECT_EQ(d.w, 28);
}

TEST(NasData, StandardizeExactly) {
  // two images, two channels of two pixels: channel 0 = {1, 3, 5, 7}, channel 1 constant
  std::vector<float> x = {1, 3, 4, 4, 5, 7, 4, 4};
  standardize(x.data(), 2, 2, 2);
  const double sd = std::sqrt(5.0);  // mean 4, variance (9 + 1 + 1 + 9) / 4
  const std::vector<double> want = {-3 / sd, -1 / sd, 0, 0, 1 / sd, 3 / sd, 0, 0};
  for (std::size_t i = 0; i < x.size(); ++i) EXPECT_EQ(x[i], static_cast<float>(want[i])) << i;
  EXPECT_THROW(standardize(x.data(), 2, 0, 2), kubetune::InvalidArgument);
  EXPECT_THROW(standardize(nullptr, 2, 1, 2), kubetune::InvalidArgument);
  standardize(nullptr, 0, 1, 2);  // nothing to do
}
