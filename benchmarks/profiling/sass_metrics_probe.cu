// Can CUPTI's SASS Metrics API give a CUPTI bundle what only Nsight Compute's bundle has today:
// per-instruction executed counts, thread-executed counts and global-memory sectors? (issues 15, 17:
// the coalescing, narrow-stream and divergence models need them, and CUPTI is the editor's default.)
//
// One program, no harness: lists the SASS metrics the chip offers, then runs a kernel with a known
// answer -- a strided load (each lane its own 32-byte sector: 32 sectors per warp request, ideal 4)
// and a coalesced one, 2^24 elements -- bare (timed), then under the SASS Metrics API with four
// metrics at GPU granularity (timed: the patching's cost per launch), and prints each patched
// instruction's values against what the kernel must do. Build and run on the GPU machine:
//   nvcc -O3 -arch=sm_90 -lineinfo -I$CUPTI/include -L$CUPTI/lib64 -o /tmp/smp sass_metrics_probe.cu -lcupti -lcuda
#include <cuda.h>
#include <cuda_runtime.h>
#include <cupti.h>
#include <cupti_profiler_target.h>
#include <cupti_sass_metrics.h>
#include <cupti_target.h>
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#define CK(x) do { CUptiResult r_ = (x); if (r_ != CUPTI_SUCCESS) { const char* s_; cuptiGetResultString(r_, &s_); \
  std::printf("{\"error\": \"%s\", \"at\": \"%s\"}\n", s_, #x); return 1; } } while (0)
#define CC(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { std::printf("{\"error\": \"%s\", \"at\": \"%s\"}\n", \
  cudaGetErrorString(e_), #x); return 1; } } while (0)

constexpr int kN = 1 << 24;

__global__ void strided_and_coalesced(const float* a, const float* b, float* out, int n, int stride) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float s = a[(size_t(i) * stride) % size_t(n)];   // lanes 32 bytes apart: a sector each
  const float c = b[i];                                   // coalesced: 4 sectors per request
  out[i] = s + c;
}

