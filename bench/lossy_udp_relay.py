#!/usr/bin/env python3
"""A UDP relay on 127.0.0.1 that drops every Nth datagram, each way (for bench/h3_loss.sh).

Datagrams from a client go to 127.0.0.1:TO from a socket of their own per client address, so
the server tells the client's QUIC connections apart; the server's answers go back to that
client. Every datagram either way is counted, and each EVERY-th is dropped (EVERY=2 drops
every other one, as the relay of tests/full/h3.rs does: this kernel has no netem). The first
line on stdout is the relay's port; on SIGTERM or SIGINT it prints `relayed N dropped M` and
exits.

    bench/lossy_udp_relay.py --to 8443 [--every 2] [--port 0]
"""

import argparse
import selectors
import signal
import socket
import sys


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--to", type=int, required=True, help="the server's UDP port on 127.0.0.1")
    ap.add_argument("--every", type=int, default=2, help="drop every Nth datagram (default 2)")
    ap.add_argument("--port", type=int, default=0, help="the relay's port (default: any free)")
    args = ap.parse_args()
    if args.every < 2:
        ap.error("--every must be 2 or more")

    front = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    front.bind(("127.0.0.1", args.port))
    front.setblocking(False)
    print(front.getsockname()[1], flush=True)

    sel = selectors.DefaultSelector()
    sel.register(front, selectors.EVENT_READ, None)
    backs = {}  # client address -> its socket to the server
    count = {"n": 0, "dropped": 0}
    running = [True]

    def stop(_sig, _frame):
        running[0] = False

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)

    def keep() -> bool:
        count["n"] += 1
        if count["n"] % args.every == 0:
            count["dropped"] += 1
            return False
        return True

    while running[0]:
        for key, _ in sel.select(timeout=0.2):
            sock, client = key.fileobj, key.data
            while True:
                try:
                    data, addr = sock.recvfrom(65536)
                except (BlockingIOError, InterruptedError):
                    break
                except ConnectionRefusedError:
                    # The server's port answered ICMP unreachable: nothing to relay.
                    break
                if client is None:
                    back = backs.get(addr)
                    if back is None:
                        back = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                        back.bind(("127.0.0.1", 0))
                        back.connect(("127.0.0.1", args.to))
                        back.setblocking(False)
                        backs[addr] = back
                        sel.register(back, selectors.EVENT_READ, addr)
                    if keep():
                        try:
                            back.send(data)
                        except OSError:
                            pass
                elif keep():
                    try:
                        front.sendto(data, client)
                    except OSError:
                        pass
    print(f"relayed {count['n']} dropped {count['dropped']}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
