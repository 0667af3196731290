// CPU bodies (OpenMP + Eigen GEMM) of the nas ops and the device dispatch to their CUDA twins.
#include "kubetune/nas/ops.hpp"

// kubetune parallelises over the batch itself; nested Eigen teams would only contend for the cores.
#ifndef EIGEN_DONT_PARALLELIZE  // also set project-wide (CMake) so every TU agrees
#define EIGEN_DONT_PARALLELIZE 1
#endif
#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>
#include <vector>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "cuda_backend.hpp"
#include "kubetune/core/error.hpp"
#include "kubetune/core/parallel.hpp"

namespace kubetune::nas {

namespace {

using MatR = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using MapR = Eigen::Map<MatR>;
using CMapR = Eigen::Map<const MatR>;

// The thread count of the ops called on this thread: a per-thread setting (set_n_threads, or a ThreadsScope that
// a Darts object opens around its work), never a process-wide one, so two engines on two threads keep their own.
thread_local int t_threads = 0;

int nt() { return core::resolve_threads(t_threads); }

// OpenMP pays off only above some work; below it the loop runs on the calling thread.
constexpr std::int64_t kParallelWork = 1 << 18;

void check4(const Tensor& x, const char* name) {
  KT_CHECK(x.defined() && x.ndim() == 4, InvalidArgument, "param '", name, "' must be a 4-D NCHW tensor, got ",
           x.defined() ? x.shape_str() : std::string("undefined"));
}
void same_device(const Tensor& a, const Tensor& b, const char* what) {
  KT_CHECK(a.device() == b.device(), InvalidArgument, what, ": tensors on different devices (",
           device_name(a.device()), " vs ", device_name(b.device()), ")");
}
const float* ptr_or_null(const Tensor* t) { return (t && t->defined()) ? t->data() : nullptr; }
float* mptr_or_null(Tensor* t) { return (t && t->defined()) ? t->data() : nullptr; }

// ---------------------------------------------------------------- im2col for the dense conv
void im2col(const float* x, float* col, int Cin, int H, int W, int k, int stride, int pad, int Ho, int Wo) {
  for (int c = 0; c < Cin; ++c)
    for (int kh = 0; kh < k; ++kh)
      for (int kw = 0; kw < k; ++kw) {
        float* dst = col + ((static_cast<std::int64_t>(c) * k + kh) * k + kw) * Ho * Wo;
        for (int oh = 0; oh < Ho; ++oh) {
          int ih = oh * stride - pad + kh;
          for (int ow = 0; ow < Wo; ++ow) {
            int iw = ow * stride - pad + kw;
            dst[oh * Wo + ow] = (ih >= 0 && ih < H && iw >= 0 && iw < W) ? x[(static_cast<std::int64_t>(c) * H + ih) * W + iw] : 0.0f;
          }
        }
      }
}
void col2im(const float* col, float* dx, int Cin, int H, int W, int k, int stride, int pad, int Ho, int Wo) {
  std::fill(dx, dx + static_cast<std::int64_t>(Cin) * H * W, 0.0f);
  for (int c = 0; c < Cin; ++c)
    for (int kh = 0; kh < k; ++kh)
      for (int kw = 0; kw < k; ++kw) {
        const float* src = col + ((static_cast<std::int64_t>(c) * k + kh) * k + kw) * Ho * Wo;
        for (int oh = 0; oh < Ho; ++oh) {
          int ih = oh * stride - pad + kh;
          if (ih < 0 || ih >= H) continue;
          for (int ow = 0; ow < Wo; ++ow) {
            int iw = ow * stride - pad + kw;
            if (iw >= 0 && iw < W) dx[(static_cast<std::int64_t>(c) * H + ih) * W + iw] += src[oh * Wo + ow];
          }
        }
      }
}

// Valid output range [lo, hi) of o such that 0 <= o * s + off < n.
inline void valid_range(int off, int s, int n, int out, int& lo, int& hi) {
  lo = off >= 0 ? 0 : (-off + s - 1) / s;
  int last = n - 1 - off;
  hi = last < 0 ? 0 : std::min(out, last / s + 1);
  if (lo > hi) lo = hi;
}

}  // namespace

void set_n_threads(int n) noexcept { t_threads = n; }
int n_threads() noexcept { return nt(); }

ThreadsScope::ThreadsScope(int n) noexcept : previous_(t_threads) {
  if (n > 0) t_threads = n;
}
ThreadsScope::~ThreadsScope() { t_threads = previous_; }

int conv_out_size(int in, int k, int stride, int pad, int dilation) noexcept {
  return (in + 2 * pad - dilation * (k - 1) - 1) / stride + 1;
}

// ================================================================= dense conv (stem)
Tensor conv2d_forward(const Tensor& x, const Tensor& w, int stride, int pad) {
  check4(x, "x");
  check4(w, "w");
  same_device(x, w, "conv2d");
  const int N = x.dim(0), Cin = x.dim(1), H = x.dim(2), W = x.dim(3), Cout = w.dim(0), k = w.dim(2);
  KT_CHECK(w.dim(1) == Cin && w.dim(3) == k, InvalidArgument, "conv2d: weight ", w.shape_str(),
           " does not match input channels ", Cin);
  KT_CHECK(stride >= 1 && pad >= 0, InvalidArgument, "conv2d: stride ", stride, " / pad ", pad, " invalid");
  const int Ho = conv_out_size(H, k, stride, pad), Wo = conv_out_size(W, k, stride, pad);
  Tensor y({N, Cout, Ho, Wo}, x.device());
  if (x.is_cuda()) {
    cuda::conv2d_fwd(x.data(), w.data(), y.data(), N, Cin, H, W, Cout, k, stride, pad, Ho, Wo);
    return y;
  }
  const int K = Cin * k * k, P = Ho * Wo;
  const float* xp = x.data();
  float* yp = y.data();
  CMapR Wm(w.data(), Cout, K);
#pragma omp parallel num_threads(nt()) if (static_cast<std::int64_t>(N) * K * P > kParallelWork)
  {
    std::vector<float> col(static_cast<std::size_t>(K) * P);
#pragma omp for schedule(static)
    for (int n = 0; n < N; ++n) {
      im2col(xp + static_cast<std::int64_t>(n) * Cin * H * W, col.data(), Cin, H, W, k, stride, pad, Ho, Wo);
      MapR(yp + static_cast<std::int64_t>(n) * Cout * P, Cout, P).noalias() = Wm * CMapR(col.data(), K, P);
    }
  }
  return y;
}

Tensor conv2d_backward(const Tensor& x, const Tensor& w, const Tensor& dy, int stride, int pad, Tensor* dw) {
  check4(x, "x");
  check4(dy, "dy");
  same_device(x, dy, "conv2d_backward");
  const int N = x.dim(0), Cin = x.dim(1), H = x.dim(2), W = x.dim(3), Cout = w.dim(0), k = w.dim(2);
  const int Ho = dy.dim(2), Wo = dy.dim(3);
  Tensor dx({N, Cin, H, W}, x.device());
  if (x.is_cuda()) {
    cuda::conv2d_bwd(x.data(), w.data(), dy.data(), dx.data(), mptr_or_null(dw), N, Cin, H, W, Cout, k, stride, pad,
                     Ho, Wo);
    return dx;
  }
  const int K = Cin * k * k, P = Ho * Wo;
  const float* xp = x.data();
  const float* dyp = dy.data();
  float* dxp = dx.data();
  CMapR Wm(w.data(), Cout, K);
  const int T = nt();
  std::vector<float> dw_part(dw ? static_cast<std::size_t>(T) * Cout * K : 0, 0.0f);
#pragma omp parallel num_threads(T) if (static_cast<std::int64_t>(N) * K * P > kParallelWork)
  {
    std::vector<float> col(static_cast<std::size_t>(K) * P), dcol(static_cast<std::size_t>(K) * P);
    int tid = 0;
#ifdef _OPENMP
    tid = omp_get_thread_num();
#endif
#pragma omp for schedule(static)
    for (int n = 0; n < N; ++n) {
      CMapR dY(dyp + static_cast<std::int64_t>(n) * Cout * P, Cout, P);
      if (dw) {
        im2col(xp + static_cast<std::int64_t>(n) * Cin * H * W, col.data(), Cin, H, W, k, stride, pad, Ho, Wo);
        MapR(dw_part.data() + static_cast<std::size_t>(tid) * Cout * K, Cout, K).noalias() +=
            dY * CMapR(col.data(), K, P).transpose();
      }
      MapR(dcol.data(), K, P).noalias() = Wm.transpose() * dY;
      col2im(dcol.data(), dxp + static_cast<std::int64_t>(n) * Cin * H * W, Cin, H, W, k, stride, pad, Ho, Wo);
    }
  }
  if (dw) {
    float* d = dw->data();
    for (int t = 0; t < T; ++t)
      for (std::int64_t i = 0; i < static_cast<std::int64_t>(Cout) * K; ++i) d[i] += dw_part[t * Cout * K + i];
  }
  return dx;
}

// ================================================================= depthwise conv
namespace {
/// relu(src) into a per-thread plane buffer (cache-resident) for the relu_input variants; src itself otherwise.
const float* relu_plane(const float* src, std::int64_t n, bool relu) {
  if (!relu) return src;
  thread_local std::vector<float> buf;
  if (static_cast<std::int64_t>(buf.size()) < n) buf.resize(static_cast<std::size_t>(n));
  float* b = buf.data();
#pragma omp simd
  for (std::int64_t i = 0; i < n; ++i) {
    const float v = src[i];  // one load, then a select: vectorises (see relu_forward)
    b[i] = v > 0.0f ? v : 0.0f;
  }
  return b;
}

// The fast depthwise paths run every kernel tap as one multiply-add over a whole flattened plane:
//  - stride 1, same-size planes (H x W): tap (kh, kw) links output i to input i + a * W + b, with
//    a = kh * dilation - pad and b = kw * dilation - pad;
//  - stride 2, even H and W, Ho = H / 2, Wo = W / 2 (polyphase): the input splits into its four phase planes
//    x_(ph, pw)[r][c] = x[2r + ph][2c + pw], each Ho x Wo, and tap (kh, kw) links output i to plane
//    (t_h mod 2, t_w mod 2) at i + floor(t_h / 2) * Wo + floor(t_w / 2), t = k * dilation - pad.
// Outputs whose column c has c + b outside the plane are masked out by a 0/1 column mask, and the rows by the
// tap's span [lo, hi). The masks are a product rather than a select, which GCC leaves scalar; so a non-finite
// input at a masked-out place would leak into that tap's output (0 x inf).
constexpr int kMaxShift = 8;

/// The 0/1 column masks of an H x W plane for column shifts -kMaxShift..kMaxShift (index s + kMaxShift;
/// s = 0 is all ones), kept per thread for the few plane geometries a network has.
const float* const* shift_masks(int H, int W) {
  struct Geometry {
    int H, W;
    std::vector<float> buf;
    std::vector<const float*> ptr;
  };
  thread_local std::vector<Geometry> cache;
  for (const Geometry& g : cache)
    if (g.H == H && g.W == W) return g.ptr.data();
  if (cache.size() >= 16) cache.clear();  // bounded; no pointer of an earlier call is held past that call
  const std::int64_t HW = static_cast<std::int64_t>(H) * W;
  Geometry& g = cache.emplace_back(Geometry{H, W, {}, {}});
  g.buf.resize(static_cast<std::size_t>((2 * kMaxShift + 1) * HW));
  for (int s = -kMaxShift; s <= kMaxShift; ++s) {
    float* o = g.buf.data() + (s + kMaxShift) * HW;
    for (int r = 0; r < H; ++r)
      for (int c = 0; c < W; ++c) o[static_cast<std::int64_t>(r) * W + c] = c + s >= 0 && c + s < W ? 1.0f : 0.0f;
    g.ptr.push_back(o);
  }
  return g.ptr.data();
}

/// One tap over a flattened plane: dst[i] += w * mask[i] * src[i + off] for i in [lo, hi) (the caller keeps
/// i + off inside the source plane); widx is its weight's index in the k x k filter.
struct Tap {
  const float* src;
  float* dst;
  const float* mask;
  std::int64_t off, lo, hi;
  float w;
  int widx;
};

/// A tap's geometry, the same for every plane of a call: its source and destination as offsets from the plane
/// bases (phase planes), its offset, mask and span.
struct TapGeom {
  std::int64_t src_off, dst_off, off, lo, hi;
  const float* mask;
  int widx;
};

/// Tap (row shift a, column shift b) of an H x W plane (masks: that plane's shift_masks): the outputs it reaches
/// are the rows r with r + a inside and i + off inside the plane. False when it reaches none.
bool tap_geom(TapGeom& g, const float* const* masks, int a, int b, int H, int W) {
  const std::int64_t HW = static_cast<std::int64_t>(H) * W;
  g.off = static_cast<std::int64_t>(a) * W + b;
  g.mask = masks[b + kMaxShift];
  g.lo = std::max(static_cast<std::int64_t>(std::clamp(-a, 0, H)) * W, -g.off);
  g.hi = std::min(static_cast<std::int64_t>(std::clamp(H - a, 0, H)) * W, HW - g.off);
  return g.lo < g.hi;
}

inline void tap_axpy(const Tap& t, std::int64_t lo, std::int64_t hi) {
  float* __restrict out = t.dst;
  const float* __restrict in = t.src + t.off;
  const float* m = t.mask;
  const float w = t.w;
#pragma omp simd
  for (std::int64_t i = lo; i < hi; ++i) out[i] += w * m[i] * in[i];
}

/// G taps into one destination in one pass over their common span (edges tap by tap): the output is loaded and
/// stored once per G taps instead of once per tap.
template <int G>
void axpy_group(const Tap* t) {
  std::int64_t L = t[0].lo, R = t[0].hi;
  for (int j = 1; j < G; ++j) L = std::max(L, t[j].lo), R = std::min(R, t[j].hi);
  if (L >= R) {
    for (int j = 0; j < G; ++j) tap_axpy(t[j], t[j].lo, t[j].hi);
    return;
  }
  for (int j = 0; j < G; ++j) {
    if (t[j].lo < L) tap_axpy(t[j], t[j].lo, L);
    if (R < t[j].hi) tap_axpy(t[j], R, t[j].hi);
  }
  float* __restrict out = t[0].dst;
  const float* in[G];
  const float* m[G];
  float w[G];
  for (int j = 0; j < G; ++j) in[j] = t[j].src + t[j].off, m[j] = t[j].mask, w[j] = t[j].w;
#pragma omp simd
  for (std::int64_t i = L; i < R; ++i) {
    float s = out[i];
#pragma GCC unroll 8
    for (int j = 0; j < G; ++j) s += w[j] * m[j][i] * in[j][i];
    out[i] = s;
  }
}

/// Runs taps[0, n), which are ordered by destination, in groups of up to 5 sharing a destination.
void run_taps(const Tap* taps, int n) {
  for (int i = 0; i < n;) {
    int g = 1;
    while (g < 5 && i + g < n && taps[i + g].dst == taps[i].dst) ++g;
    switch (g) {
      case 1: axpy_group<1>(taps + i); break;
      case 2: axpy_group<2>(taps + i); break;
      case 3: axpy_group<3>(taps + i); break;
      case 4: axpy_group<4>(taps + i); break;
      default: axpy_group<5>(taps + i); break;
    }
    i += g;
  }
}

/// res[j] = sum over tap j's span of mask[i] a[i] src[i + off]: the weight gradients of G taps in one pass over
/// their common span (edges tap by tap). G independent accumulators also break the single sum's latency chain.
template <int G>
void dot_group(const float* a, const Tap* t, float* res) {
  std::int64_t L = t[0].lo, R = t[0].hi;
  for (int j = 1; j < G; ++j) L = std::max(L, t[j].lo), R = std::min(R, t[j].hi);
  if (L >= R) L = R = t[0].lo;  // nothing shared: every tap by itself below
  for (int j = 0; j < G; ++j) {
    const float* in = t[j].src + t[j].off;
    const float* m = t[j].mask;
    float s = 0.0f;
    const std::int64_t e0 = std::min(t[j].hi, L), e1 = std::max(t[j].lo, R);
#pragma omp simd reduction(+ : s)
    for (std::int64_t i = t[j].lo; i < e0; ++i) s += m[i] * a[i] * in[i];
#pragma omp simd reduction(+ : s)
    for (std::int64_t i = e1; i < t[j].hi; ++i) s += m[i] * a[i] * in[i];
    res[j] = s;
  }
  if (L >= R) return;
  // Scalar accumulators: GCC leaves an array reduction scalar. Unused ones (j >= G) stay zero.
  const float* in[5] = {};
  const float* m[5] = {};
  for (int j = 0; j < G; ++j) in[j] = t[j].src + t[j].off, m[j] = t[j].mask;
  float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f, s4 = 0.0f;
#pragma omp simd reduction(+ : s0, s1, s2, s3, s4)
  for (std::int64_t i = L; i < R; ++i) {
    const float ai = a[i];
    s0 += m[0][i] * ai * in[0][i];
    if constexpr (G > 1) s1 += m[1][i] * ai * in[1][i];
    if constexpr (G > 2) s2 += m[2][i] * ai * in[2][i];
    if constexpr (G > 3) s3 += m[3][i] * ai * in[3][i];
    if constexpr (G > 4) s4 += m[4][i] * ai * in[4][i];
  }
  const float acc[5] = {s0, s1, s2, s3, s4};
  for (int j = 0; j < G; ++j) res[j] += acc[j];
}

/// dw[widx] += the weight gradient of each tap (a is the output gradient plane).
void dot_taps(const float* a, const Tap* taps, int n, float* dw) {
  float res[5];
  for (int i = 0; i < n;) {
    const int g = std::min(5, n - i);
    switch (g) {
      case 1: dot_group<1>(a, taps + i, res); break;
      case 2: dot_group<2>(a, taps + i, res); break;
      case 3: dot_group<3>(a, taps + i, res); break;
      case 4: dot_group<4>(a, taps + i, res); break;
      default: dot_group<5>(a, taps + i, res); break;
    }
    for (int j = 0; j < g; ++j) dw[taps[i + j].widx] += res[j];
    i += g;
  }
}

/// Which fast path (if any) a depthwise geometry takes: 1 (stride 1, same size), 2 (polyphase) or 0.
int plane_path(int H, int W, int Ho, int Wo, int k, int stride, int pad, int dilation) {
  const int reach = std::max(pad, (k - 1) * dilation - pad);
  if (k > 7 || reach > kMaxShift) return 0;
  if (stride == 1 && Ho == H && Wo == W) return 1;
  if (stride == 2 && H == 2 * Ho && W == 2 * Wo) return 2;
  return 0;
}

inline int floor_half(int t) { return t >= 0 ? t / 2 : -((-t + 1) / 2); }

/// The taps of a fast-path call (at most 7 x 7), planned once per call on the output plane's geometry Ho x Wo.
/// Forward taps read the input (path 1) or its phase plane (path 2, src_off) into the output, in kernel order;
/// transposed taps (the input gradient) read dy into the input gradient (path 1) or into its phase plane
/// (path 2, dst_off), ordered by destination. Masks come from the calling thread's cache and stay valid for the
/// call.
struct TapPlan {
  TapGeom g[49];
  int n = 0;

