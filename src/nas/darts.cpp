// DARTS bilevel optimisation: architect (first/second order) + weight optimiser + epoch loop.
#include "kubetune/nas/darts.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <utility>

#include <nlohmann/json.hpp>

#include "kubetune/core/config_fields.hpp"
#include "kubetune/core/error.hpp"
#include "kubetune/core/rng.hpp"

namespace kubetune::nas {

namespace {
/// kubetune::Rng stream of the data split and the batch order (streams 0 and 1 initialise the supernet).
constexpr std::uint64_t kDataStream = 2;

/// DARTS' virtual step (architect._compute_unrolled_model) from the weights w0 = net.weights():
/// w' = w0 - xi * (momentum * buf + g + wd * w0), g the training-batch gradient at w0; w' is left in the net.
void virtual_step(Supernet& net, const Tensor& w0, const Batch& train, double xi, const DartsConfig& config,
                  const Tensor* momentum_buf) {
  net.forward_backward(train.x, train.labels, true, false);
  Tensor& w = net.weights();
  axpy(w, net.weight_grads(), static_cast<float>(-xi));
  axpy(w, w0, static_cast<float>(-xi * config.w_weight_decay));
  if (momentum_buf) axpy(w, *momentum_buf, static_cast<float>(-xi * config.w_momentum));
}
}  // namespace

namespace {
const settings::Fields<SupernetConfig>& supernet_table() {
  static const settings::Fields<SupernetConfig> t =
      settings::Fields<SupernetConfig>("darts")
          .field<&SupernetConfig::in_channels>("in_channels", "Image channels.")
          .field<&SupernetConfig::num_classes>("num_classes", "Classes.")
          .field<&SupernetConfig::channels>("channels", "Channels C of the first cell.")
          .field<&SupernetConfig::layers>("layers", "Cells; reduction cells at layers/3 and 2*layers/3.")
          .field<&SupernetConfig::nodes>("nodes", "Intermediate nodes per cell (DARTS' steps).")
          .field<&SupernetConfig::multiplier>("multiplier", "Last nodes concatenated into the cell output.")
          .field<&SupernetConfig::stem_multiplier>("stem_multiplier", "Stem channels = stem_multiplier * channels.")
          .field<&SupernetConfig::ops>("ops", "Candidate operations (DARTS' PRIMITIVES by default).")
          .field<&SupernetConfig::affine>("affine", "Affine batch norm inside the candidate ops (search: false).");
  return t;
}

const settings::Fields<DartsConfig>& darts_table() {
  static const settings::Fields<DartsConfig> t =
      settings::Fields<DartsConfig>("darts")
          .nest<&DartsConfig::net>(supernet_table())
          .field<&DartsConfig::batch_size>("batch_size", "Training batch size (weights and alpha).")
          .field<&DartsConfig::eval_batch_size>("eval_batch_size", "Batch size of the validation pass.")
          .field<&DartsConfig::w_lr>("w_lr", "SGD learning rate of the weights (cosine schedule start).")
          .field<&DartsConfig::w_lr_min>("w_lr_min", "Cosine schedule end.")
          .field<&DartsConfig::w_momentum>("w_momentum", "SGD momentum.")
          .field<&DartsConfig::w_weight_decay>("w_weight_decay", "Weight decay of the weights.")
          .field<&DartsConfig::w_grad_clip>("w_grad_clip", "Max L2 norm of the weight gradient (<= 0: off).")
          .field<&DartsConfig::alpha_lr>("alpha_lr", "Adam learning rate of the architecture weights.")
          .field<&DartsConfig::alpha_beta1>("alpha_beta1", "Adam beta1.")
          .field<&DartsConfig::alpha_beta2>("alpha_beta2", "Adam beta2.")
          .field<&DartsConfig::alpha_weight_decay>("alpha_weight_decay", "Weight decay of alpha.")
          .field<&DartsConfig::second_order>("second_order", "Unrolled (second-order) architecture gradient.")
          .field<&DartsConfig::hvp_r>("hvp_r", "Hessian-vector product step: eps = hvp_r / ||grad||.")
          .field<&DartsConfig::train_portion>("train_portion", "Share of the data that trains the weights.")
          .field<&DartsConfig::seed>("seed", "Seed of the weights, alpha and data streams.")
          .field<&DartsConfig::n_threads>("n_threads", "CPU threads of this engine (0: the calling thread's).")
          .deprecated("threads");
  return t;
}
}  // namespace

DartsConfig DartsConfig::from_json(const nlohmann::json& j) { return darts_table().from_json(j); }
nlohmann::json DartsConfig::to_json() const { return darts_table().to_json(*this); }
nlohmann::json DartsConfig::settings_schema() { return darts_table().schema(); }

void DartsConfig::validate() const {
  net.validate();
  KT_CHECK(batch_size >= 2, InvalidArgument, "param 'batch_size' = ", batch_size, " must be >= 2");
  KT_CHECK(eval_batch_size >= 1, InvalidArgument, "param 'eval_batch_size' = ", eval_batch_size, " must be >= 1");
  KT_CHECK(w_lr > 0, InvalidArgument, "param 'w_lr' = ", w_lr, " must be > 0");
  KT_CHECK(w_lr_min >= 0 && w_lr_min <= w_lr, InvalidArgument, "param 'w_lr_min' = ", w_lr_min, " must be in [0, w_lr]");
  KT_CHECK(w_momentum >= 0 && w_momentum < 1, InvalidArgument, "param 'w_momentum' = ", w_momentum,
           " must be in [0, 1)");
  KT_CHECK(w_weight_decay >= 0, InvalidArgument, "param 'w_weight_decay' = ", w_weight_decay, " must be >= 0");
  KT_CHECK(alpha_lr > 0, InvalidArgument, "param 'alpha_lr' = ", alpha_lr, " must be > 0");
  KT_CHECK(alpha_beta1 >= 0 && alpha_beta1 < 1, InvalidArgument, "param 'alpha_beta1' = ", alpha_beta1,
           " must be in [0, 1)");
  KT_CHECK(alpha_beta2 >= 0 && alpha_beta2 < 1, InvalidArgument, "param 'alpha_beta2' = ", alpha_beta2,
           " must be in [0, 1)");
  KT_CHECK(alpha_weight_decay >= 0, InvalidArgument, "param 'alpha_weight_decay' = ", alpha_weight_decay,
           " must be >= 0");
  KT_CHECK(hvp_r > 0, InvalidArgument, "param 'hvp_r' = ", hvp_r, " must be > 0");
  KT_CHECK(train_portion > 0 && train_portion < 1, InvalidArgument, "param 'train_portion' = ", train_portion,
           " must be in (0, 1)");
  KT_CHECK(n_threads >= 0, InvalidArgument, "param 'n_threads' = ", n_threads, " must be >= 0 (0: all cores)");
  KT_CHECK(threads >= 0, InvalidArgument, "param 'threads' (deprecated alias of 'n_threads') = ", threads,
           " must be >= 0 (0: all cores)");
  KT_CHECK(n_threads == 0 || threads == 0 || n_threads == threads, InvalidArgument, "param 'n_threads' = ",
           n_threads, " and its deprecated alias 'threads' = ", threads, " disagree");
}

int DartsConfig::resolved_n_threads() const noexcept { return n_threads > 0 ? n_threads : threads; }

Darts::Darts(const DartsConfig& config, Device device) : config_(config), device_(device) {
  config_.validate();
  config_.n_threads = config_.resolved_n_threads();
  config_.threads = 0;
  ThreadsScope threads(config_.n_threads);
  net_ = std::make_unique<Supernet>(config_.net, device, config_.seed);
  adam_m_.assign(net_->alphas().size(), 0.0f);
  adam_v_.assign(net_->alphas().size(), 0.0f);
}

Darts::~Darts() = default;

double Darts::lr_at(int e, int epochs) const {
  const double pi = 3.14159265358979323846;
  if (epochs <= 0) return config_.w_lr;
  return config_.w_lr_min + 0.5 * (config_.w_lr - config_.w_lr_min) * (1.0 + std::cos(pi * e / epochs));
}

Batch Darts::make_batch(const float* X, const int* y, const std::vector<int>& rows, int c, int h, int w) const {
  const std::size_t per = static_cast<std::size_t>(c) * h * w;
  std::vector<float> xb(rows.size() * per), yb(rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    std::copy(X + rows[i] * per, X + (rows[i] + 1) * per, xb.begin() + i * per);
    yb[i] = static_cast<float>(y[rows[i]]);
  }
  const int n = static_cast<int>(rows.size());
  return {Tensor::from_host(xb.data(), {n, c, h, w}, device_), Tensor::from_host(yb.data(), {n}, device_)};
}

double Darts::unrolled_val_loss(const Batch& train, const Batch& val, double xi) {
  ThreadsScope threads(config_.n_threads);
  Supernet& net = *net_;
  Tensor w0 = net.weights().clone();
  virtual_step(net, w0, train, xi, config_, has_momentum_ ? &momentum_buf_ : nullptr);
  Tensor logits = net.forward(val.x, true);
  double loss = softmax_cross_entropy(logits, val.labels, false).loss;
  net.weights().copy_from(w0);
  return loss;
}

std::vector<float> Darts::architecture_gradient(const Batch& train, const Batch& val, double xi, bool second_order) {
  ThreadsScope threads(config_.n_threads);
  Supernet& net = *net_;
  if (!second_order) {
    net.forward_backward(val.x, val.labels, false, true);
    return net.alpha_grads();
  }
  Tensor w0 = net.weights().clone();
  virtual_step(net, w0, train, xi, config_, has_momentum_ ? &momentum_buf_ : nullptr);
  // gradients of L_val at (w', alpha)
  net.forward_backward(val.x, val.labels, true, true);
  std::vector<float> dalpha = net.alpha_grads();
  Tensor dw = net.weight_grads().clone();
  const double norm = std::sqrt(squared_norm(dw));
  if (norm > 0) {
    // Hessian-vector product (d^2 L_train / d alpha d w) dw by central differences (DARTS eq. 8)
    const double eps = config_.hvp_r / norm;
    net.weights().copy_from(w0);
    axpy(net.weights(), dw, static_cast<float>(eps));
    net.forward_backward(train.x, train.labels, false, true);
    std::vector<float> gp = net.alpha_grads();
    net.weights().copy_from(w0);
    axpy(net.weights(), dw, static_cast<float>(-eps));
    net.forward_backward(train.x, train.labels, false, true);
    std::vector<float> gn = net.alpha_grads();
    for (std::size_t i = 0; i < dalpha.size(); ++i)
      dalpha[i] -= static_cast<float>(xi * (static_cast<double>(gp[i]) - gn[i]) / (2.0 * eps));
  }
  net.weights().copy_from(w0);
  return dalpha;
}

PassResult Darts::step(const Batch& train, const Batch& val, double lr) {
  ThreadsScope threads(config_.n_threads);
  Supernet& net = *net_;
  // 1. architecture step (Adam on alpha, L2 weight decay as PyTorch's Adam)
  std::vector<float> ga = architecture_gradient(train, val, lr, config_.second_order);
  std::vector<float>& a = net.alphas();
  ++adam_t_;
  const double b1 = config_.alpha_beta1, b2 = config_.alpha_beta2;
  const double bc1 = 1.0 - std::pow(b1, adam_t_), bc2 = 1.0 - std::pow(b2, adam_t_);
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double g = ga[i] + config_.alpha_weight_decay * a[i];
    adam_m_[i] = static_cast<float>(b1 * adam_m_[i] + (1 - b1) * g);
    adam_v_[i] = static_cast<float>(b2 * adam_v_[i] + (1 - b2) * g * g);
    a[i] -= static_cast<float>(config_.alpha_lr * (adam_m_[i] / bc1) / (std::sqrt(adam_v_[i] / bc2) + 1e-8));
  }
  // 2. weight step: SGD with momentum and weight decay, gradient norm clipped
  PassResult r = net.forward_backward(train.x, train.labels, true, false);
  Tensor& g = net.weight_grads();
  if (config_.w_grad_clip > 0) {
    const double norm = std::sqrt(squared_norm(g));
    if (norm > config_.w_grad_clip) scale_inplace(g, static_cast<float>(config_.w_grad_clip / (norm + 1e-6)));
  }
  if (!has_momentum_) {
    momentum_buf_ = Tensor::zeros(g.shape(), device_);
    has_momentum_ = true;
  }
  sgd_momentum_step(net.weights(), g, momentum_buf_, static_cast<float>(lr), static_cast<float>(config_.w_momentum),
                    static_cast<float>(config_.w_weight_decay));
  return r;
}

