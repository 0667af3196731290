// The CUDA emulator's cuBLAS: argument checks as cuBLAS documents them and a column-major reference SGEMM.
#include <cublas_v2.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <set>
#include <vector>

struct cublasContext {
  cudaStream_t stream = nullptr;
  cublasPointerMode_t pointer_mode = CUBLAS_POINTER_MODE_HOST;
  cublasMath_t math_mode = CUBLAS_DEFAULT_MATH;
};

namespace {

using kt_emu::fatal;

std::mutex& handles_mu() {
  static std::mutex* m = new std::mutex;
  return *m;
}
std::set<cublasHandle_t>& handles() {
  static auto* s = new std::set<cublasHandle_t>;
  return *s;
}
bool live(cublasHandle_t h) {
  std::lock_guard<std::mutex> lock(handles_mu());
  return h != nullptr && handles().count(h) != 0;
}

/// One column-major operand: `rows` x `cols` as stored (before the op), leading dimension `ld`.
void check_extent(const char* who, const char* name, int batch, const float* p, long long rows, long long cols,
                  int ld) {
  if (rows == 0 || cols == 0) return;
  const std::size_t elems = static_cast<std::size_t>((cols - 1) * ld + rows);
  if (!kt_emu::is_device_range(p, elems * sizeof(float)))
    fatal("%s: matrix %s of batch %d (%lld x %lld stored, ld %d, at %p) is not inside one device allocation", who,
          name, batch, rows, cols, ld, static_cast<const void*>(p));
}

/// The scalar in the handle's pointer mode: a host pointer in HOST mode, a device pointer in DEVICE mode.
float scalar(const char* who, const char* name, cublasHandle_t h, const float* p) {
  const bool on_device = kt_emu::is_device_range(p, sizeof(float));
  if (on_device != (h->pointer_mode == CUBLAS_POINTER_MODE_DEVICE))
    fatal("%s: %s at %p is %s memory but the handle's pointer mode is %s", who, name, static_cast<const void*>(p),
          on_device ? "device" : "host", h->pointer_mode == CUBLAS_POINTER_MODE_DEVICE ? "DEVICE" : "HOST");
  return *p;
}

/// C = alpha op(A) op(B) + beta C for every batch; operand pointers come from `operands(batch, &A, &B, &C)`.
template <class Operands>
cublasStatus_t gemm(const char* who, cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                    const float* alpha_p, int lda, int ldb, const float* beta_p, int ldc, int batches,
                    Operands operands) {
  if (!live(h)) return CUBLAS_STATUS_NOT_INITIALIZED;
  const auto valid_op = [](cublasOperation_t op) { return op == CUBLAS_OP_N || op == CUBLAS_OP_T || op == CUBLAS_OP_C; };
  if (!valid_op(ta) || !valid_op(tb) || m < 0 || n < 0 || k < 0 || batches < 0) return CUBLAS_STATUS_INVALID_VALUE;
  const bool na = ta == CUBLAS_OP_N, nb = tb == CUBLAS_OP_N;
  if (lda < std::max(1, na ? m : k) || ldb < std::max(1, nb ? k : n) || ldc < std::max(1, m))
    return CUBLAS_STATUS_INVALID_VALUE;
  if (alpha_p == nullptr || beta_p == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  kt_emu::note_blas_call();
  if (m == 0 || n == 0 || batches == 0) return CUBLAS_STATUS_SUCCESS;
  const float alpha = scalar(who, "alpha", h, alpha_p), beta = scalar(who, "beta", h, beta_p);
  const bool use_ab = alpha != 0.f && k > 0;
  std::vector<float> arow(static_cast<std::size_t>(m) * k), bcol(static_cast<std::size_t>(n) * k);
  for (int b = 0; b < batches; ++b) {
    const float *A = nullptr, *B = nullptr;
    float* C = nullptr;
    operands(b, &A, &B, &C);
    check_extent(who, "C", b, C, m, n, ldc);
    if (use_ab) {
      check_extent(who, "A", b, A, na ? m : k, na ? k : m, lda);
      check_extent(who, "B", b, B, nb ? k : n, nb ? n : k, ldb);
      // op(A) row by row and op(B) column by column, so each entry of C is a contiguous dot product.
      for (int i = 0; i < m; ++i)
        for (int p = 0; p < k; ++p)
          arow[static_cast<std::size_t>(i) * k + p] =
              na ? A[i + static_cast<long long>(p) * lda] : A[p + static_cast<long long>(i) * lda];
      for (int j = 0; j < n; ++j)
        for (int p = 0; p < k; ++p)
          bcol[static_cast<std::size_t>(j) * k + p] =
              nb ? B[p + static_cast<long long>(j) * ldb] : B[j + static_cast<long long>(p) * ldb];
    }
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < m; ++i) {
        double s = 0.0;
        if (use_ab) {
          const float* a = arow.data() + static_cast<std::size_t>(i) * k;
          const float* bc = bcol.data() + static_cast<std::size_t>(j) * k;
          for (int p = 0; p < k; ++p) s += static_cast<double>(a[p]) * bc[p];
        }
        float& c = C[i + static_cast<long long>(j) * ldc];
        // beta == 0: C is not read (it may hold NaN or uninitialised memory), as in cuBLAS
        c = static_cast<float>(alpha * s + (beta == 0.f ? 0.0 : static_cast<double>(beta) * c));
      }
  }
  return CUBLAS_STATUS_SUCCESS;
}

}  // namespace

