// Image classification data for the search: in-memory arrays, the IDX reader (plain or gzip-compressed) behind
// the Fashion-MNIST loader, scikit-learn's digits CSV and the standardisation. The one implementation: the Python
// loaders (kubetune.nas.load_fashion_mnist, read_idx, standardize) call these.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace kubetune::nas {

/// Images [n, c, h, w] (row-major float32) and integer labels.
struct Dataset {
  std::vector<float> x;
  std::vector<int> y;
  int n = 0, c = 0, h = 0, w = 0;
  int num_classes = 0;
  /// Throws InvalidArgument when sizes disagree or a label is negative.
  void validate() const;
  /// First `count` samples (or all when count <= 0 or >= n).
  Dataset head(int count) const;
};

/// An IDX array (LeCun's MNIST file format) of unsigned bytes: dims (outermost first) and the values in C order.
struct IdxArray {
  std::vector<std::uint32_t> dims;
  std::vector<std::uint8_t> values;
  std::size_t size() const noexcept { return values.size(); }
};

/// True when this build reads gzip-compressed files (built with zlib).
bool gzip_supported() noexcept;

/// The bytes of `path`, gunzipped when the file starts with gzip's magic 1f 8b (whatever its name). Throws IoError
/// naming the path (cannot open, corrupt or truncated gzip stream) and Unsupported for gzip without zlib.
std::vector<std::uint8_t> read_file_bytes(const std::string& path);

/// Parses an IDX image held in `bytes`; `path` names the source in errors. The header is checked field by field:
/// 'magic' (two zero bytes), 'type' (0x08, unsigned byte: the only type kubetune reads), 'ndim' (>= 1),
/// 'dims[i]', and the payload must hold exactly prod(dims) values ('values': truncated / trailing bytes).
/// Throws IoError naming the file and the field.
IdxArray parse_idx(const std::vector<std::uint8_t>& bytes, const std::string& path);
/// read_file_bytes + parse_idx: an IDX file, plain or .gz.
IdxArray read_idx_file(const std::string& path);

/// Reads an IDX image file ([n, h, w]) and an IDX label file ([n]), plain or gzip-compressed, into a Dataset
/// [n, 1, h, w] with pixels scaled to [0, 1]; at most `limit` samples when limit > 0 (limit < 0: InvalidArgument).
/// Throws IoError naming the file and field (bad header, wrong ndim, image and label counts that disagree).
Dataset read_idx(const std::string& images_path, const std::string& labels_path, int limit = 0);

/// Default directory of Debian's dataset-fashion-mnist package.
inline constexpr const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";
/// Environment variable naming kubetune's shared data folder (as the sched traces use it); Fashion-MNIST is
/// looked for in its fashion-mnist/ subfolder.
inline constexpr const char* kSharedDataEnv = "KUBETUNE_SHARED_DATA";

/// Where the Fashion-MNIST files are read from, decided in one place: `dir` when not empty, else
/// $KUBETUNE_SHARED_DATA/fashion-mnist when that variable is set (and not empty), else kFashionMnistDir.
std::string fashion_mnist_dir(const std::string& dir = "");
/// Path of Fashion-MNIST file `<train|t10k>-<kind>` in fashion_mnist_dir(dir), `kind` being "images-idx3-ubyte"
/// or "labels-idx1-ubyte": the uncompressed file when present, else the .gz one; empty when neither exists.
std::string fashion_mnist_file(const std::string& dir, bool train, const std::string& kind);
/// True when fashion_mnist_dir(dir) holds both files (plain or .gz) of the `train` (or t10k) split.
bool fashion_mnist_available(const std::string& dir = "", bool train = true);
/// Fashion-MNIST (Xiao, Rasul & Vollgraf 2017) from fashion_mnist_dir(dir): train-images-idx3-ubyte[.gz] /
/// t10k-... as shipped by Debian (gzip-compressed) or uncompressed; num_classes = 10. Throws NotFound naming
/// the directory and the missing file when absent (IoError when a file is malformed).
Dataset load_fashion_mnist(const std::string& dir = "", bool train = true, int limit = 0);

/// scikit-learn's digits.csv (uncompressed): 64 pixel values 0..16 then the label per line; scaled to [0, 1].
Dataset load_digits_csv(const std::string& path);

/// Per-channel standardisation of images x [n, c, hw] in place: zero mean and unit variance over every image's
/// pixels of the channel (two-pass, in double; a constant channel becomes 0). Throws InvalidArgument when
/// x is null with n > 0 or c < 1.
void standardize(float* x, std::int64_t n, int c, std::int64_t hw);
/// The same on a Dataset.
void standardize(Dataset& d);

}  // namespace kubetune::nas