template <class F>
static float median_ms(F launch, int runs = 11) {
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  std::vector<float> t;
  for (int r = 0; r < runs; ++r) {
    cudaEventRecord(a);
    launch();
    cudaEventRecord(b);
    cudaEventSynchronize(b);
    float ms = 0.f;
    cudaEventElapsedTime(&ms, a, b);
    t.push_back(ms);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

int main() {
  float *a, *b, *out;
  CC(cudaMalloc(&a, sizeof(float) * kN));
  CC(cudaMalloc(&b, sizeof(float) * kN));
  CC(cudaMalloc(&out, sizeof(float) * kN));
  CC(cudaMemset(a, 0, sizeof(float) * kN));
  CC(cudaMemset(b, 0, sizeof(float) * kN));
  CUcontext ctx;
  cuCtxGetCurrent(&ctx);
  auto launch = [&] { strided_and_coalesced<<<kN / 256, 256>>>(a, b, out, kN, 8); };
  launch();
  CC(cudaDeviceSynchronize());
  const float bare = median_ms(launch);

  CUpti_Profiler_Initialize_Params init = {CUpti_Profiler_Initialize_Params_STRUCT_SIZE};
  CK(cuptiProfilerInitialize(&init));
  CUpti_Device_GetChipName_Params chip = {CUpti_Device_GetChipName_Params_STRUCT_SIZE};
  chip.deviceIndex = 0;
  CK(cuptiDeviceGetChipName(&chip));
  CUpti_SassMetrics_GetNumOfMetrics_Params num = {CUpti_SassMetrics_GetNumOfMetrics_Params_STRUCT_SIZE};
  num.pChipName = chip.pChipName;
  CK(cuptiSassMetricsGetNumOfMetrics(&num));
  std::vector<CUpti_SassMetrics_MetricDetails> list(num.numOfMetrics);
  CUpti_SassMetrics_GetMetrics_Params get = {CUpti_SassMetrics_GetMetrics_Params_STRUCT_SIZE};
  get.pChipName = chip.pChipName;
  get.numOfMetrics = num.numOfMetrics;
  get.pMetricsList = list.data();
  CK(cuptiSassMetricsGetMetrics(&get));
  std::printf("{\"chip\": \"%s\", \"metrics\": [", chip.pChipName);
  for (size_t k = 0; k < list.size(); ++k) std::printf("%s\"%s\"", k ? ", " : "", list[k].pMetricName);
  std::printf("]}\n");

  // what the models read: executed (warp-level), thread-executed, global sectors
  const char* wanted[] = {"smsp__sass_inst_executed", "smsp__sass_thread_inst_executed",
                          "smsp__sass_sectors_mem_global", "smsp__sass_sectors_mem_global_ideal"};
  std::vector<CUpti_SassMetrics_Config> cfg;
  std::vector<std::string> names;
  for (const char* w : wanted) {
    CUpti_SassMetrics_GetProperties_Params prop = {CUpti_SassMetrics_GetProperties_Params_STRUCT_SIZE};
    prop.pChipName = chip.pChipName;
    prop.pMetricName = w;
    if (cuptiSassMetricsGetProperties(&prop) != CUPTI_SUCCESS) {
      std::printf("{\"missing\": \"%s\"}\n", w);
      continue;
    }
    cfg.push_back({prop.metric.metricId, CUPTI_SASS_METRICS_OUTPUT_GRANULARITY_GPU});
    names.push_back(w);
  }
  CUpti_SassMetricsSetConfig_Params set = {CUpti_SassMetricsSetConfig_Params_STRUCT_SIZE};
  set.numOfMetricConfig = cfg.size();
  set.pConfigs = cfg.data();
  set.deviceIndex = 0;
  CK(cuptiSassMetricsSetConfig(&set));
  CUpti_SassMetricsEnable_Params en = {CUpti_SassMetricsEnable_Params_STRUCT_SIZE};
  en.ctx = ctx;
  en.enableLazyPatching = 1;
  CK(cuptiSassMetricsEnable(&en));
  launch();                                   // the first launch patches (lazy)
  CC(cudaDeviceSynchronize());
  const float patched = median_ms(launch);    // 11 more launches, each counted
  CUpti_SassMetricsGetDataProperties_Params dp = {CUpti_SassMetricsGetDataProperties_Params_STRUCT_SIZE};
  dp.ctx = ctx;
  CK(cuptiSassMetricsGetDataProperties(&dp));
  std::vector<CUpti_SassMetrics_Data> data(dp.numOfPatchedInstructionRecords);
  // a record is one (instruction, metric): its instances (one at GPU granularity) carry the metric's id
  std::vector<CUpti_SassMetrics_InstanceValue> values(dp.numOfPatchedInstructionRecords * dp.numOfInstances);
  for (size_t k = 0; k < data.size(); ++k) {
    data[k].structSize = sizeof(CUpti_SassMetrics_Data);
    data[k].pInstanceValues = values.data() + k * dp.numOfInstances;
  }
  CUpti_SassMetricsFlushData_Params fl = {CUpti_SassMetricsFlushData_Params_STRUCT_SIZE};
  fl.ctx = ctx;
  fl.numOfPatchedInstructionRecords = dp.numOfPatchedInstructionRecords;
  fl.numOfInstances = dp.numOfInstances;
  fl.pMetricsData = data.data();
  CK(cuptiSassMetricsFlushData(&fl));
  const int launches = 12;
  for (size_t k = 0; k < data.size(); ++k) {
    unsigned long long v = 0;
    uint64_t id = data[k].pInstanceValues[0].metricId;
    for (size_t i = 0; i < dp.numOfInstances; ++i) v += data[k].pInstanceValues[i].value;
    const char* name = "?";
    for (size_t m = 0; m < cfg.size(); ++m)
      if (cfg[m].metricId == id) name = names[m].c_str();
    std::printf("{\"pc\": %u, \"function\": \"%s\", \"metric\": \"%s\", \"value\": %llu}\n", data[k].pcOffset,
                data[k].functionName ? data[k].functionName : "?", name, v);
  }
  CUpti_SassMetricsDisable_Params dis = {CUpti_SassMetricsDisable_Params_STRUCT_SIZE};
  dis.ctx = ctx;
  CK(cuptiSassMetricsDisable(&dis));
  CUpti_SassMetricsUnsetConfig_Params unset = {CUpti_SassMetricsUnsetConfig_Params_STRUCT_SIZE};
  unset.deviceIndex = 0;
  CK(cuptiSassMetricsUnsetConfig(&unset));
  std::printf("{\"bare_ms\": %.5f, \"patched_ms\": %.5f, \"launches_counted\": %d, \"records\": %zu, \"instances\": %zu, "
              "\"expect_warps_per_launch\": %d}\n", bare, patched, launches, dp.numOfPatchedInstructionRecords,
              dp.numOfInstances, kN / 32);
  return 0;
}
