// Black-Scholes European call and put prices, each option averaged over a
// ladder of 16 spot shocks (S x 0.9 .. S x 1.0875), in float. The formulas
// were ported from double and keep double literals (`1.0 /`, `0.5 *`,
// `1.0 -`, `0.0125 * s`): each of them promotes its float expression to
// double, so every scenario does three FP64 divisions and about a dozen
// float<->double conversions (F2F, 1/8 of the FP32 rate on sm_90) besides the
// float logf/expf. 12 bytes in and 8 out per option against 16 scenarios of
// math: compute-bound.
#include "../common/harness.cuh"

constexpr int kShocks = 16;

__device__ float cnd(float d) {
  const float A1 = 0.31938153f, A2 = -0.356563782f, A3 = 1.781477937f, A4 = -1.821255978f,
              A5 = 1.330274429f, RSQRT2PI = 0.39894228040143267794f;
  const float K = 1.0 / (1.0 + 0.2316419 * fabsf(d));
  float c = RSQRT2PI * expf(-0.5 * d * d) * (K * (A1 + K * (A2 + K * (A3 + K * (A4 + K * A5)))));
  if (d > 0) c = 1.0 - c;
  return c;
}

__global__ void black_scholes(float* call, float* put, const float* S, const float* X, const float* T,
                              float r, float v, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float s0 = S[i], x = X[i], t = T[i];
  const float sqrtT = sqrtf(t);
  const float expRT = expf(-r * t);
  float c = 0.f, p = 0.f;
  for (int s = 0; s < kShocks; ++s) {
    const float spot = s0 * (0.9 + 0.0125 * s);
    const float d1 = (logf(spot / x) + (r + 0.5 * v * v) * t) / (v * sqrtT);
    const float d2 = d1 - v * sqrtT;
    const float n1 = cnd(d1), n2 = cnd(d2);
    c += spot * n1 - x * expRT * n2;
    p += x * expRT * (1.0 - n2) - spot * (1.0 - n1);
  }
  call[i] = c / kShocks;
  put[i] = p / kShocks;
}

static double cnd_ref(double d) {
  const double K = 1.0 / (1.0 + 0.2316419 * std::fabs(d));
  double c = 0.39894228040143267794 * std::exp(-0.5 * d * d) *
             (K * (0.31938153 + K * (-0.356563782 + K * (1.781477937 + K * (-1.821255978 + K * 1.330274429)))));
  return d > 0 ? 1.0 - c : c;
}

int main(int argc, char** argv) {
  gpa::Options opt = gpa::parse_args(argc, argv);
  const int n = 1 << 22;
  const float r = 0.02f, v = 0.30f;
  std::vector<float> S(n), X(n), T(n);
  gpa::Lcg rng(89);
  for (int i = 0; i < n; ++i) {
    S[i] = rng.uniform(5.f, 30.f);
    X[i] = rng.uniform(1.f, 100.f);
    T[i] = rng.uniform(0.25f, 10.f);
  }
  float* dS = gpa::to_device(S);
  float* dX = gpa::to_device(X);
  float* dT = gpa::to_device(T);
  float* dcall = gpa::device_alloc<float>(n);
  float* dput = gpa::device_alloc<float>(n);
  const int block = 128, grid = (n + block - 1) / block;
  auto launch = [&] { black_scholes<<<grid, block>>>(dcall, dput, dS, dX, dT, r, v, n); };
  launch();
  CUDA_CHECK(cudaDeviceSynchronize());

  std::vector<float> call = gpa::to_host(dcall, n), put = gpa::to_host(dput, n);
  auto price = [&](size_t i, bool is_call) {
    const double t = T[i], x = X[i], sqrtT = std::sqrt(t), expRT = std::exp(-double(r) * t);
    double c = 0.0, p = 0.0;
    for (int s = 0; s < kShocks; ++s) {
      const double spot = S[i] * (0.9 + 0.0125 * s);
      const double d1 = (std::log(spot / x) + (r + 0.5 * double(v) * v) * t) / (v * sqrtT);
      const double d2 = d1 - v * sqrtT;
      const double n1 = cnd_ref(d1), n2 = cnd_ref(d2);
      c += spot * n1 - x * expRT * n2;
      p += x * expRT * (1.0 - n2) - spot * (1.0 - n1);
    }
    return (is_call ? c : p) / kShocks;
  };
  gpa::check_close(call, [&](size_t i) { return price(i, true); }, n, 1e-4, 1e-3, "calls (every 61st)", 61);
  gpa::check_close(put, [&](size_t i) { return price(i, false); }, n, 1e-4, 1e-3, "puts (every 61st)", 61);

  gpa::time_kernel("black_scholes", opt, launch);
  return 0;
}
