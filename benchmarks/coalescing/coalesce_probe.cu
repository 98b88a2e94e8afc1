// What an uncoalesced global access costs on this GPU, unit by unit: the same
// useful work (one 4-byte element per thread per step) done with warp requests
// of 1 to 32 sectors, from a working set that lives in L1, in L2 or in DRAM,
// read or written, at 8, 32 and 64 warps per SM. Run under ncu by record.sh,
// which takes time, sectors per request and the L1/L2/DRAM share of peak of
// every launch; table.py makes gpa_lsp/data/coalescing.json of it, which
// gpa_lsp/analysis/coalescing.py reads.
//
// Pattern "rowG": a warp owns a tile of 32 x K elements; its lanes form
// groups of G consecutive lanes, each group walks its own row of K x G
// elements, G at a time (lane j of a group reads row[i * G + j] at step i).
// A request then touches 32/G rows: G = 1 is the column-major walk (32
// sectors, one per lane, each sector used again by the next 7 steps), G = 2:
// 16 sectors, G = 4: 8, G = 8: 4 sectors in 4 lines, G = 32: 4 sectors in one
// line (coalesced). Every element of the tile is used once, so DRAM moves
// the same bytes for every G; only what L1 (and L2, for L1 misses) serves
// changes. "bcast": the 32 lanes read 8 consecutive elements (1 sector).
// "stride8": lane l reads element 8 l, the next step the next 32 x 8 (32
// sectors, one element used per sector: the excess reaches DRAM).
//
// Foot "l1": each block walks one tile again and again (4 KiB per block);
// "l2": the tiles of a 16 MiB region; "dram": 256 MiB of tiles, each once. The
// same number of tile visits (the same useful bytes) in every configuration.
//
// Divergence ("div"): a warp walks chunks of 256 list entries with A of its lanes
// (the others idle, as in a loop whose trip count differs per lane); each
// entry is an index load and a dependent gather. A = 32 is the converged
// loop; the time per entry at A = 1..32 is what converging a loop buys when
// every active lane's iteration is a gather.
//
//   coalesce_probe           runs every configuration once under ncu (record.sh)
//   coalesce_probe --time    times each configuration (median of 5, cudaEvent) and prints it
//   coalesce_probe --list    prints one line per configuration, in launch order
#include "probe_timing.cuh"
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <vector>


constexpr int K = 32;                 // steps per tile: a tile is 32 x K elements (4 KiB)
constexpr long TILE = 32L * K;
constexpr long L2_TILES = (16L << 20) / (TILE * 4);
constexpr long DRAM_TILES = (512L << 20) / (TILE * 4);
enum Foot { L1 = 0, L2 = 1, DRAM = 2 };

__device__ __forceinline__ long tile_of(int foot, long t) {
  if (foot == L1) return blockIdx.x;                 // the block's own tile, every pass
  if (foot == L2) return t % L2_TILES;
  return t;
}