  TapPlan() = default;
  TapPlan(int path, bool transposed, int k, int pad, int dilation, int Ho, int Wo) {
    const float* const* masks = shift_masks(Ho, Wo);
    const std::int64_t P = static_cast<std::int64_t>(Ho) * Wo;
    for (int ph = 0; ph < (transposed && path == 2 ? 4 : 1); ++ph)
      for (int kh = 0; kh < k; ++kh)
        for (int kw = 0; kw < k; ++kw) {
          const int th = kh * dilation - pad, tw = kw * dilation - pad;
          const int phase = path == 2 ? (th & 1) * 2 + (tw & 1) : 0;
          if (transposed && phase != ph) continue;
          const int a = path == 2 ? floor_half(th) : th, b = path == 2 ? floor_half(tw) : tw;
          TapGeom& t = g[n];
          t.widx = kh * k + kw;
          t.src_off = transposed ? 0 : phase * P;
          t.dst_off = transposed ? phase * P : 0;
          if (transposed ? tap_geom(t, masks, -a, -b, Ho, Wo) : tap_geom(t, masks, a, b, Ho, Wo)) ++n;
        }
  }

  /// The taps of one plane: sources from src, destinations into dst, weights from the channel's filter wc.
  int bind(Tap* taps, const float* src, float* dst, const float* wc) const {
    for (int i = 0; i < n; ++i)
      taps[i] = Tap{src + g[i].src_off, dst + g[i].dst_off, g[i].mask, g[i].off, g[i].lo, g[i].hi, wc[g[i].widx],
                    g[i].widx};
    return n;
  }
};

/// The four phase planes of an even H x W plane (optionally through a ReLU), each H/2 x W/2, into a per-thread
/// buffer: plane ph * 2 + pw holds x[2r + ph][2c + pw].
const float* split_phases(const float* x, int H, int W, bool relu) {
  const int Ho = H / 2, Wo = W / 2;
  const std::int64_t P = static_cast<std::int64_t>(Ho) * Wo;
  thread_local std::vector<float> buf;
  if (static_cast<std::int64_t>(buf.size()) < 4 * P) buf.resize(static_cast<std::size_t>(4 * P));
  float* b = buf.data();
  for (int r = 0; r < H; ++r) {
    const float* __restrict xr = x + static_cast<std::int64_t>(r) * W;
    float* __restrict e = b + ((r & 1) * 2) * P + static_cast<std::int64_t>(r / 2) * Wo;
    float* __restrict o = e + P;
    if (relu) {
#pragma omp simd
      for (int c = 0; c < Wo; ++c) {
        const float v0 = xr[2 * c], v1 = xr[2 * c + 1];
        e[c] = v0 > 0.0f ? v0 : 0.0f;
        o[c] = v1 > 0.0f ? v1 : 0.0f;
      }
    } else {
#pragma omp simd
      for (int c = 0; c < Wo; ++c) e[c] = xr[2 * c], o[c] = xr[2 * c + 1];
    }
  }
  return b;
}

/// The inverse of split_phases: interleaves four H/2 x W/2 phase planes back into an H x W plane.
void merge_phases(const float* b, int H, int W, float* x) {
  const int Ho = H / 2, Wo = W / 2;
  const std::int64_t P = static_cast<std::int64_t>(Ho) * Wo;
  for (int r = 0; r < H; ++r) {
    const float* __restrict e = b + ((r & 1) * 2) * P + static_cast<std::int64_t>(r / 2) * Wo;
    const float* __restrict o = e + P;
    float* __restrict xr = x + static_cast<std::int64_t>(r) * W;
#pragma omp simd
    for (int c = 0; c < Wo; ++c) xr[2 * c] = e[c], xr[2 * c + 1] = o[c];
  }
}

/// What the tap kernels read for `path`: 1, the plane (after ReLU when `relu`); 2, its four phase planes.
const float* tap_source(const float* plane, int path, int H, int W, bool relu) {
  return path == 1 ? relu_plane(plane, static_cast<std::int64_t>(H) * W, relu) : split_phases(plane, H, W, relu);
}

/// Calls f(tap, offh, offw, oh0, oh1, ow0, ow1) for each tap kh * k + kw of a dilated k x k filter: its input
/// offsets, and the output rows [oh0, oh1) and columns [ow0, ow1) whose input sample lies inside the H x W plane.
template <class F>
void for_each_tap(int k, int stride, int pad, int dilation, int H, int W, int Ho, int Wo, F&& f) {
  for (int kh = 0; kh < k; ++kh) {
    const int offh = kh * dilation - pad;
    int oh0, oh1;
    valid_range(offh, stride, H, Ho, oh0, oh1);
    for (int kw = 0; kw < k; ++kw) {
      const int offw = kw * dilation - pad;
      int ow0, ow1;
      valid_range(offw, stride, W, Wo, ow0, ow1);
      f(kh * k + kw, offh, offw, oh0, oh1, ow0, ow1);
    }
  }
}
}  // namespace

Tensor depthwise_conv2d_forward(const Tensor& x, const Tensor& w, int stride, int pad, int dilation,
                                bool relu_input) {
  check4(x, "x");
  check4(w, "w");
  same_device(x, w, "depthwise_conv2d");
  const int N = x.dim(0), C = x.dim(1), H = x.dim(2), W = x.dim(3), k = w.dim(2);
  KT_CHECK(w.dim(0) == C && w.dim(1) == 1 && w.dim(3) == k, InvalidArgument, "depthwise_conv2d: weight ",
           w.shape_str(), " must be [", C, ", 1, k, k]");
  KT_CHECK(stride >= 1 && pad >= 0 && dilation >= 1, InvalidArgument, "depthwise_conv2d: stride ", stride,
           ", pad ", pad, ", dilation ", dilation, " invalid");
  const int Ho = conv_out_size(H, k, stride, pad, dilation), Wo = conv_out_size(W, k, stride, pad, dilation);
  KT_CHECK(Ho > 0 && Wo > 0, InvalidArgument, "depthwise_conv2d: input ", x.shape_str(), " too small");
  Tensor y({N, C, Ho, Wo}, x.device());
  if (x.is_cuda()) {
    cuda::dwconv_fwd(x.data(), w.data(), y.data(), N, C, H, W, k, stride, pad, dilation, Ho, Wo, relu_input);
    return y;
  }
  const float* xp = x.data();
  const float* wp = w.data();
  float* yp = y.data();
  const std::int64_t planes = static_cast<std::int64_t>(N) * C;
  const int path = plane_path(H, W, Ho, Wo, k, stride, pad, dilation);
  const TapPlan plan = path ? TapPlan(path, false, k, pad, dilation, Ho, Wo) : TapPlan();
#pragma omp parallel for num_threads(nt()) schedule(static) if (planes * Ho * Wo * k * k > kParallelWork)
  for (std::int64_t p = 0; p < planes; ++p) {
    const int c = static_cast<int>(p % C);
    const float* xplane = xp + p * H * W;
    float* ys = yp + p * Ho * Wo;
    const float* wc = wp + static_cast<std::int64_t>(c) * k * k;
    std::fill(ys, ys + Ho * Wo, 0.0f);
    if (path != 0) {
      const float* src = tap_source(xplane, path, H, W, relu_input);
      Tap taps[49];
      run_taps(taps, plan.bind(taps, src, ys, wc));
      continue;
    }
    const float* xs = relu_plane(xplane, static_cast<std::int64_t>(H) * W, relu_input);
    for_each_tap(k, stride, pad, dilation, H, W, Ho, Wo,
                 [&](int t, int offh, int offw, int oh0, int oh1, int ow0, int ow1) {
                   const float wv = wc[t];
                   for (int oh = oh0; oh < oh1; ++oh) {
                     const float* xr = xs + static_cast<std::int64_t>(oh * stride + offh) * W + offw;
                     float* yr = ys + static_cast<std::int64_t>(oh) * Wo;
#pragma omp simd
                     for (int ow = ow0; ow < ow1; ++ow) yr[ow] += wv * xr[ow * stride];
                   }
                 });
  }
  return y;
}

Tensor depthwise_conv2d_backward(const Tensor& x, const Tensor& w, const Tensor& dy, int stride, int pad,
                                 int dilation, Tensor* dw, bool relu_input) {
  check4(x, "x");
  check4(dy, "dy");
  same_device(x, dy, "depthwise_conv2d_backward");
  const int N = x.dim(0), C = x.dim(1), H = x.dim(2), W = x.dim(3), k = w.dim(2);
  const int Ho = dy.dim(2), Wo = dy.dim(3);
  Tensor dx({N, C, H, W}, x.device());
  if (x.is_cuda()) {
    cuda::dwconv_bwd(x.data(), w.data(), dy.data(), dx.data(), mptr_or_null(dw), N, C, H, W, k, stride, pad,
                     dilation, Ho, Wo, relu_input);
    return dx;
  }
  const float* xp = x.data();
  const float* wp = w.data();
  const float* dyp = dy.data();
  float* dxp = dx.data();
  float* dwp = mptr_or_null(dw);
  const int path = plane_path(H, W, Ho, Wo, k, stride, pad, dilation);
  const std::int64_t P = static_cast<std::int64_t>(Ho) * Wo;
  const TapPlan fwd = path ? TapPlan(path, false, k, pad, dilation, Ho, Wo) : TapPlan();
  const TapPlan bwd = path ? TapPlan(path, true, k, pad, dilation, Ho, Wo) : TapPlan();
  // Parallel over channels so each thread owns its filter's gradient.
#pragma omp parallel for num_threads(nt()) schedule(static) if (static_cast<std::int64_t>(N) * C * Ho * Wo * k * k > kParallelWork)
  for (int c = 0; c < C; ++c) {
    const float* wc = wp + static_cast<std::int64_t>(c) * k * k;
    float* dwc = dwp ? dwp + static_cast<std::int64_t>(c) * k * k : nullptr;
    for (int n = 0; n < N; ++n) {
      const std::int64_t p = static_cast<std::int64_t>(n) * C + c;
      const float* xplane = xp + p * H * W;
      const float* dys = dyp + p * Ho * Wo;
      float* dxs = dxp + p * H * W;
      if (path != 0) {
        // Input gradient: the transposed taps dst[i - off] += w dy[i], into the plane (stride 1) or into its
        // phase planes (stride 2), then interleaved back into dx.
        thread_local std::vector<float> phase_grad;
        float* dst = dxs;
        if (path == 2) {
          if (static_cast<std::int64_t>(phase_grad.size()) < 4 * P) phase_grad.resize(static_cast<std::size_t>(4 * P));
          dst = phase_grad.data();
        }
        std::fill(dst, dst + (path == 2 ? 4 * P : P), 0.0f);
        Tap taps[49];
        run_taps(taps, bwd.bind(taps, dys, dst, wc));
        if (path == 2) merge_phases(dst, H, W, dxs);
        if (dwc) {
          const float* src = tap_source(xplane, path, H, W, relu_input);
          dot_taps(dys, taps, fwd.bind(taps, src, nullptr, wc), dwc);
        }
        continue;
      }
      // the input only feeds the weight gradient
      const float* xs = dwc ? relu_plane(xplane, static_cast<std::int64_t>(H) * W, relu_input) : xplane;
      std::fill(dxs, dxs + H * W, 0.0f);
      for_each_tap(k, stride, pad, dilation, H, W, Ho, Wo,
                   [&](int t, int offh, int offw, int oh0, int oh1, int ow0, int ow1) {
                     const float wv = wc[t];
                     float acc = 0.0f;
                     for (int oh = oh0; oh < oh1; ++oh) {
                       const std::int64_t row = static_cast<std::int64_t>(oh * stride + offh) * W + offw;
                       const float* xr = xs + row;
                       float* dxr = dxs + row;
                       const float* dyr = dys + static_cast<std::int64_t>(oh) * Wo;
                       for (int ow = ow0; ow < ow1; ++ow) dxr[ow * stride] += wv * dyr[ow];
#pragma omp simd reduction(+ : acc)
                       for (int ow = ow0; ow < ow1; ++ow) acc += dyr[ow] * xr[ow * stride];
                     }
                     if (dwc) dwc[t] += acc;
                   });
    }
  }
  return dx;
}

// ================================================================= pointwise conv
namespace {
Tensor as_matrix(const Tensor& w, const char* name) {
  KT_CHECK(w.defined() && (w.ndim() == 2 || (w.ndim() == 4 && w.dim(2) == 1 && w.dim(3) == 1)), InvalidArgument,
           "param '", name, "' must be [Cout, Cin] or [Cout, Cin, 1, 1]");
  return w.reshape({w.dim(0), w.dim(1)});
}
}  // namespace

Tensor pointwise_conv_forward(const Tensor& x, const Tensor& w_in) {
  check4(x, "x");
  Tensor w = as_matrix(w_in, "w");
  same_device(x, w, "pointwise_conv");
  const int N = x.dim(0), Cin = x.dim(1), HW = x.dim(2) * x.dim(3), Cout = w.dim(0);
  KT_CHECK(w.dim(1) == Cin, InvalidArgument, "pointwise_conv: weight ", w.shape_str(), " vs input channels ", Cin);
  Tensor y({N, Cout, x.dim(2), x.dim(3)}, x.device());
  if (x.is_cuda()) {
    cuda::pw_fwd(x.data(), w.data(), y.data(), N, Cin, Cout, HW);
    return y;
  }
  CMapR Wm(w.data(), Cout, Cin);
  const float* xp = x.data();
  float* yp = y.data();
#pragma omp parallel for num_threads(nt()) schedule(static) if (static_cast<std::int64_t>(N) * Cin * Cout * HW > kParallelWork)
  for (int n = 0; n < N; ++n)
    MapR(yp + static_cast<std::int64_t>(n) * Cout * HW, Cout, HW).noalias() =
        Wm * CMapR(xp + static_cast<std::int64_t>(n) * Cin * HW, Cin, HW);
  return y;
}

Tensor pointwise_conv_backward(const Tensor& x, const Tensor& w_in, const Tensor& dy, Tensor* dw) {
  check4(x, "x");
  check4(dy, "dy");
  Tensor w = as_matrix(w_in, "w");
  same_device(x, dy, "pointwise_conv_backward");
  const int N = x.dim(0), Cin = x.dim(1), HW = x.dim(2) * x.dim(3), Cout = w.dim(0);
  Tensor dx(x.shape(), x.device());
  if (x.is_cuda()) {
    cuda::pw_bwd(x.data(), w.data(), dy.data(), dx.data(), mptr_or_null(dw), N, Cin, Cout, HW);
    return dx;
  }
  CMapR Wm(w.data(), Cout, Cin);
  const float* xp = x.data();
  const float* dyp = dy.data();
  float* dxp = dx.data();
  const int T = nt();
  const bool par = static_cast<std::int64_t>(N) * Cin * Cout * HW > kParallelWork;
  std::vector<float> part(dw ? static_cast<std::size_t>(T) * Cout * Cin : 0, 0.0f);
#pragma omp parallel num_threads(T) if (par)
  {
    int tid = 0;
#ifdef _OPENMP
    tid = omp_get_thread_num();
#endif
#pragma omp for schedule(static)
    for (int n = 0; n < N; ++n) {
      CMapR dY(dyp + static_cast<std::int64_t>(n) * Cout * HW, Cout, HW);
      CMapR X(xp + static_cast<std::int64_t>(n) * Cin * HW, Cin, HW);
      MapR(dxp + static_cast<std::int64_t>(n) * Cin * HW, Cin, HW).noalias() = Wm.transpose() * dY;
      if (dw) MapR(part.data() + static_cast<std::size_t>(tid) * Cout * Cin, Cout, Cin).noalias() += dY * X.transpose();
    }
  }
  if (dw) {
    float* d = dw->data();
    for (int t = 0; t < T; ++t)
      for (std::int64_t i = 0; i < static_cast<std::int64_t>(Cout) * Cin; ++i) d[i] += part[t * Cout * Cin + i];
  }
  return dx;
}

// ================================================================= relu
Tensor relu_forward(const Tensor& x) {
  Tensor y(x.shape(), x.device());
  const std::int64_t n = x.numel();
  if (x.is_cuda()) {
    cuda::relu_fwd(x.data(), y.data(), n);
    return y;
  }
  const float* __restrict xp = x.data();
  float* __restrict yp = y.data();
#pragma omp parallel for simd num_threads(nt()) schedule(static) if (parallel : n > 4 * kParallelWork)
  for (std::int64_t i = 0; i < n; ++i) {
    const float v = xp[i];  // one load, then a select: GCC leaves `xp[i] > 0 ? xp[i] : 0` scalar
    yp[i] = v > 0.0f ? v : 0.0f;
  }
  return y;
}

Tensor relu_backward(const Tensor& y, const Tensor& dy) {
  same_device(y, dy, "relu_backward");
  KT_CHECK(y.numel() == dy.numel(), InvalidArgument, "relu_backward: y ", y.shape_str(), " vs dy ", dy.shape_str());
  Tensor dx(dy.shape(), dy.device());
  const std::int64_t n = y.numel();
  if (y.is_cuda()) {
    cuda::relu_bwd(y.data(), dy.data(), dx.data(), n);
    return dx;
  }
  const float* __restrict yp = y.data();
  const float* __restrict dyp = dy.data();
  float* __restrict dxp = dx.data();
#pragma omp parallel for simd num_threads(nt()) schedule(static) if (parallel : n > 4 * kParallelWork)
  for (std::int64_t i = 0; i < n; ++i) {
    const float d = dyp[i];  // loaded unconditionally: a select, so the loop vectorises
    dxp[i] = yp[i] > 0.0f ? d : 0.0f;
  }
  return dx;
}

// ================================================================= batch norm
Tensor batch_norm_forward(const Tensor& x, const Tensor* gamma, const Tensor* beta, bool training,
                          BatchNormCache* cache, Tensor* running_mean, Tensor* running_var, float momentum,
                          float eps) {
  check4(x, "x");
  const int N = x.dim(0), C = x.dim(1), HW = x.dim(2) * x.dim(3);
  const bool affine = gamma && gamma->defined();
  if (affine) KT_CHECK(gamma->numel() == C && beta && beta->numel() == C, InvalidArgument,
                       "batch_norm: gamma/beta must have ", C, " entries");
  if (!training)
    KT_CHECK(running_mean && running_var && running_mean->defined() && running_var->defined(), InvalidArgument,
             "batch_norm: evaluation mode needs running_mean and running_var");
  else
    KT_CHECK(N * HW > 1, InvalidArgument, "batch_norm: training needs more than one value per channel, got ",
             x.shape_str());
  Tensor y(x.shape(), x.device());
  Tensor mean, invstd;
  if (training) {
    mean = Tensor({C}, x.device());
    invstd = Tensor({C}, x.device());
  }
  if (x.is_cuda()) {
    cuda::bn_fwd(x.data(), y.data(), ptr_or_null(gamma), ptr_or_null(beta), mean.data(), invstd.data(),
                 mptr_or_null(running_mean), mptr_or_null(running_var), N, C, HW, training, momentum, eps);
  } else {
    const float* xp = x.data();
    float* yp = y.data();
    const float* g = ptr_or_null(gamma);
    const float* b = ptr_or_null(beta);
    float* rm = mptr_or_null(running_mean);
    float* rv = mptr_or_null(running_var);
    float* mp = mean.data();
    float* ip = invstd.data();
    const double M = static_cast<double>(N) * HW;
#pragma omp parallel for num_threads(nt()) schedule(static) if (static_cast<std::int64_t>(N) * C * HW > kParallelWork)
    for (int c = 0; c < C; ++c) {
      double mu, inv;
      if (training) {
        double s = 0.0;
        for (int n = 0; n < N; ++n) {
          const float* xs = xp + (static_cast<std::int64_t>(n) * C + c) * HW;
          float acc = 0.0f;
#pragma omp simd reduction(+ : acc)
          for (int i = 0; i < HW; ++i) acc += xs[i];
          s += acc;
        }
        mu = s / M;
        double v = 0.0;
        for (int n = 0; n < N; ++n) {
          const float* xs = xp + (static_cast<std::int64_t>(n) * C + c) * HW;
          const float m = static_cast<float>(mu);
          float acc = 0.0f;
#pragma omp simd reduction(+ : acc)
          for (int i = 0; i < HW; ++i) acc += (xs[i] - m) * (xs[i] - m);
          v += acc;
        }
        v /= M;
        inv = 1.0 / std::sqrt(v + eps);
        mp[c] = static_cast<float>(mu);
        ip[c] = static_cast<float>(inv);
        if (rm) rm[c] = static_cast<float>((1.0 - momentum) * rm[c] + momentum * mu);
        if (rv) rv[c] = static_cast<float>((1.0 - momentum) * rv[c] + momentum * v * M / std::max(M - 1.0, 1.0));
      } else {
        mu = rm[c];
        inv = 1.0 / std::sqrt(static_cast<double>(rv[c]) + eps);
      }
      const float a = static_cast<float>(inv) * (g ? g[c] : 1.0f);
      const float sh = (b ? b[c] : 0.0f) - static_cast<float>(mu) * a;
      for (int n = 0; n < N; ++n) {
        const std::int64_t o = (static_cast<std::int64_t>(n) * C + c) * HW;
#pragma omp simd
        for (int i = 0; i < HW; ++i) yp[o + i] = xp[o + i] * a + sh;
      }
    }
  }
  if (training && cache) {
    cache->mean = mean;
    cache->invstd = invstd;
  }
  return y;
}

Tensor batch_norm_backward(const Tensor& x, const Tensor& dy, const Tensor* gamma, const BatchNormCache& cache,
                           Tensor* dgamma, Tensor* dbeta, float dy_scale, float* dot_partials, const Tensor* beta) {
  check4(x, "x");
  same_device(x, dy, "batch_norm_backward");
  KT_CHECK(cache.mean.defined(), StateError, "batch_norm_backward: no training-mode forward cache");
  const int N = x.dim(0), C = x.dim(1), HW = x.dim(2) * x.dim(3);
  Tensor dx(x.shape(), x.device());
  if (x.is_cuda()) {
    cuda::bn_bwd(x.data(), dy.data(), dx.data(), ptr_or_null(gamma), cache.mean.data(), cache.invstd.data(),
                 mptr_or_null(dgamma), mptr_or_null(dbeta), N, C, HW, dy_scale, dot_partials, ptr_or_null(beta));
    return dx;
  }
  const float* bt = ptr_or_null(beta);
  const float* xp = x.data();
  const float* dyp = dy.data();
  float* dxp = dx.data();
  const float* g = ptr_or_null(gamma);
  const float* mp = cache.mean.data();
  const float* ip = cache.invstd.data();
  float* dg = mptr_or_null(dgamma);
  float* db = mptr_or_null(dbeta);
  const double M = static_cast<double>(N) * HW;
#pragma omp parallel for num_threads(nt()) schedule(static) if (static_cast<std::int64_t>(N) * C * HW > kParallelWork)
  for (int c = 0; c < C; ++c) {
    const float mu = mp[c], inv = ip[c];
    double sdy = 0.0, sdyx = 0.0;
    for (int n = 0; n < N; ++n) {
      const std::int64_t o = (static_cast<std::int64_t>(n) * C + c) * HW;
      float a = 0.0f, b = 0.0f;
#pragma omp simd reduction(+ : a, b)
      for (int i = 0; i < HW; ++i) {
        a += dyp[o + i];
        b += dyp[o + i] * (xp[o + i] - mu);
      }
      sdy += a;
      sdyx += b;
    }
    sdyx *= inv;  // sum dy * xhat
    if (dg) dg[c] += static_cast<float>(dy_scale * sdyx);
    if (db) db[c] += static_cast<float>(dy_scale * sdy);
    const float gc = g ? g[c] : 1.0f;
    if (dot_partials) dot_partials[c] = static_cast<float>(gc * sdyx + (bt ? bt[c] * sdy : 0.0));
    const float k1 = gc * inv * dy_scale;
    const float mdy = static_cast<float>(sdy / M), mdyx = static_cast<float>(sdyx / M);
    for (int n = 0; n < N; ++n) {
      const std::int64_t o = (static_cast<std::int64_t>(n) * C + c) * HW;
#pragma omp simd
      for (int i = 0; i < HW; ++i) {
        const float xhat = (xp[o + i] - mu) * inv;
        dxp[o + i] = k1 * (dyp[o + i] - mdy - xhat * mdyx);
      }
    }
  }
  return dx;
}

Tensor batch_norm_apply(const Tensor& x, const Tensor* gamma, const Tensor* beta, const BatchNormCache& cache,
                        bool relu) {
  check4(x, "x");
  KT_CHECK(cache.mean.defined(), StateError, "batch_norm_apply: no training-mode forward cache");
  const int N = x.dim(0), C = x.dim(1), HW = x.dim(2) * x.dim(3);
  KT_CHECK(cache.mean.numel() == C, InvalidArgument, "batch_norm_apply: cache for ", cache.mean.numel(),
           " channels, input ", x.shape_str());
  Tensor y(x.shape(), x.device());
  if (x.is_cuda()) {
    cuda::bn_apply(x.data(), y.data(), ptr_or_null(gamma), ptr_or_null(beta), cache.mean.data(), cache.invstd.data(),
                   N, C, HW, relu);
    return y;
  }
  const float* xp = x.data();
  float* yp = y.data();
  const float* g = ptr_or_null(gamma);
  const float* b = ptr_or_null(beta);
  const float* mp = cache.mean.data();
  const float* ip = cache.invstd.data();
#pragma omp parallel for collapse(2) num_threads(nt()) schedule(static) if (static_cast<std::int64_t>(N) * C * HW > 4 * kParallelWork)
  for (int n = 0; n < N; ++n)
    for (int c = 0; c < C; ++c) {
      // the same float arithmetic as the forward pass (x * a + sh), so the result is bit-identical to it
      const float a = ip[c] * (g ? g[c] : 1.0f);
      const float sh = (b ? b[c] : 0.0f) - mp[c] * a;
      const std::int64_t o = (static_cast<std::int64_t>(n) * C + c) * HW;
      if (relu) {
#pragma omp simd
        for (int i = 0; i < HW; ++i) {
          const float v = xp[o + i] * a + sh;
          yp[o + i] = v > 0.0f ? v : 0.0f;
        }
      } else {
#pragma omp simd
        for (int i = 0; i < HW; ++i) yp[o + i] = xp[o + i] * a + sh;
      }
    }
  return y;
}

void channel_dots(const Tensor& x, const Tensor& dy, float* out) {
  check4(x, "x");
  same_device(x, dy, "channel_dots");
  KT_CHECK(x.numel() == dy.numel(), InvalidArgument, "channel_dots: ", x.shape_str(), " vs ", dy.shape_str());
  const int N = x.dim(0), C = x.dim(1), HW = x.dim(2) * x.dim(3);
  if (x.is_cuda()) return cuda::channel_dots(x.data(), dy.data(), out, N, C, HW);
  const float* xp = x.data();
  const float* dp = dy.data();
#pragma omp parallel for num_threads(nt()) schedule(static) if (static_cast<std::int64_t>(N) * C * HW > 4 * kParallelWork)
  for (int c = 0; c < C; ++c) {
    double s = 0.0;
    for (int n = 0; n < N; ++n) {
      const std::int64_t o = (static_cast<std::int64_t>(n) * C + c) * HW;
      float acc = 0.0f;
#pragma omp simd reduction(+ : acc)
      for (int i = 0; i < HW; ++i) acc += xp[o + i] * dp[o + i];
      s += acc;
    }
    out[c] = static_cast<float>(s);
  }
}

// ================================================================= pooling
namespace {
/// Window pass along each row of a plane: out[ih][ow] = max / sum of x[ih][iw] for iw in
/// [ow*stride - 1, ow*stride + 1] within the row (padding excluded).
void pool3_rows(const float* x, int H, int W, int stride, int Wo, float* out, bool max) {
  for (int ih = 0; ih < H; ++ih) {
    const float* xr = x + static_cast<std::int64_t>(ih) * W;
    float* o = out + static_cast<std::int64_t>(ih) * Wo;
    // interior: ow in [1, last) with c - 1 >= 0 and c + 1 <= W - 1; the edges (column 0 and [last, Wo)) by
    // the general window loop
    int last = Wo;
    while (last > 1 && (last - 1) * stride + 1 >= W) --last;
    auto edge = [&](int ow) {
      const int c = ow * stride;
      const int w0 = std::max(c - 1, 0), w1 = std::min(c + 1, W - 1);
      float v = xr[w0];
      for (int iw = w0 + 1; iw <= w1; ++iw) v = max ? std::max(v, xr[iw]) : v + xr[iw];
      o[ow] = v;
    };
    edge(0);
    for (int ow = std::max(last, 1); ow < Wo; ++ow) edge(ow);
    if (stride == 1) {
      if (max) {
#pragma omp simd
        for (int ow = 1; ow < last; ++ow) o[ow] = std::max(std::max(xr[ow - 1], xr[ow]), xr[ow + 1]);
      } else {
#pragma omp simd
        for (int ow = 1; ow < last; ++ow) o[ow] = (xr[ow - 1] + xr[ow]) + xr[ow + 1];
      }
    } else {
      for (int ow = 1; ow < last; ++ow) {
        const float* w = xr + ow * stride - 1;
        o[ow] = max ? std::max(std::max(w[0], w[1]), w[2]) : (w[0] + w[1]) + w[2];
      }
    }
  }
}
/// The same along columns of the row results: y[oh][ow] over rows [oh*stride - 1, oh*stride + 1].
void pool3_cols(const float* rows, int H, int Wo, int stride, int Ho, float* y, bool max) {
  for (int oh = 0; oh < Ho; ++oh) {
    const int h0 = std::max(oh * stride - 1, 0), h1 = std::min(oh * stride + 1, H - 1);
    float* yr = y + static_cast<std::int64_t>(oh) * Wo;
    const float* r0 = rows + static_cast<std::int64_t>(h0) * Wo;
    std::copy(r0, r0 + Wo, yr);
    for (int ih = h0 + 1; ih <= h1; ++ih) {
      const float* r = rows + static_cast<std::int64_t>(ih) * Wo;
      if (max) {
#pragma omp simd
        for (int ow = 0; ow < Wo; ++ow) yr[ow] = std::max(yr[ow], r[ow]);
      } else {
#pragma omp simd
        for (int ow = 0; ow < Wo; ++ow) yr[ow] += r[ow];
      }
    }
  }
}

/// 3x3 max or average pool, padding 1 excluded, as separable passes over each plane.
Tensor pool3x3_forward(const Tensor& x, int stride, bool max) {
  const char* name = max ? "max_pool3x3" : "avg_pool3x3";
  check4(x, "x");
  KT_CHECK(stride == 1 || stride == 2, InvalidArgument, name, ": stride ", stride, " must be 1 or 2");
  const int N = x.dim(0), C = x.dim(1), H = x.dim(2), W = x.dim(3);
  const int Ho = conv_out_size(H, 3, stride, 1), Wo = conv_out_size(W, 3, stride, 1);
  Tensor y({N, C, Ho, Wo}, x.device());
  if (x.is_cuda()) {
    (max ? cuda::maxpool_fwd : cuda::avgpool_fwd)(x.data(), y.data(), N, C, H, W, stride, Ho, Wo);
    return y;
  }
  const float* xp = x.data();
  float* yp = y.data();
  const std::int64_t planes = static_cast<std::int64_t>(N) * C;
#pragma omp parallel for num_threads(nt()) schedule(static) if (planes * Ho * Wo * 9 > kParallelWork)
  for (std::int64_t p = 0; p < planes; ++p) {
    // row pass over the 3 columns of each output column, then a pass over 3 rows; max is exact, the average
    // divides the sum by the in-bounds count (rows x columns; count_include_pad = False)
    thread_local std::vector<float> rows;
    rows.resize(static_cast<std::size_t>(H) * Wo);
    pool3_rows(xp + p * H * W, H, W, stride, Wo, rows.data(), max);
    float* ys = yp + p * Ho * Wo;
    pool3_cols(rows.data(), H, Wo, stride, Ho, ys, max);
    if (max) continue;
    for (int oh = 0; oh < Ho; ++oh) {
      const float rh = static_cast<float>(std::min(oh * stride + 1, H - 1) - std::max(oh * stride - 1, 0) + 1);
      float* yr = ys + static_cast<std::int64_t>(oh) * Wo;
      for (int ow = 0; ow < Wo; ++ow) {
        const float cw = static_cast<float>(std::min(ow * stride + 1, W - 1) - std::max(ow * stride - 1, 0) + 1);
        yr[ow] /= rh * cw;
      }
    }
  }
  return y;
}
}  // namespace

Tensor max_pool3x3_forward(const Tensor& x, int stride) { return pool3x3_forward(x, stride, true); }

Tensor max_pool3x3_backward(const Tensor& x, const Tensor& dy, int stride) {
  check4(x, "x");
  same_device(x, dy, "max_pool3x3_backward");
  const int N = x.dim(0), C = x.dim(1), H = x.dim(2), W = x.dim(3), Ho = dy.dim(2), Wo = dy.dim(3);
  Tensor dx(x.shape(), x.device());
  if (x.is_cuda()) {
    cuda::maxpool_bwd(x.data(), dy.data(), dx.data(), N, C, H, W, stride, Ho, Wo);
    return dx;
  }
  const float* xp = x.data();
  const float* dyp = dy.data();
  float* dxp = dx.data();
  const std::int64_t planes = static_cast<std::int64_t>(N) * C;
#pragma omp parallel for num_threads(nt()) schedule(static) if (planes * Ho * Wo * 9 > kParallelWork)
  for (std::int64_t p = 0; p < planes; ++p) {
    const float* xs = xp + p * H * W;
    const float* dys = dyp + p * Ho * Wo;
    float* dxs = dxp + p * H * W;
    std::fill(dxs, dxs + H * W, 0.0f);
    // Each output's gradient goes to the first maximum of its window in row-major order (the CUDA twin uses
    // the same rule). In whole-row passes: the taps in that order, each taking over where it is strictly
    // greater (or is the window's first), give every output's source index; then one scatter in output order.
    thread_local std::vector<float> bbuf;
    thread_local std::vector<std::int32_t> ibuf;
    const std::size_t HWo = static_cast<std::size_t>(Ho) * Wo;
    if (bbuf.size() < HWo) bbuf.resize(HWo), ibuf.resize(HWo);
    float* best = bbuf.data();
    std::int32_t* idx = ibuf.data();
    std::fill(best, best + HWo, -std::numeric_limits<float>::infinity());
    std::fill(idx, idx + HWo, -1);
    for (int dh = -1; dh <= 1; ++dh) {
      int oh0, oh1;
      valid_range(dh, stride, H, Ho, oh0, oh1);
      for (int dw = -1; dw <= 1; ++dw) {
        int ow0, ow1;
        valid_range(dw, stride, W, Wo, ow0, ow1);
        for (int oh = oh0; oh < oh1; ++oh) {
          const std::int32_t src = (oh * stride + dh) * W + dw;
          const float* xr = xs + src;
          float* br = best + static_cast<std::int64_t>(oh) * Wo;
          std::int32_t* ir = idx + static_cast<std::int64_t>(oh) * Wo;
#pragma omp simd
          for (int ow = ow0; ow < ow1; ++ow) {
            const float v = xr[ow * stride];
            const bool take = v > br[ow] || ir[ow] < 0;
            br[ow] = take ? v : br[ow];
            ir[ow] = take ? src + ow * stride : ir[ow];
          }
        }
      }
    }
    for (std::size_t o = 0; o < HWo; ++o) dxs[idx[o]] += dys[o];
  }
  return dx;
}

Tensor avg_pool3x3_forward(const Tensor& x, int stride) { return pool3x3_forward(x, stride, false); }

Tensor avg_pool3x3_backward(const std::vector<int>& xs_shape, const Tensor& dy, int stride) {
  check4(dy, "dy");
  KT_CHECK(xs_shape.size() == 4, InvalidArgument, "avg_pool3x3_backward: x_shape must have 4 entries");
  const int N = xs_shape[0], C = xs_shape[1], H = xs_shape[2], W = xs_shape[3], Ho = dy.dim(2), Wo = dy.dim(3);
  Tensor dx(xs_shape, dy.device());
  if (dy.is_cuda()) {
    cuda::avgpool_bwd(dy.data(), dx.data(), N, C, H, W, stride, Ho, Wo);
    return dx;
  }
  const float* dyp = dy.data();
  float* dxp = dx.data();
  const std::int64_t planes = static_cast<std::int64_t>(N) * C;
#pragma omp parallel for num_threads(nt()) schedule(static) if (planes * Ho * Wo * 9 > kParallelWork)
  for (std::int64_t p = 0; p < planes; ++p) {
    const float* dys = dyp + p * Ho * Wo;
    float* dxs = dxp + p * H * W;
    if (stride == 1 && Ho == H && Wo == W) {
      // Stride 1: each output's share dy / count, then the same separable 3x3 box sum as the forward (the
      // windows of a stride-1 pool are symmetric, so the transpose is the box sum itself).
      thread_local std::vector<float> share, rows;
      const std::size_t HW = static_cast<std::size_t>(H) * W;
      share.resize(HW);
      rows.resize(HW);
      for (int oh = 0; oh < H; ++oh) {
        const float rh = static_cast<float>(std::min(oh + 1, H - 1) - std::max(oh - 1, 0) + 1);
        const float* dyr = dys + static_cast<std::int64_t>(oh) * W;
        float* sr = share.data() + static_cast<std::int64_t>(oh) * W;
        for (int ow = 0; ow < W; ++ow)
          sr[ow] = dyr[ow] / (rh * static_cast<float>(std::min(ow + 1, W - 1) - std::max(ow - 1, 0) + 1));
      }
      pool3_rows(share.data(), H, W, 1, W, rows.data(), false);
      pool3_cols(rows.data(), H, W, 1, H, dxs, false);
      continue;
    }
    std::fill(dxs, dxs + H * W, 0.0f);
    for (int oh = 0; oh < Ho; ++oh) {
      const int h0 = std::max(oh * stride - 1, 0), h1 = std::min(oh * stride + 1, H - 1);
      for (int ow = 0; ow < Wo; ++ow) {
        const int w0 = std::max(ow * stride - 1, 0), w1 = std::min(ow * stride + 1, W - 1);
        const float g = dys[oh * Wo + ow] / static_cast<float>((h1 - h0 + 1) * (w1 - w0 + 1));
        for (int ih = h0; ih <= h1; ++ih)
          for (int iw = w0; iw <= w1; ++iw) dxs[ih * W + iw] += g;
      }
    }
  }
  return dx;
}

namespace {
/// Calls f(full, half) for each element of the stride-2 subsample at `offset`: `full` indexes the
/// planes x H x W input, `half` the planes x Ho x Wo output (parallel over planes).
template <class F>
void for_each_subsample2(std::int64_t planes, int H, int W, int Ho, int Wo, int offset, F&& f) {
#pragma omp parallel for num_threads(nt()) schedule(static) if (planes * Ho * Wo > kParallelWork)
  for (std::int64_t p = 0; p < planes; ++p)
    for (int oh = 0; oh < Ho; ++oh)
      for (int ow = 0; ow < Wo; ++ow) f((p * H + 2 * oh + offset) * W + 2 * ow + offset, (p * Ho + oh) * Wo + ow);
}
}  // namespace

Tensor subsample2_forward(const Tensor& x, int offset) {
  check4(x, "x");
  KT_CHECK(offset == 0 || offset == 1, InvalidArgument, "subsample2: offset ", offset, " must be 0 or 1");
  const int N = x.dim(0), C = x.dim(1), H = x.dim(2), W = x.dim(3);
  const int Ho = (H - offset + 1) / 2, Wo = (W - offset + 1) / 2;
  Tensor y({N, C, Ho, Wo}, x.device());
  if (x.is_cuda()) {
    cuda::subsample_fwd(x.data(), y.data(), N, C, H, W, offset, Ho, Wo);
    return y;
  }
  const float* xp = x.data();
  float* yp = y.data();
  for_each_subsample2(static_cast<std::int64_t>(N) * C, H, W, Ho, Wo, offset,
                      [&](std::int64_t full, std::int64_t half) { yp[half] = xp[full]; });
  return y;
}

Tensor subsample2_backward(const std::vector<int>& x_shape, const Tensor& dy, int offset) {
  check4(dy, "dy");
  const int N = x_shape[0], C = x_shape[1], H = x_shape[2], W = x_shape[3], Ho = dy.dim(2), Wo = dy.dim(3);
  Tensor dx = Tensor::zeros(x_shape, dy.device());
  if (dy.is_cuda()) {
    cuda::subsample_bwd(dy.data(), dx.data(), N, C, H, W, offset, Ho, Wo);
    return dx;
  }
  const float* dyp = dy.data();
  float* dxp = dx.data();
  for_each_subsample2(static_cast<std::int64_t>(N) * C, H, W, Ho, Wo, offset,
                      [&](std::int64_t full, std::int64_t half) { dxp[full] = dyp[half]; });
  return dx;
}

namespace {
void copy_channels_any(const Tensor& src, int src_off, Tensor& dst, int dst_off, int Cn) {
  const int N = src.dim(0), Cs = src.dim(1), Cd = dst.dim(1), HW = src.dim(2) * src.dim(3);
  if (src.is_cuda()) {
    cuda::copy_channels(src.data(), Cs, src_off, dst.data(), Cd, dst_off, Cn, N, HW);
    return;
  }
  const float* sp = src.data();
  float* dp = dst.data();
  for (int n = 0; n < N; ++n)
    std::copy(sp + (static_cast<std::int64_t>(n) * Cs + src_off) * HW,
              sp + (static_cast<std::int64_t>(n) * Cs + src_off + Cn) * HW,
              dp + (static_cast<std::int64_t>(n) * Cd + dst_off) * HW);
}
}  // namespace

Tensor concat_channels(const std::vector<const Tensor*>& parts) {
  KT_CHECK(!parts.empty(), InvalidArgument, "concat_channels: no parts");
  const Tensor& f = *parts[0];
  check4(f, "parts[0]");
  int C = 0;
  for (const Tensor* p : parts) {
    check4(*p, "parts[i]");
    same_device(f, *p, "concat_channels");
    KT_CHECK(p->dim(0) == f.dim(0) && p->dim(2) == f.dim(2) && p->dim(3) == f.dim(3), InvalidArgument,
             "concat_channels: shape ", p->shape_str(), " does not match ", f.shape_str());
    C += p->dim(1);
  }
  Tensor y({f.dim(0), C, f.dim(2), f.dim(3)}, f.device());
  int off = 0;
  for (const Tensor* p : parts) {
    copy_channels_any(*p, 0, y, off, p->dim(1));
    off += p->dim(1);
  }
  return y;
}

std::vector<Tensor> split_channels(const Tensor& dy, const std::vector<int>& channels) {
  check4(dy, "dy");
  std::vector<Tensor> out;
  int off = 0;
  for (int c : channels) {
    Tensor t({dy.dim(0), c, dy.dim(2), dy.dim(3)}, dy.device());
    copy_channels_any(dy, off, t, 0, c);
    out.push_back(t);
    off += c;
  }
  KT_CHECK(off == dy.dim(1), InvalidArgument, "split_channels: parts sum to ", off, " != ", dy.dim(1));
  return out;
}

Tensor global_avg_pool_forward(const Tensor& x) {
  check4(x, "x");
  const int N = x.dim(0), C = x.dim(1), HW = x.dim(2) * x.dim(3);
  Tensor y({N, C}, x.device());
  if (x.is_cuda()) {
    cuda::gap_fwd(x.data(), y.data(), N * C, HW);
    return y;
  }
  const float* xp = x.data();
  float* yp = y.data();
  for (std::int64_t p = 0; p < static_cast<std::int64_t>(N) * C; ++p) {
    float s = 0.0f;
    for (int i = 0; i < HW; ++i) s += xp[p * HW + i];
    yp[p] = s / static_cast<float>(HW);
  }
  return y;
}

Tensor global_avg_pool_backward(const std::vector<int>& x_shape, const Tensor& dy) {
  const int N = x_shape[0], C = x_shape[1], HW = x_shape[2] * x_shape[3];
  Tensor dx(x_shape, dy.device());
  if (dy.is_cuda()) {
    cuda::gap_bwd(dy.data(), dx.data(), N * C, HW);
    return dx;
  }
  const float* dyp = dy.data();
  float* dxp = dx.data();
  for (std::int64_t p = 0; p < static_cast<std::int64_t>(N) * C; ++p)
    std::fill(dxp + p * HW, dxp + (p + 1) * HW, dyp[p] / static_cast<float>(HW));
  return dx;
}

Tensor linear_forward(const Tensor& x, const Tensor& w, const Tensor& b) {
  KT_CHECK(x.ndim() == 2 && w.ndim() == 2 && x.dim(1) == w.dim(1), InvalidArgument, "linear: x ", x.shape_str(),
           " and w ", w.shape_str(), " do not match");
  same_device(x, w, "linear");
  const int N = x.dim(0), F = x.dim(1), K = w.dim(0);
  Tensor y({N, K}, x.device());
  if (x.is_cuda()) {
    cuda::linear_fwd(x.data(), w.data(), b.defined() ? b.data() : nullptr, y.data(), N, F, K);
    return y;
  }
  MapR Y(y.data(), N, K);
  Y.noalias() = CMapR(x.data(), N, F) * CMapR(w.data(), K, F).transpose();
  if (b.defined()) Y.rowwise() += Eigen::Map<const Eigen::RowVectorXf>(b.data(), K);
  return y;
}

Tensor linear_backward(const Tensor& x, const Tensor& w, const Tensor& dy, Tensor* dw, Tensor* db) {
  same_device(x, dy, "linear_backward");
  const int N = x.dim(0), F = x.dim(1), K = w.dim(0);
  Tensor dx({N, F}, x.device());
  if (x.is_cuda()) {
    cuda::linear_bwd(x.data(), w.data(), dy.data(), dx.data(), mptr_or_null(dw), mptr_or_null(db), N, F, K);
    return dx;
  }
  CMapR dY(dy.data(), N, K);
  MapR(dx.data(), N, F).noalias() = dY * CMapR(w.data(), K, F);
  if (dw) MapR(dw->data(), K, F).noalias() += dY.transpose() * CMapR(x.data(), N, F);
  if (db) Eigen::Map<Eigen::RowVectorXf>(db->data(), K) += dY.colwise().sum();
  return dx;
}

// ================================================================= factorized reduce
Tensor factorized_reduce_forward(const Tensor& x, const Tensor& w1, const Tensor& w2, const Tensor* gamma,
                                 const Tensor* beta, bool training, FactorizedReduceCache* cache,
                                 Tensor* running_mean, Tensor* running_var) {
  check4(x, "x");
  KT_CHECK(x.dim(2) % 2 == 0 && x.dim(3) % 2 == 0, InvalidArgument, "factorized_reduce: input ", x.shape_str(),
           " needs even height and width");
  FactorizedReduceCache local;
  FactorizedReduceCache& c = cache ? *cache : local;
  c.relu = relu_forward(x);
  c.sub0 = subsample2_forward(c.relu, 0);
  c.sub1 = subsample2_forward(c.relu, 1);
  c.relu = Tensor();  // the backward takes the ReLU mask from x (x > 0 exactly where relu(x) > 0)
  Tensor a = pointwise_conv_forward(c.sub0, w1);
  Tensor b = pointwise_conv_forward(c.sub1, w2);
  c.cat = concat_channels({&a, &b});
  return batch_norm_forward(c.cat, gamma, beta, training, &c.bn, running_mean, running_var);
}

Tensor factorized_reduce_backward(const Tensor& x, const Tensor& w1, const Tensor& w2, const Tensor* gamma,
                                  const Tensor& dy, const FactorizedReduceCache& c, Tensor* dw1, Tensor* dw2,
                                  Tensor* dgamma, Tensor* dbeta, float dy_scale, float* dot_partials,
                                  const Tensor* beta) {
  Tensor dcat = batch_norm_backward(c.cat, dy, gamma, c.bn, dgamma, dbeta, dy_scale, dot_partials, beta);
  auto parts = split_channels(dcat, {w1.dim(0), w2.dim(0)});
  Tensor ds0 = pointwise_conv_backward(c.sub0, w1, parts[0], dw1);
  Tensor ds1 = pointwise_conv_backward(c.sub1, w2, parts[1], dw2);
  Tensor dr = subsample2_backward(x.shape(), ds0, 0);
  axpy(dr, subsample2_backward(x.shape(), ds1, 1), 1.0f);
  return relu_backward(x, dr);
}

// ================================================================= loss
CrossEntropyResult softmax_cross_entropy(const Tensor& logits, const Tensor& labels, bool want_grad) {
  KT_CHECK(logits.ndim() == 2, InvalidArgument, "softmax_cross_entropy: logits must be [N, K], got ",
           logits.shape_str());
  const int N = logits.dim(0), K = logits.dim(1);
  KT_CHECK(labels.numel() == N, InvalidArgument, "softmax_cross_entropy: ", labels.numel(), " labels for ", N,
           " rows");
  same_device(logits, labels, "softmax_cross_entropy");
  CrossEntropyResult r;
  if (want_grad) r.dlogits = Tensor({N, K}, logits.device());
  if (logits.is_cuda()) {
    cuda::softmax_ce(logits.data(), labels.data(), N, K, want_grad ? r.dlogits.data() : nullptr, &r.loss,
                     &r.correct);
    return r;
  }
  const float* lp = logits.data();
  const float* yp = labels.data();
  double total = 0.0;
  for (int n = 0; n < N; ++n) {
    const float* row = lp + static_cast<std::int64_t>(n) * K;
    const int y = static_cast<int>(yp[n]);
    KT_CHECK(y >= 0 && y < K, InvalidArgument, "softmax_cross_entropy: label ", yp[n], " at row ", n,
             " outside [0, ", K, ")");
    int arg = 0;
    for (int k = 1; k < K; ++k)
      if (row[k] > row[arg]) arg = k;
    if (arg == y) ++r.correct;
    const double m = row[arg];
    double z = 0.0;
    for (int k = 0; k < K; ++k) z += std::exp(static_cast<double>(row[k]) - m);
    const double lse = m + std::log(z);
    total += lse - row[y];
    if (want_grad) {
      float* d = r.dlogits.data() + static_cast<std::int64_t>(n) * K;
      for (int k = 0; k < K; ++k)
        d[k] = static_cast<float>((std::exp(row[k] - lse) - (k == y ? 1.0 : 0.0)) / N);
    }
  }
  r.loss = total / N;
  return r;
}

// ================================================================= elementwise, fused, optimisers
void axpy(Tensor& y, const Tensor& x, float a) {
  same_device(y, x, "axpy");
  KT_CHECK(y.numel() == x.numel(), InvalidArgument, "axpy: ", y.shape_str(), " vs ", x.shape_str());
  const std::int64_t n = y.numel();
  if (y.is_cuda()) return cuda::axpy(y.data(), x.data(), a, n);
  float* __restrict yp = y.data();
  const float* __restrict xp = x.data();
#pragma omp parallel for simd num_threads(nt()) schedule(static) if (parallel : n > 4 * kParallelWork)
  for (std::int64_t i = 0; i < n; ++i) yp[i] += a * xp[i];
}

void scale_inplace(Tensor& y, float a) {
  const std::int64_t n = y.numel();
  if (y.is_cuda()) return cuda::scale(y.data(), a, n);
  float* yp = y.data();
#pragma omp parallel for num_threads(nt()) schedule(static) if (n > 4 * kParallelWork)
  for (std::int64_t i = 0; i < n; ++i) yp[i] *= a;
}

Tensor weighted_sum(const std::vector<const Tensor*>& xs, const std::vector<float>& w) {
  KT_CHECK(!xs.empty() && xs.size() == w.size() && static_cast<int>(xs.size()) <= cuda::kMaxFused,
           InvalidArgument, "weighted_sum: ", xs.size(), " inputs with ", w.size(), " weights (1..",
           cuda::kMaxFused, ")");
  const Tensor& f = *xs[0];
  for (const Tensor* t : xs) {
    same_device(f, *t, "weighted_sum");
    KT_CHECK(t->numel() == f.numel(), InvalidArgument, "weighted_sum: ", t->shape_str(), " vs ", f.shape_str());
  }
  Tensor y(f.shape(), f.device());
  const int K = static_cast<int>(xs.size());
  const std::int64_t n = f.numel();
  const float* ptrs[cuda::kMaxFused];
  for (int k = 0; k < K; ++k) ptrs[k] = xs[k]->data();
  if (f.is_cuda()) {
    cuda::weighted_sum(ptrs, w.data(), K, y.data(), n);
    return y;
  }
  float* yp = y.data();
  const float* wp = w.data();
  constexpr std::int64_t kBlock = 4096;
  const std::int64_t blocks = (n + kBlock - 1) / kBlock;
#pragma omp parallel for num_threads(nt()) schedule(static) if (n * K > 4 * kParallelWork)
  for (std::int64_t b = 0; b < blocks; ++b) {
    const std::int64_t lo = b * kBlock, hi = std::min(n, lo + kBlock);
    {
      const float* x0 = ptrs[0];
      const float w0 = wp[0];
      for (std::int64_t i = lo; i < hi; ++i) yp[i] = w0 * x0[i];
    }
    for (int k = 1; k < K; ++k) {
      const float* xk = ptrs[k];
      const float wk = wp[k];
      for (std::int64_t i = lo; i < hi; ++i) yp[i] += wk * xk[i];
    }
  }
  return y;
}

std::vector<double> batched_dot(const std::vector<const Tensor*>& xs, const Tensor& dy) {
  const int K = static_cast<int>(xs.size());
  KT_CHECK(K >= 1 && K <= cuda::kMaxFused, InvalidArgument, "batched_dot: ", K, " inputs (1..", cuda::kMaxFused,
           ")");
  for (const Tensor* t : xs) {
    same_device(dy, *t, "batched_dot");
    KT_CHECK(t->numel() == dy.numel(), InvalidArgument, "batched_dot: ", t->shape_str(), " vs ", dy.shape_str());
  }
  const std::int64_t n = dy.numel();
  const float* ptrs[cuda::kMaxFused];
  for (int k = 0; k < K; ++k) ptrs[k] = xs[k]->data();
  std::vector<double> out(K, 0.0);
  if (dy.is_cuda()) {
    cuda::batched_dot(ptrs, dy.data(), K, n, out.data());
    return out;
  }
  const float* d = dy.data();
  constexpr std::int64_t kBlock = 4096;
  const std::int64_t blocks = (n + kBlock - 1) / kBlock;
  const int T = (n * K > 4 * kParallelWork) ? nt() : 1;
  std::vector<double> part(static_cast<std::size_t>(T) * K, 0.0);
#pragma omp parallel num_threads(T)
  {
    int tid = 0;
#ifdef _OPENMP
    tid = omp_get_thread_num();
#endif
#pragma omp for schedule(static)
    for (std::int64_t b = 0; b < blocks; ++b) {
      const std::int64_t lo = b * kBlock, hi = std::min(n, lo + kBlock);
      for (int k = 0; k < K; ++k) {
        const float* xk = ptrs[k];
        float acc = 0.0f;
#pragma omp simd reduction(+ : acc)
        for (std::int64_t i = lo; i < hi; ++i) acc += xk[i] * d[i];
        part[static_cast<std::size_t>(tid) * K + k] += acc;
      }
    }
  }
  for (int t = 0; t < T; ++t)
    for (int k = 0; k < K; ++k) out[k] += part[static_cast<std::size_t>(t) * K + k];
  return out;
}

double dot(const Tensor& a, const Tensor& b) { return batched_dot({&a}, b)[0]; }
double squared_norm(const Tensor& a) { return dot(a, a); }

void sgd_momentum_step(Tensor& w, const Tensor& g, Tensor& buf, float lr, float momentum, float weight_decay) {
  KT_CHECK(w.numel() == g.numel() && w.numel() == buf.numel(), InvalidArgument, "sgd: size mismatch");
  const std::int64_t n = w.numel();
  if (w.is_cuda()) return cuda::sgd_step(w.data(), g.data(), buf.data(), lr, momentum, weight_decay, n);
  float* wp = w.data();
  const float* gp = g.data();
  float* bp = buf.data();
#pragma omp parallel for num_threads(nt()) schedule(static) if (n > 4 * kParallelWork)
  for (std::int64_t i = 0; i < n; ++i) {
    const float d = gp[i] + weight_decay * wp[i];
    bp[i] = momentum * bp[i] + d;
    wp[i] -= lr * bp[i];
  }
}

void adam_step(Tensor& p, const Tensor& g, Tensor& m, Tensor& v, float lr, float beta1, float beta2, float eps,
               float weight_decay, int step) {
  KT_CHECK(step >= 1, InvalidArgument, "adam: step ", step, " must be >= 1");
  KT_CHECK(p.numel() == g.numel() && p.numel() == m.numel() && p.numel() == v.numel(), InvalidArgument,
           "adam: size mismatch");
  const float bc1 = 1.0f - std::pow(beta1, static_cast<float>(step));
  const float bc2 = 1.0f - std::pow(beta2, static_cast<float>(step));
  const std::int64_t n = p.numel();
  if (p.is_cuda()) return cuda::adam_step(p.data(), g.data(), m.data(), v.data(), lr, beta1, beta2, eps,
                                          weight_decay, bc1, bc2, n);
  float* pp = p.data();
  const float* gp = g.data();
  float* mp = m.data();
  float* vp = v.data();
  for (std::int64_t i = 0; i < n; ++i) {
    const float gi = gp[i] + weight_decay * pp[i];
    mp[i] = beta1 * mp[i] + (1.0f - beta1) * gi;
    vp[i] = beta2 * vp[i] + (1.0f - beta2) * gi * gi;
    pp[i] -= lr * (mp[i] / bc1) / (std::sqrt(vp[i] / bc2) + eps);
  }
}

}  // namespace kubetune::nas
