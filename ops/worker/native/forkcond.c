/*
 * Preloaded into the node fork server only (LD_PRELOAD, see ../nodeForkProgram.ts): condition
 * variables whose waiters a forked child does not have.
 *
 * fork copies one thread. The fork server's idle threads (V8's platform workers) sit in
 * pthread_cond_wait on their task queue's condition variable; in the child that variable still
 * counts them as waiters, and glibc's pthread_cond_signal waits for waiters to acknowledge, so the
 * child's first post to the queue (V8 posts one in a full garbage collection, even single-threaded)
 * blocked forever. This library records which condition variables have a waiter at any moment and,
 * in the child of a fork, re-initialises those: nobody in the child waits on them.
 * The waiters' mutexes need nothing: a waiter holds none while it waits.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#define SLOTS 512

static _Atomic(pthread_cond_t *) waiting[SLOTS];
static int (*real_wait)(pthread_cond_t *, pthread_mutex_t *);
static int (*real_timedwait)(pthread_cond_t *, pthread_mutex_t *, const struct timespec *);
static int (*real_clockwait)(pthread_cond_t *, pthread_mutex_t *, clockid_t, const struct timespec *);

static void *next_symbol(const char *name) {
  void *found = dlvsym(RTLD_NEXT, name, "GLIBC_2.3.2");
  return found != NULL ? found : dlsym(RTLD_NEXT, name);
}

/* A free slot holding `cond`, or -1 when all are taken (that wait then goes unrecorded). */
static int enter(pthread_cond_t *cond) {
  for (int i = 0; i < SLOTS; i++) {
    pthread_cond_t *expected = NULL;
    if (atomic_compare_exchange_strong(&waiting[i], &expected, cond)) return i;
  }
  return -1;
}

static void leave(int slot) {
  if (slot >= 0) atomic_store(&waiting[slot], NULL);
}

int pthread_cond_wait(pthread_cond_t *cond, pthread_mutex_t *mutex) {
  int slot = enter(cond);
  int result = real_wait(cond, mutex);
  leave(slot);
  return result;
}

int pthread_cond_timedwait(pthread_cond_t *cond, pthread_mutex_t *mutex, const struct timespec *abstime) {
  int slot = enter(cond);
  int result = real_timedwait(cond, mutex, abstime);
  leave(slot);
  return result;
}

int pthread_cond_clockwait(pthread_cond_t *cond, pthread_mutex_t *mutex, clockid_t clock, const struct timespec *abstime) {
  int slot = enter(cond);
  int result = real_clockwait(cond, mutex, clock, abstime);
  leave(slot);
  return result;
}

/* In the child: the recorded waiters were other threads, which the child does not have. */
static void in_child(void) {
  for (int i = 0; i < SLOTS; i++) {
    pthread_cond_t *cond = atomic_exchange(&waiting[i], NULL);
    if (cond != NULL) pthread_cond_init(cond, NULL);
  }
}

__attribute__((constructor)) static void start(void) {
  real_wait = (int (*)(pthread_cond_t *, pthread_mutex_t *))next_symbol("pthread_cond_wait");
  real_timedwait = (int (*)(pthread_cond_t *, pthread_mutex_t *, const struct timespec *))next_symbol("pthread_cond_timedwait");
  real_clockwait = (int (*)(pthread_cond_t *, pthread_mutex_t *, clockid_t, const struct timespec *))dlsym(RTLD_NEXT, "pthread_cond_clockwait");
  pthread_atfork(NULL, NULL, in_child);
}
