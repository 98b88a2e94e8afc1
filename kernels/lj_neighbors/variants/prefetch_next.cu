// Lennard-Jones forces and per-atom energies from a precomputed neighbour
// list, one thread per atom. 96^3 = 884736 atoms on a jittered simple-cubic
// lattice (spacing 1.3 sigma, periodic box of 124.8 sigma), positions in three
// arrays x, y, z; the list holds every atom within 2.7 sigma (cutoff 2.5 plus
// a 0.2 skin: ~32 per atom, ~27 inside the cutoff) in up to 64 slots per atom,
// stored slot-major (neigh[k * n + i]) with a count per atom.
// Performance problem: the float code keeps the double literals it was ported
// with (0.5 * box, 24.0 * eps, 2.0 * r6inv, 4.0 * eps, 1.0): every pair does
// about eight float <-> double conversions (F2F, 1/8 of the FP32 rate on
// sm_90), six FP64 compares and seven FP64 multiplies or FMAs besides its float
// work (nvcc itself turns the float result of 1.0 / r2 into a float reciprocal).
//
// Variant prefetch_next: Code Reordering's "issue loads earlier (prefetch the next
// iteration's data) and interleave independent work between a load and its first use":
// the neighbour loop is software-pipelined, the index of slot k + 2 (neigh) and the
// position of slot k + 1 (x, y, z of its j) loaded at the top of iteration k, before
// slot k's arithmetic, which uses the position loaded one iteration earlier; the pair
// arithmetic, its literals and its order are unchanged.
#include "../../common/harness.cuh"

constexpr int kMaxNeigh = 64;

__global__ void lj_forces(float4* force, const float* x, const float* y, const float* z, const int* neigh,
                          const int* count, int n, float box, float cutsq, float eps, float sig6) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float xi = x[i], yi = y[i], zi = z[i];
  float fx = 0.f, fy = 0.f, fz = 0.f, e = 0.f;
  const int cnt = count[i];
  // slot 0's position and slot 1's index before the loop (index 0, a valid atom, past cnt)
  const int j0 = cnt > 0 ? neigh[i] : 0;
  int jn = cnt > 1 ? neigh[n + i] : 0;
  float xj = x[j0], yj = y[j0], zj = z[j0];
  for (int k = 0; k < cnt; ++k) {
    // prefetch: slot k + 1's position (its index came one iteration ago) and slot k + 2's index
    const float xn = x[jn], yn = y[jn], zn = z[jn];
    const int jnn = k + 2 < cnt ? neigh[(k + 2) * n + i] : 0;
    float dx = xi - xj, dy = yi - yj, dz = zi - zj;
    if (dx > 0.5 * box) dx -= box; else if (dx < -0.5 * box) dx += box;
    if (dy > 0.5 * box) dy -= box; else if (dy < -0.5 * box) dy += box;
    if (dz > 0.5 * box) dz -= box; else if (dz < -0.5 * box) dz += box;
    const float r2 = dx * dx + dy * dy + dz * dz;
    if (r2 < cutsq) {
      const float r2inv = 1.0 / r2;
      const float r6inv = r2inv * r2inv * r2inv * sig6;
      const float fpair = 24.0 * eps * r6inv * (2.0 * r6inv - 1.0) * r2inv;
      fx += dx * fpair;
      fy += dy * fpair;
      fz += dz * fpair;
      e += 4.0 * eps * r6inv * (r6inv - 1.0);
    }
    xj = xn, yj = yn, zj = zn;
    jn = jnn;
  }
  force[i] = make_float4(fx, fy, fz, 0.5 * e);
}

