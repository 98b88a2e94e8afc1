// Cosine similarity of a batch of query embeddings against one reference vector
// (a retrieval scoring step, torch.nn.functional.cosine_similarity(x, r[None]) on
// dim 1): x is 2^19 rows of D = 128 floats (256 MB, row-major), r one D-vector,
// out[i] = <x_i, r> / max(|x_i| |r|, eps). D is a run-time argument. One thread
// per row, as a first port of the CPU loop: it walks its row with scalar loads,
// accumulating the dot product and both sums of squares, then one division.
// Performance problem: at every step the 32 lanes of a warp read 32 rows 512 B
// apart, so each load of x touches 32 lines (one 4-byte word per lane); the
// load of r is one address per warp (a broadcast).
//
// Variant unroll4: #pragma unroll 4 on the run-time loop over the row.
#include "../../common/harness.cuh"

__global__ void cosine_rows(float* out, const float* x, const float* r, int n, int d) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float* row = x + size_t(i) * d;
  float dot = 0.f, xx = 0.f, rr = 0.f;
#pragma unroll 4
  for (int k = 0; k < d; ++k) {
    const float a = row[k];
    const float b = r[k];
    dot += a * b;
    xx += a * a;
    rr += b * b;
  }
  out[i] = dot / fmaxf(sqrtf(xx) * sqrtf(rr), 1e-8f);
}

int main(int argc, char** argv) {
  gpa::Options opt = gpa::parse_args(argc, argv);
  const int n = 1 << 19, d = 128;
  gpa::Lcg rng(53);
  // reference vector, and rows that are a random multiple of it plus noise, so
  // that the similarities spread over about (-0.85, 0.85) instead of clustering at 0
  std::vector<float> r(d);
  for (auto& v : r) v = rng.uniform(-1.f, 1.f);
  std::vector<float> x(size_t(n) * d);
  for (int i = 0; i < n; ++i) {
    const float a = rng.uniform(-1.f, 1.f);
    for (int k = 0; k < d; ++k) x[size_t(i) * d + k] = a * r[k] + rng.uniform(-1.f, 1.f);
  }
  float* dx = gpa::to_device(x);
  float* dr = gpa::to_device(r);
  float* dout = gpa::device_alloc<float>(n);
  const int block = 256, grid = (n + block - 1) / block;
  auto launch = [&] { cosine_rows<<<grid, block>>>(dout, dx, dr, n, d); };
  launch();
  CUDA_CHECK(cudaDeviceSynchronize());

  // reference in double on every row
  std::vector<float> got = gpa::to_host(dout, n);
  double rr = 0.0;
  for (int k = 0; k < d; ++k) rr += double(r[k]) * r[k];
  auto ref = [&](size_t i) {
    double dot = 0.0, xx = 0.0;
    for (int k = 0; k < d; ++k) {
      const double a = x[i * d + k];
      dot += a * r[k];
      xx += a * a;
    }
    return dot / std::max(std::sqrt(xx) * std::sqrt(rr), 1e-8);
  };
  gpa::check_close(got, ref, n, 1e-4, 1e-6, "out");

  gpa::time_kernel("cosine_rows", opt, launch);
  return 0;
}
