// Elementwise kernel profiles over arrays and the GP's dense linear algebra (substitutions, panel products,
// Cholesky), vectorised with AVX2/FMA where the CPU has them (run-time check).
#pragma once

#include <cstddef>

namespace kubetune::search::gp::simd {

/// True when the vectorised paths run (x86-64 with AVX2 and FMA); otherwise the functions loop over std::exp.
bool available() noexcept;
/// Tests: force the non-vectorised code paths (available() then returns false) or restore the default.
void set_scalar_only(bool on) noexcept;

/// exp(x) for every element (x <= 0 expected, the kernels' range; x < -708 gives exp(-708) ~ 3e-308
/// instead of the smaller true value). Cody-Waite reduction x = n ln2 + r, |r| <= ln2 / 2, degree-13
/// Taylor polynomial for e^r and 2^n from the exponent bits: relative error within a few ulp of std::exp.
void exp_neg(const double* x, double* out, std::size_t n) noexcept;

/// out_i = s2 * f(r2_i) for the unit-variance profile f of the Matérn-5/2 kernel,
/// (1 + sqrt5 r + 5 r^2 / 3) exp(-sqrt5 r), r = sqrt(r2_i); r2_i >= 0. out may alias r2.
void matern52(const double* r2, double* out, std::size_t n, double s2) noexcept;
/// As matern52, also writing g_i = -2 s2 df/d(r^2) = (5/3) s2 (1 + sqrt5 r) exp(-sqrt5 r) (the
/// hyperparameter-gradient factor). k and g must not alias r2.
void matern52_grad(const double* r2, double* k, double* g, std::size_t n, double s2) noexcept;
/// out_i = s2 exp(-r2_i / 2) (RBF). out may alias r2.
void rbf(const double* r2, double* out, std::size_t n, double s2) noexcept;

/// x[0:rows] -= A[0:rows, 0:cols] z for a column-major A with leading dimension ld.
void gemv_sub(const double* A, std::size_t ld, std::size_t rows, std::size_t cols, const double* z,
              double* x) noexcept;

/// In-place lower Cholesky factor of the symmetric positive-definite n x n matrix A (column-major, leading
/// dimension ld): the lower triangle is read and overwritten by the factor, the strict upper triangle is not
/// touched. Blocked with AVX2/FMA register tiles where available (unblocked loops otherwise). False when a
/// pivot is not positive and finite (A is then partly overwritten).
bool potrf_lower(double* A, std::size_t ld, std::size_t n);

/// Solve L x = b (trsv_lower) or L^T x = b (trsv_lower_t) in place for a lower-triangular n x n L stored
/// column-major with leading dimension ld (only its lower triangle is read).
void trsv_lower(const double* L, std::size_t ld, double* x, std::size_t n) noexcept;
void trsv_lower_t(const double* L, std::size_t ld, double* x, std::size_t n) noexcept;

}  // namespace kubetune::search::gp::simd
