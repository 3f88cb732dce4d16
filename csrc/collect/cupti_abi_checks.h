// What the collector takes from CUPTI besides the activity records: the enum values and the
// callback structures it uses. They are the same numbers and offsets in every release it reads
// (CUDA 12.0 through 13.0), which is what lets cupti_tracer.cpp, built with CUDA 13's headers,
// drive a CUDA 12 libcupti. These assertions name CUPTI's identifiers and compare them with
// literal numbers; they are compiled twice: in cupti_tracer.cpp against the CUDA 13 headers and
// in testing/cupti12_layout_check.cpp against a CUDA 12 release's.
//
// Include after <cupti.h>.
#pragma once

#include <cstddef>

// Activity kinds enabled and read.
static_assert(CUPTI_ACTIVITY_KIND_MEMCPY == 1 && CUPTI_ACTIVITY_KIND_MEMSET == 2);
static_assert(CUPTI_ACTIVITY_KIND_KERNEL == 3 && CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL == 10);
static_assert(CUPTI_ACTIVITY_KIND_DRIVER == 4 && CUPTI_ACTIVITY_KIND_RUNTIME == 5);
static_assert(CUPTI_ACTIVITY_KIND_DEVICE == 8 && CUPTI_ACTIVITY_KIND_CONTEXT == 9);
static_assert(CUPTI_ACTIVITY_KIND_MEMCPY2 == 22);
static_assert(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION == 38);
static_assert(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION == 39);

// Callback domains and ids enabled.
static_assert(CUPTI_CB_DOMAIN_DRIVER_API == 1 && CUPTI_CB_DOMAIN_RUNTIME_API == 2 &&
              CUPTI_CB_DOMAIN_RESOURCE == 3);
static_assert(CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000 == 171 &&
              CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000 == 172);
static_assert(CUPTI_DRIVER_TRACE_CBID_cuProfilerStart == 308 &&
              CUPTI_DRIVER_TRACE_CBID_cuProfilerStop == 309);
static_assert(CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED == 13 &&
              CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED == 20);
static_assert(CUPTI_API_ENTER == 0 && CUPTI_API_EXIT == 1);

// Settings, flags and results.
static_assert(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM == 1);
static_assert(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED == 1);
static_assert(CUPTI_SUCCESS == 0 && CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED == 39);

// Values the records carry, renumbered for nsys in common/nsys_schema.h.
static_assert(CUPTI_ACTIVITY_MEMORY_KIND_DEVICE == 3 && CUPTI_ACTIVITY_MEMORY_KIND_MANAGED == 5);
static_assert(CUPTI_ACTIVITY_MEMCPY_KIND_PTOP == 10);
static_assert(CUPTI_ACTIVITY_LAUNCH_TYPE_COOPERATIVE_MULTI_DEVICE == 2);
static_assert(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE == 4);
static_assert(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0 == 3);

// The callback data read by the subscriber callback.
static_assert(offsetof(CUpti_CallbackData, callbackSite) == 0);
static_assert(offsetof(CUpti_ResourceData, resourceDescriptor) == 16);
static_assert(offsetof(CUpti_GraphData, graph) == 0 && offsetof(CUpti_GraphData, node) == 16 &&
              offsetof(CUpti_GraphData, originalNode) == 24);
static_assert(sizeof(CUpti_Activity) == 8 && offsetof(CUpti_Activity, kind) == 0);
