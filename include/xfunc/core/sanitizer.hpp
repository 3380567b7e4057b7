#pragma once
// XFUNC_DETAIL_ASAN: 1 when compiled under AddressSanitizer (GCC's __SANITIZE_ADDRESS__, Clang's
// __has_feature), else 0. The allocation caches turn themselves off under it, so that a
// use-after-free stays detectable (NOTE: [Buffer allocation], core/object_pool.hpp); tests that
// would take minutes under it use it to scale down.
#if defined(__SANITIZE_ADDRESS__)
#define XFUNC_DETAIL_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define XFUNC_DETAIL_ASAN 1
#endif
#endif
#ifndef XFUNC_DETAIL_ASAN
#define XFUNC_DETAIL_ASAN 0
#endif