cublasStatus_t cublasCreate(cublasHandle_t* handle) {
  if (handle == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  *handle = new cublasContext;
  std::lock_guard<std::mutex> lock(handles_mu());
  handles().insert(*handle);
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasDestroy(cublasHandle_t handle) {
  {
    std::lock_guard<std::mutex> lock(handles_mu());
    if (!handles().erase(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  }
  delete handle;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetStream(cublasHandle_t handle, cudaStream_t stream) {
  if (!live(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  handle->stream = stream;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasGetStream(cublasHandle_t handle, cudaStream_t* stream) {
  if (!live(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (stream == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  *stream = handle->stream;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetPointerMode(cublasHandle_t handle, cublasPointerMode_t mode) {
  if (!live(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (mode != CUBLAS_POINTER_MODE_HOST && mode != CUBLAS_POINTER_MODE_DEVICE) return CUBLAS_STATUS_INVALID_VALUE;
  handle->pointer_mode = mode;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasGetPointerMode(cublasHandle_t handle, cublasPointerMode_t* mode) {
  if (!live(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (mode == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  *mode = handle->pointer_mode;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode) {
  if (!live(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  handle->math_mode = mode;  // accepted; the reference GEMM has one precision
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasGetMathMode(cublasHandle_t handle, cublasMath_t* mode) {
  if (!live(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (mode == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  *mode = handle->math_mode;
  return CUBLAS_STATUS_SUCCESS;
}

const char* cublasGetStatusName(cublasStatus_t status) {
  switch (status) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
  }
  return "CUBLAS_STATUS_UNKNOWN";
}
const char* cublasGetStatusString(cublasStatus_t status) {
  switch (status) {
    case CUBLAS_STATUS_SUCCESS: return "success";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "the library was not initialized";
    case CUBLAS_STATUS_INVALID_VALUE: return "an invalid numeric value was used as an argument";
    default: return "an error occurred inside the emulated cuBLAS";
  }
}

cublasStatus_t cublasSgemm(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,
                           int k, const float* alpha, const float* A, int lda, const float* B, int ldb,
                           const float* beta, float* C, int ldc) {
  return gemm("cublasSgemm", handle, transa, transb, m, n, k, alpha, lda, ldb, beta, ldc, 1,
              [&](int, const float** a, const float** b, float** c) {
                *a = A;
                *b = B;
                *c = C;
              });
}

cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                                         int m, int n, int k, const float* alpha, const float* A, int lda,
                                         long long strideA, const float* B, int ldb, long long strideB,
                                         const float* beta, float* C, int ldc, long long strideC, int batchCount) {
  return gemm("cublasSgemmStridedBatched", handle, transa, transb, m, n, k, alpha, lda, ldb, beta, ldc, batchCount,
              [&](int i, const float** a, const float** b, float** c) {
                *a = A + i * strideA;
                *b = B + i * strideB;
                *c = C + i * strideC;
              });
}

cublasStatus_t cublasSgemmBatched(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m,
                                  int n, int k, const float* alpha, const float* const Aarray[], int lda,
                                  const float* const Barray[], int ldb, const float* beta, float* const Carray[],
                                  int ldc, int batchCount) {
  if (batchCount > 0) {
    const std::size_t bytes = static_cast<std::size_t>(batchCount) * sizeof(void*);
    if (!kt_emu::is_device_range(Aarray, bytes) || !kt_emu::is_device_range(Barray, bytes) ||
        !kt_emu::is_device_range(Carray, bytes))
      fatal("cublasSgemmBatched: the pointer arrays must be device memory holding %d pointers each", batchCount);
  }
  return gemm("cublasSgemmBatched", handle, transa, transb, m, n, k, alpha, lda, ldb, beta, ldc, batchCount,
              [&](int i, const float** a, const float** b, float** c) {
                *a = Aarray[i];
                *b = Barray[i];
                *c = Carray[i];
              });
}
