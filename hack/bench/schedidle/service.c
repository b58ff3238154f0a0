// service wakes every period, does a fixed amount of CPU work, and records how late it woke and how long the
// request took from its due time to its end: what a latency-sensitive service feels of the CPU-bound work beside
// it. It runs for the given seconds and prints one line: the count and the percentiles of both, in microseconds.
//
//   service SECONDS [PERIOD_US [WORK_US]]
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static long long ns(struct timespec t) { return t.tv_sec * 1000000000LL + t.tv_nsec; }

static int cmp(const void *a, const void *b) {
	long long x = *(const long long *)a, y = *(const long long *)b;
	return (x > y) - (x < y);
}

static long long pct(long long *v, long n, double p) {
	long i = (long)(p * (n - 1));
	return v[i] / 1000;
}

int main(int argc, char **argv) {
	if (argc < 2) {
		fprintf(stderr, "usage: service SECONDS [PERIOD_US [WORK_US]]\n");
		return 2;
	}
	long seconds = atol(argv[1]);
	long period = argc > 2 ? atol(argv[2]) : 1000;
	long work = argc > 3 ? atol(argv[3]) : 100;
	long max = seconds * 1000000 / period + 1;
	long long *late = calloc(max, sizeof *late), *total = calloc(max, sizeof *total);
	struct timespec next, now, cpu0, cpu;
	clock_gettime(CLOCK_MONOTONIC, &next);
	long n = 0;
	volatile unsigned long sink = 0;
	while (n < max) {
		next.tv_nsec += period * 1000;
		while (next.tv_nsec >= 1000000000) {
			next.tv_nsec -= 1000000000;
			next.tv_sec++;
		}
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
		clock_gettime(CLOCK_MONOTONIC, &now);
		late[n] = ns(now) - ns(next);
		// The request: work_us of this thread's own CPU time, however long the wall clock takes to give it.
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu0);
		do {
			for (int i = 0; i < 1000; i++)
				sink += i * i;
			clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu);
		} while (ns(cpu) - ns(cpu0) < work * 1000);
		clock_gettime(CLOCK_MONOTONIC, &now);
		total[n] = ns(now) - ns(next);
		n++;
		// A request that ran past the next period does not queue up: the next one is due a period from now.
		if (ns(now) > ns(next) + period * 1000)
			next = now;
	}
	qsort(late, n, sizeof *late, cmp);
	qsort(total, n, sizeof *total, cmp);
	printf("requests=%ld wake_p50=%lld wake_p99=%lld wake_p999=%lld wake_max=%lld req_p50=%lld req_p99=%lld req_p999=%lld req_max=%lld\n",
	       n, pct(late, n, 0.5), pct(late, n, 0.99), pct(late, n, 0.999), late[n - 1] / 1000,
	       pct(total, n, 0.5), pct(total, n, 0.99), pct(total, n, 0.999), total[n - 1] / 1000);
	return 0;
}
