#!/usr/bin/env python3
"""A small JSON service in two versions, for volley's A/B example (examples/ab/README.md).

GET /items/<id> answers {"id": <id>, "name": "item <id>", "score": <n>}. The score is computed
with a little CPU work per request: v1 does WORK rounds, v2 does 25 % more (a "refactoring"
that made each request slower). Listens on 127.0.0.1:$PORT, HTTP/1.1 with keep-alive, one
thread per connection.

    PORT=8080 python3 service.py --version v1
"""

import argparse
import json
import os
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

WORK = 10000
ROUNDS = {"v1": WORK, "v2": WORK * 5 // 4}


def score(item_id: int, rounds: int) -> int:
    h = item_id
    for i in range(rounds):
        h = (h * 31 + i) % 1_000_003
    return h


def handler(rounds: int):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # Head and body are two writes: without TCP_NODELAY, Nagle's algorithm and the
        # client's delayed ACK would hold every response for about 40 ms.
        disable_nagle_algorithm = True

        def do_GET(self):
            parts = self.path.split("/")
            if len(parts) == 3 and parts[1] == "items" and parts[2].isdigit():
                item = int(parts[2])
                body = json.dumps(
                    {"id": item, "name": f"item {item}", "score": score(item, rounds)}
                ).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
            elif self.path == "/":
                body = b"."
                self.send_response(200)
                self.send_header("Content-Type", "text/plain")
            else:
                body = b"not found"
                self.send_response(404)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    return Handler


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--version", choices=sorted(ROUNDS), required=True)
    args = p.parse_args()
    port = int(os.environ.get("PORT", "8080"))
    server = ThreadingHTTPServer(("127.0.0.1", port), handler(ROUNDS[args.version]))
    server.daemon_threads = True
    server.serve_forever()


if __name__ == "__main__":
    main()
