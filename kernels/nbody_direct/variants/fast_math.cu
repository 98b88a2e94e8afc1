// All-pairs gravitational accelerations (direct N-body), one thread per body:
// the block stages 64 bodies at a time in shared memory and every thread
// adds their pull on its body, softened: a_i += m_j * d / (|d|^2 + eps^2)^1.5.
// Performance problem: each interaction takes a precise sqrtf and a precise
// IEEE division: MUFU.RSQ and MUFU.RCP wrapped in Newton steps, range checks
// and branches to slow-path subroutines -- ~60 instructions where ~16 would
// do, and the branches keep nvcc from overlapping the unrolled interactions.
#include "../../common/harness.cuh"

constexpr int kTile = 64;

__global__ void nbody_forces(const float4* pos, float4* acc, int n, float eps2) {
  __shared__ float4 tile[kTile];
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const float4 pi = pos[i];
  float ax = 0.f, ay = 0.f, az = 0.f;
  for (int t = 0; t < n; t += kTile) {
    tile[threadIdx.x] = pos[t + threadIdx.x];
    __syncthreads();
    for (int k = 0; k < kTile; ++k) {
      const float4 pj = tile[k];
      const float dx = pj.x - pi.x, dy = pj.y - pi.y, dz = pj.z - pi.z;
      const float r2 = dx * dx + dy * dy + dz * dz + eps2;
      const float s = pj.w / (r2 * sqrtf(r2));
      ax += s * dx;
      ay += s * dy;
      az += s * dz;
    }
    __syncthreads();
  }
  acc[i] = make_float4(ax, ay, az, 0.f);
}

int main(int argc, char** argv) {
  gpa::Options opt = gpa::parse_args(argc, argv);
  const int n = 24576;
  const float eps2 = 1e-4f;
  std::vector<float4> pos(n);
  gpa::Lcg rng(61);
  for (auto& p : pos) {
    p.x = rng.uniform(-1.f, 1.f);
    p.y = rng.uniform(-1.f, 1.f);
    p.z = rng.uniform(-1.f, 1.f);
    p.w = rng.uniform(0.5f, 1.5f) / n;  // masses: total ~1
  }
  float4* dpos = gpa::to_device(pos);
  float4* dacc = gpa::device_alloc<float4>(n);
  auto launch = [&] { nbody_forces<<<n / kTile, kTile>>>(dpos, dacc, n, eps2); };
  launch();
  CUDA_CHECK(cudaDeviceSynchronize());

  // acc as 4 floats per body (x, y, z, 0); the reference sums in double
  std::vector<float4> acc4 = gpa::to_host(dacc, n);
  std::vector<float> got(4 * size_t(n));
  for (int b = 0; b < n; ++b) {
    got[4 * b] = acc4[b].x;
    got[4 * b + 1] = acc4[b].y;
    got[4 * b + 2] = acc4[b].z;
    got[4 * b + 3] = acc4[b].w;
  }
  auto ref = [&](size_t k) {
    const int b = int(k / 4), c = int(k % 4);
    if (c == 3) return 0.0;
    const double pb[3] = {pos[b].x, pos[b].y, pos[b].z};
    double a = 0.0;
    for (int j = 0; j < n; ++j) {
      const double d[3] = {pos[j].x - pb[0], pos[j].y - pb[1], pos[j].z - pb[2]};
      const double r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2] + eps2;
      a += pos[j].w * d[c] / (r2 * std::sqrt(r2));
    }
    return a;
  };
  gpa::check_close(got, ref, got.size(), 1e-3, 1e-3, "accelerations (every 257th component)", 257);

  gpa::time_kernel("nbody_forces", opt, launch);
  return 0;
}
