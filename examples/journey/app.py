#!/usr/bin/env python3
"""A small login-then-browse shop for trying volley's journeys (examples/journey/README.md).

Standard library only. HTTP/1.1 with keep-alive, one thread per connection.

  POST /login          {"user": "u7", "password": "secret"} -> 200 {"accessToken": "...",
                       "user": {"name": "u7"}} and Set-Cookie: session=...; 401 otherwise
  GET  /api/me         Authorization: Bearer TOKEN -> {"name": "u7"}
  GET  /api/items      Authorization: Bearer TOKEN -> a page of items
  POST /api/cart       Authorization and the session cookie -> 201 {"cartId": "..."}
  GET  /api/cart/ID    Authorization and the session cookie; the cart must be the user's
  GET  /stats          what the app saw: logins, requests per token, refusals

Usage: python3 app.py [--port 8080]
"""

import argparse
import itertools
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOCK = threading.Lock()
IDS = itertools.count(1)
TOKENS = {}  # token -> user
SESSIONS = {}  # session -> token
CARTS = {}  # cart id -> token
STATS = {"logins": 0, "users": {}, "requests_per_token": {}, "unauthorized": 0, "carts": 0}


class Shop(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # One write per response, sent at once: a head and a body written apart would meet the
    # client's delayed ACK (40 ms a response).
    wbufsize = -1
    disable_nagle_algorithm = True

    def log_message(self, *_):
        pass

    def send(self, status, body, headers=()):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def token(self):
        auth = self.headers.get("Authorization", "")
        token = auth[len("Bearer "):] if auth.startswith("Bearer ") else ""
        with LOCK:
            if token not in TOKENS:
                STATS["unauthorized"] += 1
                return None
            per = STATS["requests_per_token"]
            per[token] = per.get(token, 0) + 1
        return token

    def session_ok(self, token):
        cookies = dict(
            c.strip().split("=", 1) for c in self.headers.get("Cookie", "").split(";") if "=" in c
        )
        with LOCK:
            ok = SESSIONS.get(cookies.get("session")) == token
            if not ok:
                STATS["unauthorized"] += 1
        return ok

    def do_POST(self):
        raw = self.body()
        if self.path == "/login":
            try:
                form = json.loads(raw or b"{}")
            except ValueError:
                form = {}
            user, password = form.get("user"), form.get("password")
            if not user or password != "secret":
                return self.send(401, {"error": "bad credentials"})
            n = next(IDS)
            token, session = f"t{n:06d}.{user}", f"s{n:06d}"
            with LOCK:
                TOKENS[token] = user
                SESSIONS[session] = token
                STATS["logins"] += 1
                STATS["users"][user] = STATS["users"].get(user, 0) + 1
            return self.send(
                200,
                {"accessToken": token, "user": {"name": user}},
                [("Set-Cookie", f"session={session}; Path=/; HttpOnly")],
            )
        if self.path == "/api/cart":
            token = self.token()
            if token is None or not self.session_ok(token):
                return self.send(401, {"error": "log in first"})
            cart = f"c{next(IDS):06d}"
            with LOCK:
                CARTS[cart] = token
                STATS["carts"] += 1
            return self.send(201, {"cartId": cart}, [("Location", f"/api/cart/{cart}")])
        self.send(404, {"error": "no such page"})

    def do_GET(self):
        if self.path == "/stats":
            with LOCK:
                stats = dict(STATS, tokens_used=len(STATS["requests_per_token"]))
                stats.pop("requests_per_token")
            return self.send(200, stats)
        token = self.token() if self.path.startswith("/api/") else None
        if self.path.startswith("/api/") and token is None:
            return self.send(401, {"error": "log in first"})
        if self.path == "/api/me":
            return self.send(200, {"name": TOKENS[token]})
        if self.path.startswith("/api/items"):
            return self.send(200, {"items": [{"id": i, "name": f"item {i}"} for i in range(10)]})
        if self.path.startswith("/api/cart/"):
            if not self.session_ok(token):
                return self.send(401, {"error": "log in first"})
            with LOCK:
                mine = CARTS.get(self.path[len("/api/cart/"):]) == token
            return self.send(200 if mine else 404, {"mine": mine})
        self.send(404, {"error": "no such page"})


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8080)
    args = parser.parse_args()
    ThreadingHTTPServer.request_queue_size = 1024  # a burst of connects is not dropped
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Shop)
    server.daemon_threads = True
    print(f"shop on http://127.0.0.1:{args.port}/", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
