/*
 * metric_passes: replay passes a set of metrics needs on a chip, computed on the host by
 * Perfworks (libnvperf_host from the CUPTI wheel), no GPU needed. Which of the counters run's
 * unit metrics cost the passes (benchmarks/profiling/README.md, issue 17).
 *
 *   W=$(python3 -c 'import nvidia.cu13; print(list(nvidia.cu13.__path__)[0])')
 *   cc -O1 -I$W/include benchmarks/profiling/metric_passes.c -o /tmp/metric_passes \
 *      $W/lib/libnvperf_host.so -Wl,-rpath,$W/lib
 *   /tmp/metric_passes GH100 sm__throughput.avg.pct_of_peak_sustained_elapsed ...
 *
 * Caveat: with the wheel's Perfworks (CUPTI 13.5 here) the five unit shares come to 9 passes,
 * while CUPTI 13.0.1's cuptiProfilerHostGetNumOfPasses said 18 on the H100: the relative costs
 * are what this tells, not the device's count.
 */
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <nvperf_host.h>
#include <nvperf_cuda_host.h>
#define CK(x) do { NVPA_Status s_ = (x); if (s_) { printf("%s -> %d\n", #x, (int)s_); exit(1);} } while (0)
int main(int argc, char **argv) {
    NVPW_InitializeHost_Params ih = {NVPW_InitializeHost_Params_STRUCT_SIZE};
    CK(NVPW_InitializeHost(&ih));
    const char *chip = argc > 1 ? argv[1] : "GH100";
    NVPW_CUDA_MetricsEvaluator_CalculateScratchBufferSize_Params cs = {NVPW_CUDA_MetricsEvaluator_CalculateScratchBufferSize_Params_STRUCT_SIZE};
    cs.pChipName = chip;
    CK(NVPW_CUDA_MetricsEvaluator_CalculateScratchBufferSize(&cs));
    uint8_t *scratch = calloc(cs.scratchBufferSize, 1);
    NVPW_CUDA_MetricsEvaluator_Initialize_Params mi = {NVPW_CUDA_MetricsEvaluator_Initialize_Params_STRUCT_SIZE};
    mi.pScratchBuffer = scratch; mi.scratchBufferSize = cs.scratchBufferSize; mi.pChipName = chip;
    CK(NVPW_CUDA_MetricsEvaluator_Initialize(&mi));
    NVPW_CUDA_RawMetricsConfig_Create_V2_Params cc = {NVPW_CUDA_RawMetricsConfig_Create_V2_Params_STRUCT_SIZE};
    cc.activityKind = NVPA_ACTIVITY_KIND_PROFILER; cc.pChipName = chip;
    CK(NVPW_CUDA_RawMetricsConfig_Create_V2(&cc));
    NVPW_RawMetricsConfig_BeginPassGroup_Params bp = {NVPW_RawMetricsConfig_BeginPassGroup_Params_STRUCT_SIZE};
    bp.pRawMetricsConfig = cc.pRawMetricsConfig;
    CK(NVPW_RawMetricsConfig_BeginPassGroup(&bp));
    size_t nraw_total = 0;
    for (int i = 2; i < argc; i++) {
        struct NVPW_MetricEvalRequest req;
        NVPW_MetricsEvaluator_ConvertMetricNameToMetricEvalRequest_Params cv = {NVPW_MetricsEvaluator_ConvertMetricNameToMetricEvalRequest_Params_STRUCT_SIZE};
        cv.pMetricsEvaluator = mi.pMetricsEvaluator; cv.pMetricName = argv[i]; cv.pMetricEvalRequest = &req;
        cv.metricEvalRequestStructSize = NVPW_MetricEvalRequest_STRUCT_SIZE;
        CK(NVPW_MetricsEvaluator_ConvertMetricNameToMetricEvalRequest(&cv));
        NVPW_MetricsEvaluator_GetMetricRawDependencies_Params rd = {NVPW_MetricsEvaluator_GetMetricRawDependencies_Params_STRUCT_SIZE};
        rd.pMetricsEvaluator = mi.pMetricsEvaluator; rd.pMetricEvalRequests = &req; rd.numMetricEvalRequests = 1;
        rd.metricEvalRequestStructSize = NVPW_MetricEvalRequest_STRUCT_SIZE; rd.metricEvalRequestStrideSize = sizeof(req);
        CK(NVPW_MetricsEvaluator_GetMetricRawDependencies(&rd));
        const char **deps = calloc(rd.numRawDependencies + 1, sizeof(char*));
        rd.ppRawDependencies = deps;
        CK(NVPW_MetricsEvaluator_GetMetricRawDependencies(&rd));
        NVPA_RawMetricRequest *rr = calloc(rd.numRawDependencies + 1, sizeof(NVPA_RawMetricRequest));
        for (size_t k = 0; k < rd.numRawDependencies; k++) {
            rr[k].structSize = NVPA_RAW_METRIC_REQUEST_STRUCT_SIZE; rr[k].pMetricName = deps[k]; rr[k].isolated = 1; rr[k].keepInstances = 1;
        }
        NVPW_RawMetricsConfig_AddMetrics_Params am = {NVPW_RawMetricsConfig_AddMetrics_Params_STRUCT_SIZE};
        am.pRawMetricsConfig = cc.pRawMetricsConfig; am.pRawMetricRequests = rr; am.numMetricRequests = rd.numRawDependencies;
        CK(NVPW_RawMetricsConfig_AddMetrics(&am));
        nraw_total += rd.numRawDependencies;
    }
    NVPW_RawMetricsConfig_EndPassGroup_Params ep = {NVPW_RawMetricsConfig_EndPassGroup_Params_STRUCT_SIZE};
    ep.pRawMetricsConfig = cc.pRawMetricsConfig;
    CK(NVPW_RawMetricsConfig_EndPassGroup(&ep));
    NVPW_RawMetricsConfig_GenerateConfigImage_Params gi = {NVPW_RawMetricsConfig_GenerateConfigImage_Params_STRUCT_SIZE};
    gi.pRawMetricsConfig = cc.pRawMetricsConfig;
    CK(NVPW_RawMetricsConfig_GenerateConfigImage(&gi));
    NVPW_RawMetricsConfig_GetNumPasses_V2_Params np = {NVPW_RawMetricsConfig_GetNumPasses_V2_Params_STRUCT_SIZE};
    np.pRawMetricsConfig = cc.pRawMetricsConfig;
    CK(NVPW_RawMetricsConfig_GetNumPasses_V2(&np));
    printf("%zu passes, %zu raw counters\n", np.numPasses, nraw_total);
    return 0;
}
