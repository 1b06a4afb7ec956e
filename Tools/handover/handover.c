// What a hand-over to another thread costs a request on a busy machine, without STOL
// (`make bench-handover`; docs/benchmarks.md section 19.6): round trips of one byte through a Unix
// socket to a server thread, one every 10 ms, beside BUSY threads spinning at nice +10.
// HOPS 0: the server answers at once (a lookup answered on the event loop); 1: it hands each
// request to a worker thread and back through two semaphores (a request sent to a lane and its
// answer back to the event loop: two more wakeups).
//
//   handover BUSY HOPS SECONDS   prints p50, p99 and max of the round trips in ms
#define _GNU_SOURCE
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
static int hops; static sem_t to_worker, to_server;
static void *busy(void *arg) { (void)arg; setpriority(PRIO_PROCESS, 0, 10); volatile unsigned long x = 0; for (;;) x++; return NULL; }
static void *worker(void *arg) { (void)arg; for (;;) { sem_wait(&to_worker); sem_post(&to_server); } return NULL; }
static void *server(void *arg) { int fd = *(int *)arg; char c; while (read(fd, &c, 1) == 1) { if (hops) { sem_post(&to_worker); sem_wait(&to_server); } write(fd, &c, 1); } return NULL; }
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1e3 + t.tv_nsec / 1e6; }
static int cmp(const void *a, const void *b) { double x = *(double *)a, y = *(double *)b; return x < y ? -1 : x > y; }
int main(int argc, char **argv) {
  int n = atoi(argv[1]); hops = atoi(argv[2]); int seconds = atoi(argv[3]);
  int sv[2]; socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
  sem_init(&to_worker, 0, 0); sem_init(&to_server, 0, 0);
  pthread_t t; pthread_create(&t, NULL, server, &sv[0]); pthread_create(&t, NULL, worker, NULL);
  for (int i = 0; i < n; i++) pthread_create(&t, NULL, busy, NULL);
  int count = seconds * 100; double *rtt = malloc(sizeof(double) * count);
  struct timespec gap = {0, 10 * 1000 * 1000};
  for (int i = 0; i < count; i++) { char c = 'x'; double s = now(); write(sv[1], &c, 1); read(sv[1], &c, 1); rtt[i] = now() - s; nanosleep(&gap, NULL); }
  qsort(rtt, count, sizeof(double), cmp);
  printf("busy %d hops %d: n %d p50 %.3f p99 %.3f max %.3f ms\n", n, hops, count, rtt[count / 2], rtt[count * 99 / 100], rtt[count - 1]);
  return 0;
}
