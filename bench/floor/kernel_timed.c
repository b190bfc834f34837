// bench/floor/kernel_timed.c: kernel-timed sends, the other way to an open loop's schedule:
// each request's send linked after an absolute io_uring TIMEOUT at its due time
// (IORING_TIMEOUT_ABS | IORING_TIMEOUT_ETIME_SUCCESS, IOSQE_IO_LINK), submitted AHEAD pairs in
// advance, so the thread itself does not wake for a due time; it waits for WAIT completions at
// a time (io_uring_submit_and_wait) and tops the queue up.
//
//   kernel_timed RATE SECONDS [AHEAD [WAIT [defer]]]
//
// The sends are 32-byte UDP datagrams to a socket of this process on 127.0.0.1 that nobody
// reads during the run (its buffer forced to hold them all), so the cost is the timer and the
// send alone, as bench/floor/timed_wake.c's `none` is the timed wake-up alone. Afterwards each
// datagram's kernel receive time (SO_TIMESTAMPNS) against its due time gives the lag.
// `defer` sets IORING_SETUP_DEFER_TASKRUN | SINGLE_ISSUER (volley's ring flags): task work,
// and so each linked send, then runs only when the thread enters the ring.
//
// Prints one line: requests, datagrams received, lag p50 / p99 / p99.9 / max in µs, voluntary
// context switches, and CPU (user + sys of the process, getrusage) per request in µs.
// Build: gcc -O2 -I LIBURING/include -o kernel_timed kernel_timed.c LIBURING/lib/liburing.a
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <liburing.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static uint64_t ns(clockid_t c) {
    struct timespec ts;
    clock_gettime(c, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s RATE SECONDS [AHEAD [WAIT [defer]]]\n", argv[0]);
        return 2;
    }
    double rate = atof(argv[1]), seconds = atof(argv[2]);
    unsigned ahead = argc > 3 ? (unsigned)atoi(argv[3]) : 256;
    unsigned wait = argc > 4 ? (unsigned)atoi(argv[4]) : 64;
    int defer = argc > 5 && strcmp(argv[5], "defer") == 0;
    uint64_t total = (uint64_t)(rate * seconds);
    if (rate <= 0 || total == 0 || ahead == 0 || wait == 0 || wait > 2 * ahead) {
        fprintf(stderr, "RATE, SECONDS, AHEAD > 0 and 0 < WAIT <= 2 * AHEAD\n");
        return 2;
    }
    int sink = socket(AF_INET, SOCK_DGRAM, 0), src = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    socklen_t alen = sizeof a;
    int big = 1 << 30, one = 1;
    setsockopt(sink, SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof big);
    setsockopt(sink, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof one);
    bind(sink, (struct sockaddr *)&a, sizeof a);
    getsockname(sink, (struct sockaddr *)&a, &alen);
    connect(src, (struct sockaddr *)&a, sizeof a);

    struct io_uring ring;
    struct io_uring_params p = {0};
    if (defer) p.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN;
    int e = io_uring_queue_init_params(4 * ahead, &ring, &p);
    if (e < 0) {
        fprintf(stderr, "io_uring_queue_init: %s\n", strerror(-e));
        return 1;
    }
    uint64_t *msg = calloc(total, 8), *due_rt = calloc(total, 8);
    struct __kernel_timespec *ts = calloc(total, sizeof *ts);
    uint64_t gap = (uint64_t)(1e9 / rate);
    uint64_t start = ns(CLOCK_MONOTONIC) + 2000000, start_rt = ns(CLOCK_REALTIME) + 2000000;
    struct rusage r0, r1;
    getrusage(RUSAGE_SELF, &r0);
    uint64_t queued = 0, done = 0;
    while (done < 2 * total) {
        while (queued < total && queued * 2 < done + 2 * ahead) {
            uint64_t due = start + queued * gap;
            due_rt[queued] = start_rt + queued * gap;
            ts[queued].tv_sec = (long long)(due / 1000000000ull);
            ts[queued].tv_nsec = (long long)(due % 1000000000ull);
            msg[queued] = queued;
            struct io_uring_sqe *t = io_uring_get_sqe(&ring);
            io_uring_prep_timeout(t, &ts[queued], 0, IORING_TIMEOUT_ABS | IORING_TIMEOUT_ETIME_SUCCESS);
            t->flags |= IOSQE_IO_LINK;
            struct io_uring_sqe *s = io_uring_get_sqe(&ring);
            io_uring_prep_send(s, src, &msg[queued], 8, 0);
            queued++;
        }
        uint64_t left = 2 * total - done;
        io_uring_submit_and_wait(&ring, left < wait ? (unsigned)left : wait);
        struct io_uring_cqe *c;
        unsigned head, n = 0;
        io_uring_for_each_cqe(&ring, head, c) n++;
        io_uring_cq_advance(&ring, n);
        done += n;
    }
    getrusage(RUSAGE_SELF, &r1);
    // Each datagram's kernel receive time against its due time.
    uint64_t *lag = calloc(total, 8), got = 0;
    for (;;) {
        uint64_t idx;
        char cbuf[128];
        struct iovec iov = {&idx, 8};
        struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof cbuf};
        if (recvmsg(sink, &m, MSG_DONTWAIT) != 8) break;
        struct cmsghdr *cm = CMSG_FIRSTHDR(&m);
        if (!cm || idx >= total) continue;
        struct timespec rx;
        memcpy(&rx, CMSG_DATA(cm), sizeof rx);
        uint64_t at = (uint64_t)rx.tv_sec * 1000000000ull + (uint64_t)rx.tv_nsec;
        lag[got++] = at > due_rt[idx] ? (at - due_rt[idx]) / 1000 : 0;
    }
    qsort(lag, got, 8, cmp_u64);
    double cpu = (double)(r1.ru_utime.tv_sec - r0.ru_utime.tv_sec) + (r1.ru_utime.tv_usec - r0.ru_utime.tv_usec) / 1e6 +
                 (double)(r1.ru_stime.tv_sec - r0.ru_stime.tv_sec) + (r1.ru_stime.tv_usec - r0.ru_stime.tv_usec) / 1e6;
    printf("{\"rate\": %.0f, \"requests\": %llu, \"received\": %llu, \"lag_p50_us\": %llu, \"lag_p99_us\": %llu, "
           "\"lag_p999_us\": %llu, \"lag_max_us\": %llu, \"voluntary_ctxt\": %ld, \"cpu_us_per_request\": %.3f, "
           "\"ahead\": %u, \"wait\": %u, \"defer\": %s}\n",
           rate, (unsigned long long)total, (unsigned long long)got,
           (unsigned long long)(got ? lag[got / 2] : 0), (unsigned long long)(got ? lag[got * 99 / 100] : 0),
           (unsigned long long)(got ? lag[got * 999 / 1000] : 0), (unsigned long long)(got ? lag[got - 1] : 0),
           r1.ru_nvcsw - r0.ru_nvcsw, cpu * 1e6 / (double)total, ahead, wait, defer ? "true" : "false");
    return 0;
}
