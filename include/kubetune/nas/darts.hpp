// DARTS bilevel search (Liu, Simonyan & Yang, ICLR 2019): first- and second-order architecture gradients,
// SGD + momentum + weight decay + cosine schedule for the weights, Adam for alpha, gradient clipping.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "kubetune/nas/genotype.hpp"
#include "kubetune/nas/supernet.hpp"

namespace kubetune::nas {

/// Search settings. Defaults are DARTS' CIFAR-10 search (train_search.py), which Katib's DARTS trial
/// also uses: w_lr 0.025 -> 0.001 cosine, momentum 0.9, weight decay 3e-4, grad clip 5, Adam(3e-4,
/// betas (0.5, 0.999), weight decay 1e-3) for alpha, batch 64, half of the data for validation.
struct DartsConfig {
  SupernetConfig net;
  int batch_size = 64;
  double w_lr = 0.025;
  double w_lr_min = 0.001;
  double w_momentum = 0.9;
  double w_weight_decay = 3e-4;
  double w_grad_clip = 5.0;   ///< max L2 norm of the weight gradient (<= 0: off)
  double alpha_lr = 3e-4;
  double alpha_beta1 = 0.5;
  double alpha_beta2 = 0.999;
  double alpha_weight_decay = 1e-3;
  bool second_order = false;  ///< unrolled (second-order) architecture gradient
  double hvp_r = 0.01;        ///< finite-difference step of the Hessian-vector product: eps = hvp_r / ||grad||
  double train_portion = 0.5; ///< share of the data used to train weights; the rest trains alpha
  int eval_batch_size = 256;
  std::uint64_t seed = 0;
  /// CPU threads of this engine's ops (0: the calling thread's setting, set_n_threads, by default all cores).
  /// Applied per call on the calling thread (ThreadsScope): nothing process-wide changes, so engines with
  /// different counts do not affect each other or OpenMP's default (omp_get_max_threads).
  int n_threads = 0;
  int threads = 0;            ///< deprecated alias of n_threads (one release); the engine folds it into n_threads
  void validate() const;      ///< throws InvalidArgument naming the field
  int resolved_n_threads() const noexcept;  ///< n_threads, else the deprecated `threads`

  /// Every setting (the supernet's included, flat) is declared once, in darts.cpp's table: the JSON round trip
  /// (unknown keys refused naming them; "threads" is a deprecated name of "n_threads") and the Python keywords.
  static DartsConfig from_json(const nlohmann::json& j);
  nlohmann::json to_json() const;
  static nlohmann::json settings_schema();
};

/// What one epoch did.
struct EpochStats {
  int epoch = 0;
  double lr = 0;
  double train_loss = 0, train_acc = 0;
  double val_loss = 0, val_acc = 0;
  double seconds = 0;
  std::vector<float> alpha_normal, alpha_reduce;  ///< softmax(alpha), [edges x ops]
  std::string genotype;                           ///< DARTS format
};

struct SearchResult {
  std::vector<EpochStats> history;
  Genotype genotype;
  double best_val_acc = 0;
};

/// A labelled batch on the search device.
struct Batch {
  Tensor x;       ///< [N, C, H, W]
  Tensor labels;  ///< [N] float class ids
};

class Darts {
 public:
  Darts(const DartsConfig& config, Device device);
  ~Darts();

  const DartsConfig& config() const noexcept { return config_; }
  Supernet& net() noexcept { return *net_; }

  /// Runs `epochs` epochs on X [n, c, h, w] (host, float32) with labels y (host, 0..classes-1).
  /// on_step(step, steps) is called after every step, on_epoch after every epoch (return false to stop).
  SearchResult search(const float* X, const int* y, int n, int c, int h, int w, int epochs,
                      const std::function<bool(const EpochStats&)>& on_epoch = {},
                      const std::function<void(int, int)>& on_step = {});

  /// One bilevel step: alpha update on `val` (first or second order), then a weight update on `train`
  /// with learning rate `lr`. Returns the train pass result of the weight update.
  PassResult step(const Batch& train, const Batch& val, double lr);
  /// Architecture gradient at the current weights (no parameter changes): first order = grad_alpha
  /// L_val(w, alpha); second order = gradient of L_val(w - xi * (momentum*buf + grad_w L_train + wd*w), alpha)
  /// with the Hessian-vector product by central differences, eps = hvp_r / ||grad_w' L_val|| (DARTS: 0.01).
  std::vector<float> architecture_gradient(const Batch& train, const Batch& val, double xi, bool second_order);
  /// The unrolled objective L_val(w - xi * (momentum*buf + grad_w L_train(w, alpha) + wd*w), alpha) (for tests).
  double unrolled_val_loss(const Batch& train, const Batch& val, double xi);
  /// Loss and accuracy in evaluation mode (running batch-norm statistics), batched.
  std::pair<double, double> evaluate(const float* X, const int* y, int n, int c, int h, int w);
  /// Genotype from the current alphas.
  Genotype genotype() const;
  /// Learning rate of epoch `e` out of `epochs` (cosine annealing, Loshchilov & Hutter 2017).
  double lr_at(int e, int epochs) const;
  Batch make_batch(const float* X, const int* y, const std::vector<int>& rows, int c, int h, int w) const;

 private:
  DartsConfig config_;
  Device device_;
  std::unique_ptr<Supernet> net_;
  Tensor momentum_buf_;
  bool has_momentum_ = false;
  std::vector<float> adam_m_, adam_v_;
  int adam_t_ = 0;
};

}  // namespace kubetune::nas
