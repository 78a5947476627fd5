/* The extension calls of mpicast as a test calls them: API(MPICAST_x)(...). Linked
 * (MPICAST_LINKED), they are the functions themselves; preloaded, they are looked up at run
 * time, so that the same binary runs under LD_PRELOAD and stops with a clear message without
 * it. Include after mpicast.h and common.h. */
#ifndef MPICAST_TESTS_API_H
#define MPICAST_TESTS_API_H

#ifdef MPICAST_LINKED
#define API(name) name
#else
#include <dlfcn.h>
#include <string.h>

static __attribute__((unused)) void *api_sym(const char *name) {
  void *p = dlsym(RTLD_DEFAULT, name);
  if (!p)
    tc_fail("%s not found: is libmpicast preloaded?", name);
  return p;
}
/* memcpy keeps -Wpedantic quiet about object-to-function pointer casts. */
#define API(name)                                                                  \
  (*({                                                                             \
    static __typeof__(&name) f_;                                                   \
    if (!f_) {                                                                     \
      void *p_ = api_sym(#name);                                                   \
      memcpy(&f_, &p_, sizeof p_);                                                 \
    }                                                                              \
    &f_;                                                                           \
  }))
#endif

#endif
