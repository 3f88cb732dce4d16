// Stand-ins for the two CUDA libraries whose presence tells the collector which libcupti fits a
// process (cupti_search.h), loaded by cupti_test_app where a CUDA program would have them:
//   libfake_cuda_driver.so  soname libcuda.so.1: the one driver call the collector makes,
//                           cuDriverGetVersion, answering FAKE_CUDA_DRIVER_VERSION (default
//                           13000: CUDA 13.0, an r580 driver like the GPU machines'); loaded
//                           from FAKE_CUDA_DRIVER, as cuInit runs in the driver
//   libfake_cudart.so       a CUDA runtime to find by its name: the tests link it as
//                           .../libcudart.so.12 (or .13, .11.0) in the layouts pip and NVIDIA's
//                           toolkits use; loaded from FAKE_CUDART, as libtorch_cuda loads
//                           libcudart
// The same source builds both (FAKE_CUDA_DRIVER_LIBRARY picks the driver's part).
#include <cstdlib>

#define FAKE_CUDA_API extern "C" __attribute__((visibility("default")))

#ifdef FAKE_CUDA_DRIVER_LIBRARY
FAKE_CUDA_API int cuDriverGetVersion(int* version) {
  if (version == nullptr) return 1;  // CUDA_ERROR_INVALID_VALUE
  const char* forced = std::getenv("FAKE_CUDA_DRIVER_VERSION");
  *version = forced != nullptr && *forced != '\0' ? std::atoi(forced) : 13000;
  return 0;  // CUDA_SUCCESS
}
#else
FAKE_CUDA_API int cudaRuntimeGetVersion(int* version) {
  if (version == nullptr) return 1;  // cudaErrorInvalidValue
  *version = 0;                      // which major this file plays is in the name the test gives it
  return 0;
}
#endif
