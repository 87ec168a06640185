// SPDX-License-Identifier: GPL-2.0-only
/* One syscall that blocks twice on two kernel paths: read_twice() reads a pipe into a page
 * registered with userfaultfd. The read first waits for the pipe (the writer writes after
 * WAIT_PIPE seconds), then its copy to the page faults and waits in handle_userfault until the
 * fault handler fills the page (WAIT_FAULT seconds after the fault). Each wait must show under
 * its own kernel path, not both under the first.
 * Prints its pid, then "pipe TID NS" and "fault TID NS": the reader's tid and each wait as
 * measured here (the fault's from the handler's view of it, the pipe's as the rest of the read).
 * Usage: tp_block_twice [WAIT_PIPE_S [WAIT_FAULT_S]] */
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "workload.h"

static int pipefd[2], uffd;
static char *page;
static long page_size;
static double wait_pipe_s = 1, wait_fault_s = 2;
static uint64_t fault_seen_ns, fault_done_ns;

__attribute__((noinline)) long read_twice(void)
{
	return read(pipefd[0], page, 64);
}

static void *writer(void *arg)
{
	(void)arg;
	usleep((useconds_t)(wait_pipe_s * 1e6));
	return write(pipefd[1], "tailprof", 8) == 8 ? NULL : NULL;
}

/* Answers the reader's fault on page after WAIT_FAULT seconds. */
static void *fault_handler(void *arg)
{
	struct uffd_msg msg;
	struct pollfd pfd = {.fd = uffd, .events = POLLIN};
	char *src = aligned_alloc((size_t)page_size, (size_t)page_size);

	(void)arg;
	if (!src || poll(&pfd, 1, -1) != 1 || read(uffd, &msg, sizeof(msg)) != sizeof(msg) ||
	    msg.event != UFFD_EVENT_PAGEFAULT)
		return NULL;
	fault_seen_ns = now_ns();
	usleep((useconds_t)(wait_fault_s * 1e6));
	memset(src, 'x', (size_t)page_size);
	fault_done_ns = now_ns();
	struct uffdio_copy copy = {.dst = (unsigned long)page,
				   .src = (unsigned long)src,
				   .len = (unsigned long)page_size};
	ioctl(uffd, UFFDIO_COPY, &copy);
	return NULL;
}

int main(int argc, char **argv)
{
	struct uffdio_api api = {.api = UFFD_API};
	pthread_t w, h;
	uint64_t t0, t1;
	long n;

	wait_pipe_s = arg_seconds(argc, argv, 1, 1);
	wait_fault_s = arg_seconds(argc, argv, 2, 2);
	page_size = sysconf(_SC_PAGESIZE);
	uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC);
	page = mmap(NULL, (size_t)page_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		    -1, 0);
	if (uffd < 0 || page == MAP_FAILED || ioctl(uffd, UFFDIO_API, &api) || pipe(pipefd)) {
		perror("tp_block_twice: userfaultfd");
		return 1;
	}
	struct uffdio_register reg = {.range = {.start = (unsigned long)page,
						.len = (unsigned long)page_size},
				      .mode = UFFDIO_REGISTER_MODE_MISSING};
	if (ioctl(uffd, UFFDIO_REGISTER, &reg)) {
		perror("tp_block_twice: UFFDIO_REGISTER");
		return 1;
	}
	printf("%d\n", getpid());
	fflush(stdout);
	/* a first short block, so that tailprofd knows the process and has its unwind tables */
	usleep(300000);
	pthread_create(&h, NULL, fault_handler, NULL);
	pthread_create(&w, NULL, writer, NULL);
	t0 = now_ns();
	n = read_twice();
	t1 = now_ns();
	pthread_join(w, NULL);
	pthread_join(h, NULL);
	if (n != 8 || !fault_seen_ns)
		return 1;
	printf("pipe %d %llu\n", (int)gettid(),
	       (unsigned long long)(t1 - t0 - (fault_done_ns - fault_seen_ns)));
	printf("fault %d %llu\n", (int)gettid(), (unsigned long long)(fault_done_ns - fault_seen_ns));
	return 0;
}
