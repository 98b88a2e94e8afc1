// Per-class moments of a labelled data set, as in the statistics pass of
// linear discriminant analysis / Gaussian naive Bayes (the class means and
// variances come from each class's count, sum and sum of squares): label[i] is
// a byte, one of C = 8 classes, x[i] a float feature, n = 2^24 elements.
// A direct port of the CPU loop
//   for (i) { c = label[i]; cnt[c] += 1; sum[c] += x[i]; sumsq[c] += x[i] * x[i]; }
// with one global atomicAdd per accumulator and element, in a grid-stride loop
// over a grid that fills the GPU once (2048 threads per SM).
// Performance problem (prior): 3 * 2^24 atomics on 24 words (three 32-byte
// sectors): every warp's RED has ~4 lanes on each of 8 words of one sector, and
// all of them are serialized in the L2 slices that own those three sectors.
#include "../../common/harness.cuh"

constexpr int C = 8;  // classes

__global__ void class_moments(float* sum, float* sumsq, unsigned* cnt, const unsigned char* label,
                              const float* x, int n) {
#pragma unroll 4
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    const int c = label[i];
    const float v = x[i];
    atomicAdd(&cnt[c], 1u);
    atomicAdd(&sum[c], v);
    atomicAdd(&sumsq[c], v * v);
  }
}

int main(int argc, char** argv) {
  gpa::Options opt = gpa::parse_args(argc, argv);
  const int n = 1 << 24;
  gpa::Lcg rng(1313);
  // class c: feature ~ mean[c] + uniform noise, labels uniform over the C classes
  std::vector<unsigned char> label(static_cast<size_t>(n));
  std::vector<float> x(static_cast<size_t>(n));
  float mean[C], spread[C];
  for (int c = 0; c < C; ++c) {
    mean[c] = rng.uniform(-2.f, 4.f);
    spread[c] = rng.uniform(0.5f, 2.f);
  }
  for (int i = 0; i < n; ++i) {
    const int c = int(rng.next() % C);
    label[i] = (unsigned char)c;
    x[i] = mean[c] + rng.uniform(-spread[c], spread[c]);
  }
  unsigned char* dlabel = gpa::to_device(label);
  float* dx = gpa::to_device(x);
  float* dsum = gpa::device_alloc<float>(C);
  float* dsumsq = gpa::device_alloc<float>(C);
  unsigned* dcnt = gpa::device_alloc<unsigned>(C);
  int sms = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const int block = 256, grid = sms * (2048 / block);
  auto launch = [&] {
    CUDA_CHECK(cudaMemsetAsync(dsum, 0, C * sizeof(float)));
    CUDA_CHECK(cudaMemsetAsync(dsumsq, 0, C * sizeof(float)));
    CUDA_CHECK(cudaMemsetAsync(dcnt, 0, C * sizeof(unsigned)));
    class_moments<<<grid, block>>>(dsum, dsumsq, dcnt, dlabel, dx, n);
  };
  launch();
  CUDA_CHECK(cudaDeviceSynchronize());

  // every output against a double-precision reference; counts exactly (a lost or
  // doubled element fails), sums to 1e-2: ~2^21 float additions into one accumulator
  // per class (serial, as the atomics are) drift by up to ~6e-4 of sum |x| and ~1.6e-3
  // of the sum of squares with this input (small squares rounded away: a bias)
  double rsum[C] = {}, rsq[C] = {}, rcnt[C] = {};
  for (int i = 0; i < n; ++i) {
    const int c = label[i];
    const double v = x[i];
    rcnt[c] += 1.0;
    rsum[c] += v;
    rsq[c] += v * v;
  }
  double sabs[C] = {};  // scale of each sum: sum of |x| (a sum near 0 still has rounding errors)
  for (int i = 0; i < n; ++i) sabs[label[i]] += std::fabs(double(x[i]));
  std::vector<unsigned> gcnt = gpa::to_host(dcnt, C);
  std::vector<float> gsum = gpa::to_host(dsum, C), gsq = gpa::to_host(dsumsq, C);
  gpa::check_close(gcnt, [&](size_t c) { return rcnt[c]; }, C, 0.0, 0.0, "cnt");
  for (int c = 0; c < C; ++c) {
    if (!(std::fabs(double(gsum[c]) - rsum[c]) <= 1e-2 * sabs[c])) {
      std::fprintf(stderr, "sum: mismatch at %d: got %.7g want %.7g\n", c, double(gsum[c]), rsum[c]);
      gpa::fail("sum");
    }
  }
  std::printf("check sum: ok\n");
  gpa::check_close(gsq, [&](size_t c) { return rsq[c]; }, C, 1e-2, 0.0, "sumsq");

  gpa::time_kernel("class_moments", opt, launch);
  return 0;
}
