// Smith-Waterman scores of many short queries (seed 003): one problem per
// thread, the query in registers, the reference read chunk by chunk. Both outer
// loops carry `#pragma unroll`: the kernel body becomes tens of thousands of
// instructions, more than the instruction caches hold, and warps that drift
// apart stall on instruction fetch ("no instruction").
#include "../../common/harness.cuh"

typedef unsigned char uchar;

constexpr int kQuery = 16;   // query length (rows), kept in registers
constexpr int kChunks = 8;   // reference = kChunks * kChunk characters (columns)
constexpr int kChunk = 32;
constexpr int kRefLen = kChunks * kChunk;

__global__ void __launch_bounds__(128, 10) sw_align(const uchar* __restrict__ query, const uchar* __restrict__ genome,
                         const int* __restrict__ offset, int* __restrict__ score, int nprob) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= nprob) return;
  int q[kQuery], H[kQuery];
#pragma unroll
  for (int k = 0; k < kQuery; ++k) {
    q[k] = query[k * nprob + t];
    H[k] = 0;
  }
  const uchar* ref = genome + offset[t];
  int best = 0;
#pragma unroll
  for (int c = 0; c < kChunks; ++c) {
#pragma unroll
    for (int r = 0; r < kChunk; ++r) {
      const int rc = ref[c * kChunk + r];
      int diag = 0, up = 0;
#pragma unroll
      for (int k = 0; k < kQuery; ++k) {
        const int h = max(max(0, diag + (q[k] == rc ? 3 : -1)), max(H[k] - 2, up - 2));
        diag = H[k];
        H[k] = h;
        up = h;
        best = max(best, h);
      }
    }
  }
  score[t] = best;
}

int main(int argc, char** argv) {
  gpa::Options opt = gpa::parse_args(argc, argv);
  const int nprob = 1 << 19;
  const int glen = 1 << 20;
  gpa::Lcg rng(5);
  std::vector<uchar> query(size_t(kQuery) * nprob), genome(glen);
  std::vector<int> offset(nprob);
  for (auto& c : genome) c = uchar(rng.next() & 3);
  for (int t = 0; t < nprob; ++t) {
    offset[t] = int(rng.next() % unsigned(glen - kRefLen));
    // half of the queries are copied from the genome so that scores are not all small
    const int src = (t & 1) ? offset[t] + int(rng.next() % (kRefLen - kQuery)) : -1;
    for (int k = 0; k < kQuery; ++k)
      query[size_t(k) * nprob + t] = src >= 0 ? genome[src + k] : uchar(rng.next() & 3);
  }
  uchar* dq = gpa::to_device(query);
  uchar* dg = gpa::to_device(genome);
  int* doff = gpa::to_device(offset);
  int* dscore = gpa::device_alloc<int>(nprob);
  const int block = 128, grid = (nprob + block - 1) / block;
  auto launch = [&] { sw_align<<<grid, block>>>(dq, dg, doff, dscore, nprob); };
  launch();
  CUDA_CHECK(cudaDeviceSynchronize());

  std::vector<int> got = gpa::to_host(dscore, nprob);
  auto ref = [&](size_t t) {
    int H[kQuery] = {0}, best = 0;
    for (int j = 0; j < kRefLen; ++j) {
      const int rc = genome[offset[t] + j];
      int diag = 0, up = 0;
      for (int k = 0; k < kQuery; ++k) {
        const int h = std::max(std::max(0, diag + (query[k * size_t(nprob) + t] == rc ? 3 : -1)),
                               std::max(H[k] - 2, up - 2));
        diag = H[k];
        H[k] = up = h;
        best = std::max(best, h);
      }
    }
    return double(best);
  };
  gpa::check_close(got, ref, got.size(), 0.0, 0.0, "alignment scores (every 37th)", 37);

  gpa::time_kernel("sw_align", opt, launch);
  return 0;
}
