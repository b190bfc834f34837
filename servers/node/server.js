// Reference server for volley: Node.js built-in `http` module, production defaults. When
// TLS_CERT and TLS_KEY name a PEM certificate chain and key: HTTPS with the built-in `http2`
// module, h2 and http/1.1 by ALPN. When H2C=1: cleartext HTTP/2 with prior knowledge (h2c)
// with the `http2` module, and no HTTP/1.1 on that port (Node cannot serve both there).
'use strict';

const fs = require('node:fs');
const http = require('node:http');
const http2 = require('node:http2');

const port = Number(process.env.PORT || 8080);
const DOT = Buffer.from('.');
const HELLO = Buffer.from('Hello, World!');
// Caps /bytes?n= (1 GiB): a larger body is refused rather than allocated.
const MAX_BYTES = 2 ** 30;

// Always send Content-Length, so responses are never chunked.
function send(res, status, body) {
  res.writeHead(status, {
    'Content-Type': 'text/plain',
    'Content-Length': body.length,
  });
  res.end(body);
}

function intParam(params, name) {
  const raw = params.get(name);
  if (raw === null || !/^\d+$/.test(raw)) return null;
  return Number(raw);
}

function handle(req, res) {
  const q = req.url.indexOf('?');
  const path = q === -1 ? req.url : req.url.slice(0, q);
  const params = new URLSearchParams(q === -1 ? '' : req.url.slice(q + 1));

  if (path === '/' && req.method === 'POST') {
    let length = 0;
    req.on('data', (chunk) => { length += chunk.length; });
    req.on('end', () => send(res, 200, Buffer.from(`length:${length}`)));
    return;
  }
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    send(res, 405, Buffer.from('method not allowed'));
    return;
  }
  switch (path) {
    case '/':
      send(res, 200, DOT);
      return;
    case '/hello':
      send(res, 200, HELLO);
      return;
    case '/delay': {
      const ms = intParam(params, 'ms');
      if (ms === null) return send(res, 400, Buffer.from('ms must be a non-negative integer'));
      // A timer, not a busy wait: the event loop serves other requests meanwhile.
      setTimeout(() => send(res, 200, DOT), ms);
      return;
    }
    case '/bytes': {
      const n = intParam(params, 'n');
      if (n === null || n > MAX_BYTES) {
        return send(res, 400, Buffer.from('n must be an integer from 0 to 2^30'));
      }
      send(res, 200, Buffer.alloc(n, 'x'));
      return;
    }
    default:
      send(res, 404, Buffer.from('not found'));
  }
}

// The same handler serves every protocol: over HTTP/2 `req` and `res` are the http2 module's
// compatibility API (Http2ServerRequest/Response), which mirrors http's.
function createServer() {
  if (process.env.TLS_CERT && process.env.TLS_KEY) {
    // Node's TLS defaults (TLS 1.2 and 1.3, session tickets) and HTTP/2 defaults; ALPN offers
    // h2 and, with allowHTTP1, http/1.1, whose clients get Node's HTTP/1.1 server.
    return http2.createSecureServer({
      cert: fs.readFileSync(process.env.TLS_CERT),
      key: fs.readFileSync(process.env.TLS_KEY),
      allowHTTP1: true,
    }, handle);
  }
  if (process.env.H2C === '1') return http2.createServer(handle);
  return http.createServer(handle);
}

const server = createServer();

server.listen(port, '127.0.0.1');

// Exit cleanly on SIGTERM/SIGINT (as PID 1 in a container Node would otherwise ignore them).
for (const sig of ['SIGTERM', 'SIGINT']) {
  process.on(sig, () => process.exit(0));
}
