// The per-lane walk of lanewalk_probe.cu with rows of *different* lengths: what the lanes whose
// rows have ended cost each way of walking.
//
// Row r has n_r elements, n_r uniform in [1, 2L - 1] (mean L), so at step k of the scalar walk
// only the lanes whose rows are longer than k are active (the profile's thread-executed count
// over 32 x the warp-executed count says how many). The same three walks over the same rows:
//
//   scalar  one thread per row, CSR (row r at row_ptr[r]): a warp runs as long as its longest row
//   ell     one thread per row, the rows stored column-major and padded to the longest row
//           (element k of row r at k * rows + r; as SELL-32 at the request level): every request
//           is coalesced, and the slots of the lanes whose rows have ended lie in the same sectors
//   vector  one warp per row (CSR vector): ceil(n_r / 32) steps for a row, lanes past its end idle
//
// with and without the gather x[col[j]], at 32 and 64 warps per SM (the kernels, the fill and the
// x band of lanewalk_probe.cu). Run by record_probe.sh lanewalk_spread; table_lanewalk.py
// lanewalk_spread adds the rows to gpa_lsp/data/coalescing.json ("lanewalk_spread").
//
//   lanewalk_spread_probe           every configuration once (for ncu)
//   lanewalk_spread_probe --time    median of 5 timed runs of each
//   lanewalk_spread_probe --list    one line per configuration, in launch order
#define LANEWALK_NO_MAIN
#include "lanewalk_probe.cu"

// row r's n elements: CSR at row_ptr[r] + k, column-major at k * rows + r
__global__ void fill_rows(int rows, const int* row_ptr, int* col, float* val, int* col_t, float* val_t) {
  for (int r = blockIdx.x * blockDim.x + threadIdx.x; r < rows; r += gridDim.x * blockDim.x) {
    const int centre = int(long(r) * NX / rows);
    for (int j = row_ptr[r], k = 0; j < row_ptr[r + 1]; ++j, ++k) {
      const int c = (centre + int(mix(unsigned(j)) % (2 * BAND + 1)) - BAND + NX) % NX;
      const float v = float(mix(unsigned(j) ^ 0x9e3779b9u) & 0xffff) / 65536.f - 0.5f;
      col[j] = c;
      val[j] = v;
      col_t[long(k) * rows + r] = c;
      val_t[long(k) * rows + r] = v;
    }
  }
}

// the host's copy of mix(): row lengths are drawn on the host, where row_ptr is summed
static unsigned host_mix(unsigned v) {
  v ^= v >> 16; v *= 0x7feb352du; v ^= v >> 15; v *= 0x846ca68bu; v ^= v >> 16;
  return v;
}

static const int kSpreadLengths[] = {16, 32};
static const int kSpreadBlocksPerSm[] = {4, 8};   // 32, 64 warps per SM

int main(int argc, char** argv) {
  const bool list = argc > 1 && !std::strcmp(argv[1], "--list");
  const bool timed = argc > 1 && !std::strcmp(argv[1], "--time");
  int sms = 132;
  int *row_ptr = nullptr, *col = nullptr, *col_t = nullptr;
  float *val = nullptr, *val_t = nullptr, *x = nullptr, *y = nullptr;
  const long max_rows = NNZ / kSpreadLengths[0];
  const long max_slots = NNZ * 2;   // rows x (2L - 1) for either L
  if (!list) {
    CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    CHECK(cudaMalloc(&row_ptr, (max_rows + 1) * sizeof(int)));
    CHECK(cudaMalloc(&col, max_slots * sizeof(int)));
    CHECK(cudaMalloc(&val, max_slots * sizeof(float)));
    CHECK(cudaMalloc(&col_t, max_slots * sizeof(int)));
    CHECK(cudaMalloc(&val_t, max_slots * sizeof(float)));
    CHECK(cudaMalloc(&x, NX * sizeof(float)));
    CHECK(cudaMalloc(&y, max_rows * sizeof(float)));
    CHECK(cudaMemset(x, 0, NX * sizeof(float)));
  }
  cudaEvent_t a, b;
  if (timed) { CHECK(cudaEventCreate(&a)); CHECK(cudaEventCreate(&b)); }
  const int block = 256;
  for (int L : kSpreadLengths) {
    const int rows = int(NNZ / L);
    if (!list) {
      std::vector<int> rp(rows + 1, 0);
      for (int r = 0; r < rows; ++r) rp[r + 1] = rp[r] + 1 + int(host_mix(unsigned(r) * 2654435761u) % unsigned(2 * L - 1));
      CHECK(cudaMemcpy(row_ptr, rp.data(), (rows + 1) * sizeof(int), cudaMemcpyHostToDevice));
      fill_rows<<<sms * 8, 256>>>(rows, row_ptr, col, val, col_t, val_t);
      CHECK(cudaGetLastError());
      CHECK(cudaDeviceSynchronize());
    }
    for (int gather = 0; gather < 2; ++gather) {
      for (const Mode& m : kModes) {
        for (int bps : kSpreadBlocksPerSm) {
          const int grid = sms * bps, warps = bps * block / 32;
          if (list) {
            std::printf("%s L=%d gather=%d warps_per_sm=%d\n", m.name, L, gather, warps);
            continue;
          }
          const bool t = !std::strcmp(m.name, "ell");
          auto go = [&] { m.k[gather]<<<grid, block>>>(rows, row_ptr, t ? col_t : col, t ? val_t : val, x, y); };
          if (!timed) {
            go();
            CHECK(cudaGetLastError());
            continue;
          }
          float median = 0.f;
          CHECK(median_ms(go, a, b, &median));
          std::printf("%s L=%d gather=%d warps_per_sm=%d median_ms=%.5f\n", m.name, L, gather, warps, median);
        }
      }
    }
  }
  if (!list) CHECK(cudaDeviceSynchronize());
  return 0;
}