std::pair<double, double> Darts::evaluate(const float* X, const int* y, int n, int c, int h, int w) {
  ThreadsScope threads(config_.n_threads);
  double loss = 0;
  long correct = 0;
  for (int s = 0; s < n; s += config_.eval_batch_size) {
    std::vector<int> rows(std::min(config_.eval_batch_size, n - s));
    std::iota(rows.begin(), rows.end(), s);
    Batch b = make_batch(X, y, rows, c, h, w);
    auto ce = softmax_cross_entropy(net_->forward(b.x, false), b.labels, false);
    loss += ce.loss * static_cast<double>(rows.size());
    correct += ce.correct;
  }
  return {n ? loss / n : 0.0, n ? static_cast<double>(correct) / n : 0.0};
}

Genotype Darts::genotype() const {
  const auto& cfg = net_->config();
  return derive_genotype(net_->alpha_softmax(false), net_->alpha_softmax(true), cfg.nodes, cfg.multiplier, cfg.ops);
}

SearchResult Darts::search(const float* X, const int* y, int n, int c, int h, int w, int epochs,
                           const std::function<bool(const EpochStats&)>& on_epoch,
                           const std::function<void(int, int)>& on_step) {
  ThreadsScope threads(config_.n_threads);
  const auto& cfg = net_->config();
  KT_CHECK(X != nullptr && y != nullptr, InvalidArgument, "param 'X'/'y' must not be null");
  KT_CHECK(epochs >= 1, InvalidArgument, "param 'epochs' = ", epochs, " must be >= 1");
  KT_CHECK(c == cfg.in_channels, InvalidArgument, "param 'X' has ", c, " channels but in_channels = ",
           cfg.in_channels);
  KT_CHECK(h >= 4 && w >= 4, InvalidArgument, "param 'X' images are ", h, "x", w, ", need at least 4x4");
  for (int i = 0; i < n; ++i)
    KT_CHECK(y[i] >= 0 && y[i] < cfg.num_classes, InvalidArgument, "param 'y'[", i, "] = ", y[i],
             " outside [0, num_classes=", cfg.num_classes, ")");
  Rng rng(config_.seed, kDataStream);
  std::vector<int> idx(n);
  std::iota(idx.begin(), idx.end(), 0);
  kubetune::shuffle(idx.begin(), idx.end(), rng);
  const int n_train = static_cast<int>(std::floor(n * config_.train_portion));
  KT_CHECK(n_train >= 2 && n - n_train >= 2, InvalidArgument, "param 'X' has ", n,
           " samples: too few for train_portion = ", config_.train_portion);
  std::vector<int> tr(idx.begin(), idx.begin() + n_train), va(idx.begin() + n_train, idx.end());
  // validation rows gathered once for evaluation
  std::vector<float> Xv(static_cast<std::size_t>(va.size()) * c * h * w);
  std::vector<int> yv(va.size());
  const std::size_t per = static_cast<std::size_t>(c) * h * w;
  for (std::size_t i = 0; i < va.size(); ++i) {
    std::copy(X + va[i] * per, X + (va[i] + 1) * per, Xv.begin() + i * per);
    yv[i] = y[va[i]];
  }
  const int B = std::min(config_.batch_size, n_train);
  const int steps = std::max(1, n_train / B);
  SearchResult result;
  std::size_t vpos = va.size();
  for (int e = 0; e < epochs; ++e) {
    auto t0 = std::chrono::steady_clock::now();
    const double lr = lr_at(e, epochs);
    kubetune::shuffle(tr.begin(), tr.end(), rng);
    double tl = 0;
    long tc = 0, tn = 0;
    for (int s = 0; s < steps; ++s) {
      std::vector<int> rt(tr.begin() + static_cast<std::ptrdiff_t>(s) * B, tr.begin() + static_cast<std::ptrdiff_t>(s + 1) * B);
      std::vector<int> rv;
      while (static_cast<int>(rv.size()) < std::min<int>(B, static_cast<int>(va.size()))) {
        if (vpos >= va.size()) {
          kubetune::shuffle(va.begin(), va.end(), rng);
          vpos = 0;
        }
        rv.push_back(va[vpos++]);
      }
      PassResult r = step(make_batch(X, y, rt, c, h, w), make_batch(X, y, rv, c, h, w), lr);
      tl += r.loss * r.count;
      tc += r.correct;
      tn += r.count;
      if (on_step) on_step(e * steps + s + 1, epochs * steps);
    }
    EpochStats st;
    st.epoch = e;
    st.lr = lr;
    st.train_loss = tl / std::max<long>(tn, 1);
    st.train_acc = static_cast<double>(tc) / std::max<long>(tn, 1);
    auto [vl, vacc] = evaluate(Xv.data(), yv.data(), static_cast<int>(yv.size()), c, h, w);
    st.val_loss = vl;
    st.val_acc = vacc;
    st.alpha_normal = net_->alpha_softmax(false);
    st.alpha_reduce = net_->alpha_softmax(true);
    st.genotype = genotype().to_darts_string();
    st.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    result.best_val_acc = std::max(result.best_val_acc, vacc);
    result.history.push_back(st);
    if (on_epoch && !on_epoch(st)) break;
  }
  result.genotype = genotype();
  return result;
}

}  // namespace kubetune::nas
