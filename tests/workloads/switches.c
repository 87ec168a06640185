// SPDX-License-Identifier: GPL-2.0-only
/* A context-switch load for the scheduler benchmark: PAIRS thread pairs play ping-pong over pipes
 * in bursts of ROUNDS exchanges each millisecond (every exchange blocks both threads briefly), and
 * SLEEPERS threads sleep 2 ms at a time (blocks long enough to be captured with stacks).
 * Usage: tp_switches SECONDS PAIRS ROUNDS SLEEPERS */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "workload.h"

static uint64_t end;
static int rounds;

struct pair {
	int ping[2], pong[2];
};

static void *ponger(void *arg)
{
	struct pair *p = arg;
	char c;

	while (read(p->ping[0], &c, 1) == 1 && c != 'q')
		if (write(p->pong[1], &c, 1) != 1)
			break;
	return NULL;
}

static void *pinger(void *arg)
{
	struct pair *p = arg;
	uint64_t next = now_ns();
	char c = 'x';

	while (now_ns() < end) {
		for (int i = 0; i < rounds; i++)
			if (write(p->ping[1], &c, 1) != 1 || read(p->pong[0], &c, 1) != 1)
				return NULL;
		next += 1000000;
		uint64_t now = now_ns();

		if (next > now) {
			struct timespec ts = {0, (long)(next - now)};

			nanosleep(&ts, NULL);
		}
	}
	c = 'q';
	return write(p->ping[1], &c, 1) == 1 ? NULL : NULL;
}

static void *sleeper(void *arg)
{
	struct timespec ts = {0, 2000000};

	while (now_ns() < end)
		nanosleep(&ts, NULL);
	return NULL;
}

int main(int argc, char **argv)
{
	int pairs = argc > 2 ? atoi(argv[2]) : 1, sleepers = argc > 4 ? atoi(argv[4]) : 0;
	pthread_t t[256];
	int n = 0;

	end = now_ns() + (uint64_t)(arg_seconds(argc, argv, 1, 5) * 1e9);
	rounds = argc > 3 ? atoi(argv[3]) : 10;
	for (int i = 0; i < pairs && n < 254; i++) {
		struct pair *p = malloc(sizeof(*p));

		if (!p || pipe(p->ping) || pipe(p->pong))
			return 1;
		pthread_create(&t[n++], NULL, ponger, p);
		pthread_create(&t[n++], NULL, pinger, p);
	}
	for (int i = 0; i < sleepers && n < 256; i++)
		pthread_create(&t[n++], NULL, sleeper, NULL);
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	return 0;
}