// G lanes per group (G = 0: bcast, G = -8: stride8); STORE: write instead of read
template <int G, bool STORE>
__global__ void __launch_bounds__(256) walk(float* data, int foot, long tiles, float* sink) {
  const int lane = threadIdx.x & 31;
  const long warp = (long(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
  const long warps = (long(gridDim.x) * blockDim.x) >> 5;
  float acc = 0.f;
  for (long t = warp; t < tiles; t += warps) {
    float* tile = data + (G < 0 ? (t * 8) % DRAM_TILES : tile_of(foot, t)) * TILE;
#pragma unroll 4
    for (int i = 0; i < K; ++i) {
      long at;
      if constexpr (G == 0) {
        at = i * 8 + (lane & 7);
      } else if constexpr (G < 0) {
        at = (long(i) * 32 + lane) * 8;   // spans 8 tiles: one element per sector
      } else {
        at = long(lane / G) * (K * G) + i * G + (lane % G);
      }
      if (STORE)
        tile[at] = float(i);
      else
        acc += tile[at];
    }
  }
  if (!STORE && acc == 1234.5f) *sink = acc;   // keeps the loads; never true for the zero input
}

// A active lanes of each warp walk 32 x K entries: index load, then a gather
constexpr long CHUNK = 256;
template <int A>
__global__ void __launch_bounds__(256) diverge(const int* idx, const float* data, long entries, float* sink) {
  const int lane = threadIdx.x & 31;
  const long warp = (long(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
  const long warps = (long(gridDim.x) * blockDim.x) >> 5;
  float acc = 0.f;
  if (lane < A) {
    for (long base = warp * CHUNK; base < entries; base += warps * CHUNK) {
      for (long e = base + lane; e < base + CHUNK; e += A) acc += data[idx[e]];
    }
  }
  if (acc == 1234.5f) *sink = acc;
}

struct Config {
  const char* name;
  int kind;    // 0 walk, 1 diverge
  void (*walk)(float*, int, long, float*, int, int);
  void (*div)(const int*, const float*, long, float*, int, int);
  int sectors; // nominal sectors per request (walk), active lanes (diverge)
  int store;
};

template <int G, bool STORE>
void launch_walk(float* d, int foot, long tiles, float* sink, int grid, int block) {
  walk<G, STORE><<<grid, block>>>(d, foot, tiles, sink);
}
template <int A>
void launch_div(const int* idx, const float* d, long n, float* sink, int grid, int block) {
  diverge<A><<<grid, block>>>(idx, d, n, sink);
}

#define W(G, S, ST, NAME) {NAME, 0, launch_walk<G, ST>, nullptr, S, ST}
#define D(A) {"div_a" #A, 1, nullptr, launch_div<A>, A, 0}
static const Config kConfigs[] = {
    W(32, 4, false, "row32_ld"), W(8, 4, false, "row8_ld"), W(4, 8, false, "row4_ld"),
    W(2, 16, false, "row2_ld"),  W(1, 32, false, "row1_ld"), W(0, 1, false, "bcast_ld"),
    W(-8, 32, false, "stride8_ld"),
    W(32, 4, true, "row32_st"),  W(4, 8, true, "row4_st"),   W(1, 32, true, "row1_st"),
    D(1), D(4), D(8), D(32),
};
static const char* kFoot[] = {"l1", "l2", "dram"};
static const int kBlocksPerSm[] = {1, 4, 8};  // x 8 warps: 8, 32, 64 warps per SM

int main(int argc, char** argv) {
  const bool list = argc > 1 && !std::strcmp(argv[1], "--list");
  const bool timed = argc > 1 && !std::strcmp(argv[1], "--time");
  int sms = 132;
  if (!list) CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const long bytes = DRAM_TILES * TILE * 4;
  float *data = nullptr, *sink = nullptr;
  int* idx = nullptr;
  const long div_entries = 1L << 25;   // 128 MiB of indices
  if (!list) {
    CHECK(cudaMalloc(&data, bytes));
    CHECK(cudaMalloc(&sink, sizeof(float)));
    CHECK(cudaMemset(data, 0, bytes));
    std::vector<int> h(div_entries);
    unsigned s = 12345;
    for (auto& v : h) { s = s * 1664525u + 1013904223u; v = int((s >> 4) % (4u << 20)); }  // 16 MiB of data
    CHECK(cudaMalloc(&idx, div_entries * sizeof(int)));
    CHECK(cudaMemcpy(idx, h.data(), div_entries * sizeof(int), cudaMemcpyHostToDevice));
  }
  cudaEvent_t a, b;
  if (timed) { CHECK(cudaEventCreate(&a)); CHECK(cudaEventCreate(&b)); }
  const int block = 256;
  for (const Config& c : kConfigs) {
    for (int foot = 0; foot < 3; ++foot) {
      if (c.kind == 1 && foot != DRAM) continue;        // diverge: one footprint (indices from DRAM, data in L2)
      if (c.sectors == 32 && c.name[0] == 's' && foot != DRAM) continue;   // stride8: DRAM only
      for (int bps : kBlocksPerSm) {
        const int grid = sms * bps, warps = bps * block / 32;
        // the same useful work in every footprint: 256 MiB of elements
        const long tiles = DRAM_TILES / 2;
        if (list) {
          std::printf("%s foot=%s warps_per_sm=%d sectors=%d store=%d\n", c.name, c.kind ? "dram" : kFoot[foot],
                      warps, c.sectors, c.store);
          continue;
        }
        auto go = [&] {
          if (c.kind == 0)
            c.walk(data, foot, tiles, sink, grid, block);
          else
            c.div(idx, data, div_entries, sink, grid, block);
        };
        if (!timed) {
          go();
          CHECK(cudaGetLastError());
          continue;
        }
        float median = 0.f;
        CHECK(median_ms(go, a, b, &median));
        std::printf("%s foot=%s warps_per_sm=%d median_ms=%.5f\n", c.name, c.kind ? "dram" : kFoot[foot], warps, median);
      }
    }
  }
  if (!list) CHECK(cudaDeviceSynchronize());
  return 0;
}
