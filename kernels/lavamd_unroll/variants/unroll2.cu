// lavaMD-like pair interactions (seed 004): each thread walks its neighbour
// list; every iteration loads a neighbour index, then that neighbour's position
// and charge, and uses them at once. The loop is left rolled (`#pragma unroll
// 1`, as a compiler leaves a loop it judges too big), so each iteration waits
// for its two dependent loads and nothing overlaps them.
#include "../../common/harness.cuh"

__global__ void kernel_gpu_cuda(const float4* __restrict__ pos, const float* __restrict__ charge,
                                const int* __restrict__ nbr, float4* __restrict__ force, int n, int nnbr,
                                float a2) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float4 pi = pos[i];
  float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll 2
  for (int k = 0; k < nnbr; ++k) {
    const int j = nbr[k * n + i];
    const float4 pj = pos[j];
    const float qj = charge[j];
    const float r2 = pi.w + pj.w - (pi.x * pj.x + pi.y * pj.y + pi.z * pj.z);
    const float vij = __expf(-a2 * r2);
    const float fs = 2.f * vij;
    acc.w += qj * vij;
    acc.x += qj * fs * (pi.x - pj.x);
    acc.y += qj * fs * (pi.y - pj.y);
    acc.z += qj * fs * (pi.z - pj.z);
  }
  force[i] = acc;
}

int main(int argc, char** argv) {
  gpa::Options opt = gpa::parse_args(argc, argv);
  const int n = 1 << 18, nnbr = 256;
  const float a2 = 0.5f;
  std::vector<float4> pos(n);
  std::vector<float> q(n);
  std::vector<int> nbr(size_t(n) * nnbr);
  gpa::Lcg rng(31);
  for (int i = 0; i < n; ++i) {
    const float x = rng.uniform(0, 1), y = rng.uniform(0, 1), z = rng.uniform(0, 1);
    pos[i] = make_float4(x, y, z, 0.5f * (x * x + y * y + z * z));  // w = |p|^2 / 2 as in lavaMD
    q[i] = rng.uniform(-1, 1);
  }
  for (int k = 0; k < nnbr; ++k)
    for (int i = 0; i < n; ++i) nbr[size_t(k) * n + i] = int((i + n - 64 + rng.next() % 128) % n);  // neighbours of nearby boxes
  float4* dpos = gpa::to_device(pos);
  float* dq = gpa::to_device(q);
  int* dnbr = gpa::to_device(nbr);
  float4* dforce = gpa::device_alloc<float4>(n);
  const int block = 128, grid = (n + block - 1) / block;
  auto launch = [&] { kernel_gpu_cuda<<<grid, block>>>(dpos, dq, dnbr, dforce, n, nnbr, a2); };
  launch();
  CUDA_CHECK(cudaDeviceSynchronize());

  std::vector<float4> got4 = gpa::to_host(dforce, n);
  std::vector<float> got(n);
  for (int i = 0; i < n; ++i) got[i] = got4[i].w + got4[i].x;
  auto ref = [&](size_t i) {
    double w = 0.0, x = 0.0;
    const float4 pi = pos[i];
    for (int k = 0; k < nnbr; ++k) {
      const int j = nbr[size_t(k) * n + i];
      const float4 pj = pos[j];
      const double r2 = double(pi.w) + pj.w - (double(pi.x) * pj.x + double(pi.y) * pj.y + double(pi.z) * pj.z);
      const double vij = std::exp(-a2 * r2);
      w += q[j] * vij;
      x += q[j] * 2.0 * vij * (pi.x - pj.x);
    }
    return w + x;
  };
  gpa::check_close(got, ref, got.size(), 1e-4, 1e-4, "forces (every 5th)", 5);

  gpa::time_kernel("kernel_gpu_cuda", opt, launch);
  return 0;
}
