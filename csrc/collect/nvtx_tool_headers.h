// The collector is an NVTX *tool*: it needs NVTX's types and callback ids but must not contain
// NVTX's own implementation (that would make it look for an injection library itself).
#pragma once

#ifndef NVTX_NO_IMPL
#define NVTX_NO_IMPL
#endif
#include <nvtx3/nvToolsExt.h>
