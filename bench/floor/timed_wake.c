// bench/floor/timed_wake.c: the floor of an open loop at a given rate, for bench/openloop.sh.
//
//   timed_wake RATE SECONDS none           one timed wake-up per request, no I/O
//   timed_wake RATE SECONDS io HOST PORT   the same, and at each due time one GET written
//                                          on one keep-alive connection; responses are read
//                                          (whole, non-blocking) whenever the socket is ready
//
// Each wait is one epoll_pwait2 with the next due time as its (nanosecond) timeout, the
// thread's timer slack at 1 µs, as volley's workers have it: absolute due times
// start + i / RATE, requests never written before their due time. With `io` the socket is
// in the same epoll set, so a response wakes the loop as it does volley's (two wake-ups per
// request when the response comes back before the next due time). No parsing beyond
// counting complete responses of a fixed length (the first response's length).
//
// It prints one line: requests due, written, responses read, wake-ups (waits that slept),
// schedule lag p50 / p99 in µs, and its own user + sys CPU per request in µs (getrusage).
// Build: gcc -O2 -o timed_wake timed_wake.c
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef SYS_epoll_pwait2
#define SYS_epoll_pwait2 441
#endif

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int wait_until(int ep, struct epoll_event *evs, int n, uint64_t deadline) {
    uint64_t now = now_ns();
    uint64_t d = deadline > now ? deadline - now : 0;
    struct timespec ts = {.tv_sec = (time_t)(d / 1000000000ull), .tv_nsec = (long)(d % 1000000000ull)};
    long r = syscall(SYS_epoll_pwait2, ep, evs, n, &ts, NULL, 0);
    if (r < 0 && errno != EINTR) {
        perror("epoll_pwait2");
        exit(1);
    }
    return r < 0 ? 0 : (int)r;
}

static int cmp_u32(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    if (argc < 4 || (strcmp(argv[3], "io") == 0 && argc < 6)) {
        fprintf(stderr, "usage: %s RATE SECONDS none|io [HOST PORT]\n", argv[0]);
        return 2;
    }
    double rate = atof(argv[1]);
    double seconds = atof(argv[2]);
    int io = strcmp(argv[3], "io") == 0;
    if (rate <= 0 || seconds <= 0) {
        fprintf(stderr, "RATE and SECONDS must be positive\n");
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
    int ep = epoll_create1(0);
    int fd = -1;
    static const char req[] = "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
    if (io) {
        fd = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[5]))};
        inet_pton(AF_INET, argv[4], &a.sin_addr);
        if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0) {
            perror("connect");
            return 1;
        }
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        // The first response, blocking, gives the fixed response length.
        if (write(fd, req, sizeof req - 1) != (ssize_t)(sizeof req - 1)) {
            perror("write");
            return 1;
        }
        usleep(100000);
        char first[4096];
        ssize_t n = recv(fd, first, sizeof first, MSG_DONTWAIT);
        if (n <= 0) {
            fprintf(stderr, "no response from %s:%s\n", argv[4], argv[5]);
            return 1;
        }
        setsockopt(fd, SOL_SOCKET, SO_RCVLOWAT, &one, sizeof one);
        struct epoll_event ev = {.events = EPOLLIN, .data.u64 = (uint64_t)n};
        epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
    }
    uint64_t total = (uint64_t)(rate * seconds);
    uint32_t *lag = calloc(total ? total : 1, sizeof *lag);
    double gap = 1e9 / rate;
    struct epoll_event evs[8];
    struct rusage r0, r1;
    getrusage(RUSAGE_SELF, &r0);
    uint64_t start = now_ns() + 1000000, sent = 0, waits = 0, responses = 0, pending_bytes = 0;
    uint64_t resp_len = 0;
    char buf[65536];
    for (uint64_t i = 0; i < total;) {
        uint64_t due = start + (uint64_t)((double)i * gap);
        uint64_t now = now_ns();
        if (now < due) {
            waits++;
            int n = wait_until(ep, evs, 8, due);
            for (int k = 0; k < n; k++) {
                resp_len = evs[k].data.u64;
                for (;;) {
                    ssize_t m = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
                    if (m <= 0) break;
                    pending_bytes += (uint64_t)m;
                }
                responses += pending_bytes / resp_len;
                pending_bytes %= resp_len;
            }
            continue;
        }
        // Due (never before): every request due by now goes.
        while (i < total && (due = start + (uint64_t)((double)i * gap)) <= now) {
            uint64_t l = (now - due) / 1000;
            lag[i] = l > UINT32_MAX ? UINT32_MAX : (uint32_t)l;
            if (io && write(fd, req, sizeof req - 1) == (ssize_t)(sizeof req - 1)) sent++;
            if (!io) sent++;
            i++;
        }
    }
    // Responses still in flight: at most 100 ms more.
    uint64_t end = now_ns() + 100000000;
    while (io && responses < sent && now_ns() < end) {
        int n = wait_until(ep, evs, 8, end);
        for (int k = 0; k < n; k++) {
            resp_len = evs[k].data.u64;
            for (;;) {
                ssize_t m = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
                if (m <= 0) break;
                pending_bytes += (uint64_t)m;
            }
            responses += pending_bytes / resp_len;
            pending_bytes %= resp_len;
        }
    }
    getrusage(RUSAGE_SELF, &r1);
    double cpu = (double)(r1.ru_utime.tv_sec - r0.ru_utime.tv_sec) + (r1.ru_utime.tv_usec - r0.ru_utime.tv_usec) / 1e6 +
                 (double)(r1.ru_stime.tv_sec - r0.ru_stime.tv_sec) + (r1.ru_stime.tv_usec - r0.ru_stime.tv_usec) / 1e6;
    qsort(lag, total, sizeof *lag, cmp_u32);
    printf("{\"rate\": %.0f, \"due\": %llu, \"written\": %llu, \"responses\": %llu, \"waits\": %llu, "
           "\"voluntary_ctxt\": %ld, \"lag_p50_us\": %u, \"lag_p99_us\": %u, \"cpu_s\": %.6f, "
           "\"cpu_us_per_request\": %.3f, \"io\": %s}\n",
           rate, (unsigned long long)total, (unsigned long long)sent, (unsigned long long)responses,
           (unsigned long long)waits, r1.ru_nvcsw - r0.ru_nvcsw, total ? lag[total / 2] : 0,
           total ? lag[total * 99 / 100] : 0, cpu, total ? cpu * 1e6 / (double)total : 0.0,
           io ? "true" : "false");
    return 0;
}
