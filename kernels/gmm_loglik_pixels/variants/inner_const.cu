// Per-pixel log-likelihood of an RGB frame under a full-covariance Gaussian
// mixture colour model (a GrabCut / background-model style colour GMM with M
// components), evaluated as a generic library writes it (scikit-learn's
// GaussianMixture.score_samples, covariance_type='full'): each component m has
// a mean mu_m (D floats), the Cholesky factor of its precision prec_m (D x D,
// upper triangular, stored densely) and a constant
// logc[m] = log w_m + log det(prec_m) - D/2 log(2 pi); for a pixel x,
//   y = (x - mu_m) @ prec_m,  v_m = logc[m] - 0.5 * |y|^2,
//   out = logsumexp_m v_m   (one pass, online: running max and scaled sum).
// img holds a 1920 x 1080 frame of interleaved RGB floats (D = 3), M = 64.
// One thread per pixel; D and M are run-time ints, as the generic code has them.
// Performance problem (prior): the outer loop over the M components carries a
// short run-time nest (i, j < D = 3) that nvcc cannot unroll: per (i, j) three
// loads (the pixel's x_j, mu_j and prec[j][i], all L1 hits), the index
// arithmetic and the loop control around one FADD and one FFMA.
//
// Variant inner_const: D is a template parameter (gmm_loglik<3> at the launch),
// M stays a run-time int: nvcc unrolls the i/j nest fully, the pixel's three
// floats are loaded once before the component loop, 13 uniform loads per component.
#include "../../common/harness.cuh"

template <int D> __global__ void gmm_loglik(float* out, const float* img, const float* means,
                                            const float* prec, const float* logc, int M, int n) {
  const int p = blockIdx.x * blockDim.x + threadIdx.x;
  if (p >= n) return;
  const float* x = img + (size_t)p * D;
  float mx = -INFINITY, s = 0.f;
  for (int m = 0; m < M; ++m) {
    const float* mu = means + m * D;
    const float* P = prec + m * D * D;
    float q = 0.f;
    for (int i = 0; i < D; ++i) {
      float y = 0.f;
      for (int j = 0; j < D; ++j) y += (x[j] - mu[j]) * P[j * D + i];
      q += y * y;
    }
    const float v = logc[m] - 0.5f * q;
    const float d = v - mx;
    const float e = expf(-fabsf(d));
    s = d > 0.f ? s * e + 1.f : s + e;
    mx = fmaxf(mx, v);
  }
  out[p] = mx + logf(s);
}

int main(int argc, char** argv) {
  gpa::Options opt = gpa::parse_args(argc, argv);
  const int w = 1920, h = 1080, n = w * h, M = 64, D = 3;
  gpa::Lcg rng(1212);
  // the model: means in the unit cube, precision Cholesky factors upper triangular
  // with diagonals 4-16 (std ~0.06-0.25) and small off-diagonals, random weights
  std::vector<float> means(size_t(M) * D), prec(size_t(M) * D * D, 0.f), logc(M);
  std::vector<double> wts(M);
  double wsum = 0.0;
  for (int m = 0; m < M; ++m) {
    wts[m] = 0.2 + rng.uniform(0.f, 1.f);
    wsum += wts[m];
  }
  for (int m = 0; m < M; ++m) {
    for (int d = 0; d < D; ++d) means[size_t(m) * D + d] = rng.uniform(0.05f, 0.95f);
    double logdet = 0.0;
    for (int r = 0; r < D; ++r)
      for (int c = r; c < D; ++c) {
        float v = r == c ? rng.uniform(4.f, 16.f) : rng.uniform(-3.f, 3.f);
        prec[size_t(m) * D * D + r * D + c] = v;
        if (r == c) logdet += std::log(double(v));
      }
    logc[m] = float(std::log(wts[m] / wsum) + logdet - 0.5 * D * std::log(2.0 * M_PI));
  }
  // the frame: each pixel drawn near one component's mean, clamped to [0, 1]
  std::vector<float> img(size_t(n) * D);
  for (int p = 0; p < n; ++p) {
    const int m = int(rng.next() % unsigned(M));
    for (int d = 0; d < D; ++d) {
      float v = means[size_t(m) * D + d] + rng.uniform(-0.15f, 0.15f);
      img[size_t(p) * D + d] = std::min(std::max(v, 0.f), 1.f);
    }
  }
  float* dimg = gpa::to_device(img);
  float* dmeans = gpa::to_device(means);
  float* dprec = gpa::to_device(prec);
  float* dlogc = gpa::to_device(logc);
  float* dout = gpa::device_alloc<float>(size_t(n));
  CUDA_CHECK(cudaMemset(dout, 0xFF, size_t(n) * sizeof(float)));  // NaN: a missed pixel fails
  const int block = 256, grid = (n + block - 1) / block;
  auto launch = [&] { gmm_loglik<D><<<grid, block>>>(dout, dimg, dmeans, dprec, dlogc, M, n); };
  launch();
  CUDA_CHECK(cudaDeviceSynchronize());

  // every 7th pixel, in double (two-pass logsumexp)
  std::vector<float> got = gpa::to_host(dout, size_t(n));
  auto ref = [&](size_t p) {
    std::vector<double> v(M);
    double mx = -INFINITY;
    for (int m = 0; m < M; ++m) {
      double q = 0.0;
      for (int i = 0; i < D; ++i) {
        double y = 0.0;
        for (int j = 0; j < D; ++j)
          y += (double(img[p * D + j]) - means[size_t(m) * D + j]) *
               prec[size_t(m) * D * D + j * D + i];
        q += y * y;
      }
      v[m] = logc[m] - 0.5 * q;
      mx = std::max(mx, v[m]);
    }
    double s = 0.0;
    for (int m = 0; m < M; ++m) s += std::exp(v[m] - mx);
    return mx + std::log(s);
  };
  gpa::check_close(got, ref, size_t(n), 1e-4, 1e-4, "out", 7);

  gpa::time_kernel("gmm_loglik", opt, launch);
  return 0;
}
