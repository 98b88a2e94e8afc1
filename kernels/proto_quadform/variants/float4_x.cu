// Variant float4_x (written by the project lead from Memory Transaction Reduction's advice text,
// "Load them as float4", before any timing): where D is a multiple of 4 the j loop reads the point's
// features with one 16-byte load per 4 (same products, same order); D stays run-time.
// Nearest-prototype classification under per-prototype Mahalanobis metrics
// (quadratic discriminant analysis, or the assignment step of a Gaussian
// mixture / Mahalanobis k-means): n = 2^21 points of D = 4 features (x, row
// major, 32 MB), M = 64 prototypes, each with a centre mu_m (D floats), a
// symmetric positive-definite D x D matrix A_m (the inverse covariance) and a
// constant c_m (its log-determinant term). For every point, score_m =
// c_m + (x - mu_m)^T A_m (x - mu_m), and the point keeps the prototype with
// the smallest score: label[p] = argmin_m score_m, dist[p] = min_m score_m.
// One thread per point; D and M are run-time arguments and the loops are
// written as a CPU port writes them: for m { for i { for j { ... } } }.
// Performance problem (prior): the D x D nest has run-time trip counts, so
// every (m, i, j) step reloads x[j] (and x[i], mu[i] per row) from global
// memory and recomputes its address, none of it depends on m; the loads of
// the point's own features are the bulk of the kernel's load instructions.
#include "../../common/harness.cuh"

__global__ void proto_quadform(int* label, float* dist, const float* x, const float* mu,
                               const float* A, const float* c, int n, int M, int D) {
  const int p = blockIdx.x * blockDim.x + threadIdx.x;
  if (p >= n) return;
  const float* xp = x + size_t(p) * D;
  float best = INFINITY;
  int arg = 0;
  for (int m = 0; m < M; ++m) {
    const float* mu_m = mu + m * D;
    const float* A_m = A + m * D * D;
    float q = c[m];
    for (int i = 0; i < D; ++i) {
      float t = 0.f;
      int j = 0;
      if ((D & 3) == 0)   // rows of whole float4s: the point's features 16 bytes per load (x is 16-byte aligned)
        for (; j < D; j += 4) {
          const float4 xv = *reinterpret_cast<const float4*>(xp + j);
          t += A_m[i * D + j] * (xv.x - mu_m[j]);
          t += A_m[i * D + j + 1] * (xv.y - mu_m[j + 1]);
          t += A_m[i * D + j + 2] * (xv.z - mu_m[j + 2]);
          t += A_m[i * D + j + 3] * (xv.w - mu_m[j + 3]);
        }
      for (; j < D; ++j) t += A_m[i * D + j] * (xp[j] - mu_m[j]);
      q += (xp[i] - mu_m[i]) * t;
    }
    if (q < best) {
      best = q;
      arg = m;
    }
  }
  label[p] = arg;
  dist[p] = best;
}

int main(int argc, char** argv) {
  gpa::Options opt = gpa::parse_args(argc, argv);
  const int n = 1 << 21, M = 64, D = 4;
  gpa::Lcg rng(1313);
  // prototypes: centres in [-4, 4]^D, A = L L^T + 0.25 I with L lower triangular, c in [0, 2]
  std::vector<float> mu(size_t(M) * D), A(size_t(M) * D * D), c(M);
  for (int m = 0; m < M; ++m) {
    for (int j = 0; j < D; ++j) mu[size_t(m) * D + j] = rng.uniform(-4.f, 4.f);
    float L[D][D] = {};
    for (int i = 0; i < D; ++i)
      for (int j = 0; j <= i; ++j) L[i][j] = (i == j) ? rng.uniform(0.5f, 1.5f) : rng.uniform(-0.5f, 0.5f);
    for (int i = 0; i < D; ++i)
      for (int j = 0; j < D; ++j) {
        float s = (i == j) ? 0.25f : 0.f;
        for (int k = 0; k < D; ++k) s += L[i][k] * L[j][k];
        A[(size_t(m) * D + i) * D + j] = s;
      }
    c[m] = rng.uniform(0.f, 2.f);
  }
  // points: near a random prototype's centre, plus noise
  std::vector<float> x(size_t(n) * D);
  for (int p = 0; p < n; ++p) {
    const int m = int(rng.next() % M);
    for (int j = 0; j < D; ++j) x[size_t(p) * D + j] = mu[size_t(m) * D + j] + rng.uniform(-1.5f, 1.5f);
  }
  float* dx = gpa::to_device(x);
  float* dmu = gpa::to_device(mu);
  float* dA = gpa::to_device(A);
  float* dc = gpa::to_device(c);
  int* dlabel = gpa::device_alloc<int>(size_t(n));
  float* ddist = gpa::device_alloc<float>(size_t(n));
  CUDA_CHECK(cudaMemset(dlabel, 0xff, size_t(n) * sizeof(int)));  // -1: a missed point fails
  CUDA_CHECK(cudaMemset(ddist, 0xff, size_t(n) * sizeof(float)));  // NaN: a missed point fails
  const int block = 256, grid = (n + block - 1) / block;
  auto launch = [&] { proto_quadform<<<grid, block>>>(dlabel, ddist, dx, dmu, dA, dc, n, M, D); };
  launch();
  CUDA_CHECK(cudaDeviceSynchronize());

  // CPU reference on every 97th point: the same float operations in the same order
  // (each += of a product as one fused multiply-add, as nvcc contracts it)
  auto score = [&](size_t p, int m) {
    float q = c[m];
    for (int i = 0; i < D; ++i) {
      float t = 0.f;
      for (int j = 0; j < D; ++j)
        t = std::fmaf(A[(size_t(m) * D + i) * D + j], x[p * D + j] - mu[size_t(m) * D + j], t);
      q = std::fmaf(x[p * D + i] - mu[size_t(m) * D + i], t, q);
    }
    return q;
  };
  const size_t step = 97;
  std::vector<int> label = gpa::to_host(dlabel, size_t(n));
  std::vector<float> dist = gpa::to_host(ddist, size_t(n));
  // per sampled point: the minimum score, and the score of the prototype the kernel chose
  std::vector<float> best(size_t(n), 0.f), chosen(size_t(n), 0.f);
  for (size_t p = 0; p < size_t(n); p += step) {
    float b = INFINITY, got = NAN;
    for (int m = 0; m < M; ++m) {
      const float s = score(p, m);
      b = std::min(b, s);
      if (m == label[p]) got = s;
    }
    best[p] = b;
    chosen[p] = got;  // NaN if the label is out of range: fails the check
  }
  auto ref = [&](size_t p) { return double(best[p]); };
  gpa::check_close(dist, ref, size_t(n), 1e-5, 1e-5, "dist", step);
  gpa::check_close(chosen, ref, size_t(n), 1e-5, 1e-5, "label", step);

  gpa::time_kernel("proto_quadform", opt, launch);
  return 0;
}