int main(int argc, char** argv) {
  gpa::Options opt = gpa::parse_args(argc, argv);
  const int side = 96, n = side * side * side;
  const float a = 1.3f, box = side * a, rc = 2.5f, rlist = 2.7f, eps = 1.f, sig6 = 1.f;
  gpa::Lcg rng(47);
  std::vector<float> x(n), y(n), z(n);
  for (int i = 0; i < n; ++i) {
    x[i] = (i % side + 0.5f) * a + rng.uniform(-0.15f, 0.15f);
    y[i] = (i / side % side + 0.5f) * a + rng.uniform(-0.15f, 0.15f);
    z[i] = (i / (side * side) + 0.5f) * a + rng.uniform(-0.15f, 0.15f);
  }
  // the list: lattice sites within 2 steps (farther ones are > 3.6 sigma away), minimum image
  auto wrap = [&](float d) { return d > 0.5f * box ? d - box : d < -0.5f * box ? d + box : d; };
  std::vector<int> neigh(size_t(kMaxNeigh) * n, 0), count(n, 0);
  for (int i = 0; i < n; ++i) {
    const int ix = i % side, iy = i / side % side, iz = i / (side * side);
    for (int oz = -2; oz <= 2; ++oz)
      for (int oy = -2; oy <= 2; ++oy)
        for (int ox = -2; ox <= 2; ++ox) {
          const int j = ((iz + oz + side) % side * side + (iy + oy + side) % side) * side + (ix + ox + side) % side;
          const float dx = wrap(x[i] - x[j]), dy = wrap(y[i] - y[j]), dz = wrap(z[i] - z[j]);
          if (j == i || double(dx) * dx + double(dy) * dy + double(dz) * dz >= double(rlist) * rlist) continue;
          if (count[i] == kMaxNeigh) gpa::fail("neighbour list overflow");
          neigh[size_t(count[i]++) * n + i] = j;
        }
  }
  float* d_x = gpa::to_device(x);
  float* d_y = gpa::to_device(y);
  float* d_z = gpa::to_device(z);
  int* dneigh = gpa::to_device(neigh);
  int* dcount = gpa::to_device(count);
  float4* dforce = gpa::device_alloc<float4>(n);
  const int block = 128, grid = (n + block - 1) / block;
  auto launch = [&] { lj_forces<<<grid, block>>>(dforce, d_x, d_y, d_z, dneigh, dcount, n, box, rc * rc, eps, sig6); };
  launch();
  CUDA_CHECK(cudaDeviceSynchronize());

  // reference in double on every 5th output float (atom e / 4, component e % 4), from the
  // float differences the kernel wraps; a pair within rounding of the cutoff may fall on
  // either side, which moves a force component by at most 0.039 (the force at 2.5 sigma)
  std::vector<float4> f4 = gpa::to_host(dforce, n);
  std::vector<float> got(4 * size_t(n));
  for (int i = 0; i < n; ++i) {
    got[4 * size_t(i)] = f4[i].x, got[4 * size_t(i) + 1] = f4[i].y;
    got[4 * size_t(i) + 2] = f4[i].z, got[4 * size_t(i) + 3] = f4[i].w;
  }
  auto ref = [&](size_t e) {
    const size_t i = e / 4;
    double f[4] = {0.0, 0.0, 0.0, 0.0};
    for (int k = 0; k < count[i]; ++k) {
      const int j = neigh[size_t(k) * n + i];
      const double d[3] = {wrap(x[i] - x[j]), wrap(y[i] - y[j]), wrap(z[i] - z[j])};
      const double r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
      if (r2 >= double(rc) * rc) continue;
      const double r6inv = sig6 / (r2 * r2 * r2), fpair = 24.0 * eps * r6inv * (2.0 * r6inv - 1.0) / r2;
      for (int c = 0; c < 3; ++c) f[c] += d[c] * fpair;
      f[3] += 0.5 * 4.0 * eps * r6inv * (r6inv - 1.0);
    }
    return f[e % 4];
  };
  gpa::check_close(got, ref, 4 * size_t(n), 1e-3, 0.05, "force and energy (every 5th value)", 5);

  gpa::time_kernel("lj_forces", opt, launch);
  return 0;
}
