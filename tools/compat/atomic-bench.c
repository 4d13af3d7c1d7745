/* SPDX-License-Identifier: Apache-2.0 */
/* What src/sl_atomic.h was chosen by: two threads incrementing one shared
 * 64-bit counter, N times each, with each candidate. Not part of any build;
 *   cc -O2 -pthread $(apr-1-config --includes --cppflags) -Isrc \
 *      tools/compat/atomic-bench.c $(apr-1-config --link-ld) -o /tmp/ab
 * (APR 1.7 for apr_atomic_inc64; the lock is a process-shared mutex, as a
 * counter in shared memory would need). */
#include "sl_atomic.h"

#include <apr_atomic.h>
#include <apr_general.h>
#include <apr_time.h>

#include <pthread.h>
#include <stdio.h>

#define N 10000000

static volatile apr_uint64_t counter;
static volatile apr_uint32_t counter32;
static pthread_mutex_t lock;
static int mode;

static void *run(void *arg)
{
    int i;
    (void) arg;
    for (i = 0; i < N; i++) {
        switch (mode) {
        case 0:
            sl_atomic_inc64(&counter);
            break;
        case 1:
            apr_atomic_inc64(&counter);
            break;
        case 2:
            pthread_mutex_lock(&lock);
            counter++;
            pthread_mutex_unlock(&lock);
            break;
        case 3:
            apr_atomic_inc32(&counter32);
            break;
        }
    }
    return NULL;
}

int main(void)
{
    static const char *names[] = {
        "__atomic builtins (sl_atomic_inc64)", "apr_atomic_inc64 (APR 1.7)",
        "process-shared pthread mutex", "apr_atomic_inc32 (32 bits only)"};
    pthread_mutexattr_t a;
    pthread_t t[2];

    apr_initialize();
    apr_atomic_init(NULL);
    pthread_mutexattr_init(&a);
    pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
    pthread_mutex_init(&lock, &a);
    for (mode = 0; mode < 4; mode++) {
        apr_time_t start = apr_time_now();
        counter = 0;
        counter32 = 0;
        pthread_create(&t[0], NULL, run, NULL);
        pthread_create(&t[1], NULL, run, NULL);
        pthread_join(t[0], NULL);
        pthread_join(t[1], NULL);
        printf("%-38s %6.1f ns/increment, total %s\n", names[mode],
               (double) (apr_time_now() - start) * 1000.0 / (2.0 * N),
               (mode == 3 ? counter32 : counter) == 2 * N ? "exact" : "WRONG");
    }
    return 0;
}
