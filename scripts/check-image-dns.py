#!/usr/bin/env python3
"""The smallest DNS server scripts/check-image.sh needs (standard library only), standing in
for a cluster's DNS service: on UDP ADDR:PORT it answers

- an A question for NAME with one address, IP;
- any other question for NAME with no answer and NOERROR ("no data"): musl's resolver asks A
  and AAAA at once and gives up on the whole name when either comes back NXDOMAIN;
- every other name with NXDOMAIN, as a cluster's DNS does for the search-list names a short
  name is tried with first.

Each question goes to LOG ("A name" a line), so the check can tell a name that was resolved
over DNS from one read from /etc/hosts. Prints "ready" once bound.

Usage: check-image-dns.py ADDR PORT NAME IP LOG
"""

import socket
import struct
import sys

QTYPES = {1: "A", 28: "AAAA"}


def question(msg):
    """The first question's (name, qtype, end offset): labels, then type and class."""
    labels, i = [], 12
    while True:
        n = msg[i]
        if n == 0:
            i += 1
            break
        if n & 0xC0:
            raise ValueError("a compressed name in a question")
        labels.append(msg[i + 1 : i + 1 + n].decode("ascii").lower())
        i += 1 + n
    qtype, _qclass = struct.unpack("!HH", msg[i : i + 4])
    return ".".join(labels), qtype, i + 4


def answer(msg, name, ip):
    """The reply to the query `msg`, or None when it is not one question."""
    ident, flags, qdcount = struct.unpack("!HHH", msg[:6])
    if flags & 0x8000 or qdcount != 1:
        return None, None, None
    qname, qtype, end = question(msg)
    # QR, the query's opcode and RD, AA, RA.
    reply = 0x8000 | (flags & 0x7900) | 0x0400 | 0x0080
    records = b""
    if qname != name:
        reply |= 3  # NXDOMAIN
    elif qtype == 1:
        # The question's name by pointer (offset 12), A, IN, a TTL of 5 s, 4 bytes.
        records = struct.pack("!HHHIH", 0xC00C, 1, 1, 5, 4) + socket.inet_aton(ip)
    ancount = 1 if records else 0
    header = struct.pack("!HHHHHH", ident, reply, 1, ancount, 0, 0)
    return header + msg[12:end] + records, qname, qtype


def main():
    addr, port, name, ip, log_path = sys.argv[1:6]
    name = name.lower().rstrip(".")
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind((addr, int(port)))
    print("ready", flush=True)
    with open(log_path, "a", encoding="utf-8") as log:
        while True:
            msg, peer = sock.recvfrom(512)
            try:
                reply, qname, qtype = answer(msg, name, ip)
            except (ValueError, IndexError, struct.error, UnicodeDecodeError):
                continue
            if reply is None:
                continue
            log.write(f"{QTYPES.get(qtype, qtype)} {qname}\n")
            log.flush()
            sock.sendto(reply, peer)


if __name__ == "__main__":
    main()
