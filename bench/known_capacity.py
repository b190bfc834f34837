#!/usr/bin/env python3
"""A server of known capacity for bench/sweep.sh: K slots, each busy S ms per request (a sleep),
the rest wait in an unbounded queue, so it answers K / S requests a second and no more.

usage: known_capacity.py PORT K S_MS

HTTP/1.1 keep-alive, one thread per connection, 127.0.0.1 only. On SIGTERM it prints the
requests served and the mean time a slot was held (the true capacity is K / that, a little
under K / S: a sleep overshoots) as one JSON line on stdout, then exits.
"""

import json
import signal
import socket
import sys
import threading
import time

RESPONSE = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: text/plain\r\n\r\nok"


def main():
    port, k, s_ms = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
    slots = threading.Semaphore(k)
    lock = threading.Lock()
    held = [0.0, 0]

    def serve(conn):
        buf = b""
        with conn:
            while True:
                while b"\r\n\r\n" not in buf:
                    chunk = conn.recv(65536)
                    if not chunk:
                        return
                    buf += chunk
                _, buf = buf.split(b"\r\n\r\n", 1)
                with slots:
                    t = time.perf_counter()
                    time.sleep(s_ms / 1000.0)
                    dt = time.perf_counter() - t
                with lock:
                    held[0] += dt
                    held[1] += 1
                try:
                    conn.sendall(RESPONSE)
                except OSError:
                    return

    def stop(*_):
        with lock:
            n, total = held[1], held[0]
        mean_ms = total / n * 1000.0 if n else None
        print(json.dumps({"served": n, "slot_ms": mean_ms,
                          "capacity_rps": k / (mean_ms / 1000.0) if mean_ms else None}), flush=True)
        sys.exit(0)

    signal.signal(signal.SIGTERM, stop)
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", port))
    srv.listen(1024)
    while True:
        conn, _ = srv.accept()
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        threading.Thread(target=serve, args=(conn,), daemon=True).start()


if __name__ == "__main__":
    main()
