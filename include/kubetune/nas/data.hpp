// Image classification data for the search: in-memory arrays and loaders for IDX (Fashion-MNIST) and
// scikit-learn's digits CSV.
#pragma once

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

/// Default directory of Debian's dataset-fashion-mnist package.
inline constexpr const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";

/// Reads an IDX image file (magic 0x803, uint8) and an IDX label file (0x801) — uncompressed.
/// Pixels are scaled to [0, 1]. Throws IoError (missing/corrupt file, naming the path).
Dataset read_idx(const std::string& images_path, const std::string& labels_path, int limit = 0);
/// True when `dir` holds the (uncompressed) Fashion-MNIST files for `train`.
bool fashion_mnist_available(const std::string& dir = kFashionMnistDir, bool train = true);
/// Fashion-MNIST (Xiao, Rasul & Vollgraf 2017) from `dir`: train-images-idx3-ubyte / t10k-... .
/// Debian ships them gzip-compressed; the C++ loader reads uncompressed copies (gunzip them, or use the
/// Python loader kubetune.nas.load_fashion_mnist, which reads .gz directly). Throws NotFound when absent.
Dataset load_fashion_mnist(const std::string& dir = kFashionMnistDir, bool train = true, int limit = 0);
/// scikit-learn's digits.csv (uncompressed): 64 pixel values 0..16 then the label per line; scaled to [0, 1].
Dataset load_digits_csv(const std::string& path);
/// Per-channel standardisation in place (zero mean, unit variance over the whole set).
void standardize(Dataset& d);

}  // namespace kubetune::nas
