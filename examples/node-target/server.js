// A tiny Node.js HTTP target for longhaul's tests and demos (plain node, no npm).
//
//   PORT=8080 node --inspect=127.0.0.1:9229 server.js
//   LEAK_BYTES=2048 PORT=8080 node --inspect=127.0.0.1:9229 server.js   # the leaky twin
//   LEAK_BUFFER_BYTES=2048 PORT=8080 node --inspect=127.0.0.1:9229 server.js   # leaks off the heap
//
// Routes: GET /health → 200 "ok"; anything else → 200 with a small JSON body.
// With LEAK_BYTES=N (> 0), every request retains N more bytes on the V8 heap
// forever (a string kept in a module-level array), the way a cache without
// eviction does; without it the server keeps nothing between requests.
// With LEAK_BUFFER_BYTES=N (> 0), every request retains a Buffer of N bytes
// instead: its bytes live outside the V8 heap (process.memoryUsage()
// external and arrayBuffers, and the RSS grow; the heap only by the Buffer's
// small JavaScript object).
// PORT=0 (the default) picks a free port. HOST is the address to listen on
// (default 127.0.0.1; a container image sets 0.0.0.0). Once listening it
// prints one line, "listening on http://HOST:PORT", to stdout.
'use strict';

const http = require('node:http');

const leakBytes = Math.max(0, parseInt(process.env.LEAK_BYTES || '0', 10) || 0);
const leakBufferBytes = Math.max(0, parseInt(process.env.LEAK_BUFFER_BYTES || '0', 10) || 0);
const port = parseInt(process.env.PORT || '0', 10) || 0;
const host = process.env.HOST || '127.0.0.1';
const retained = [];
let served = 0;

const server = http.createServer((req, res) => {
  served++;
  if (leakBytes > 0) {
    // A distinct string per request. padEnd returns a cons string whose
    // filler V8 shares between calls; reading its last character flattens
    // it into one sequential string of leakBytes bytes of its own.
    const s = (served.toString(36) + '.').padEnd(leakBytes, 'x');
    s.charCodeAt(leakBytes - 1);
    retained.push(s);
  }
  if (leakBufferBytes > 0) {
    // Buffer.alloc never takes from the shared pool (allocUnsafe would, for
    // small sizes): each request owns its N bytes, zero-filled, so they are
    // resident.
    retained.push(Buffer.alloc(leakBufferBytes, served & 0xff));
  }
  if (req.url === '/health') {
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end('ok');
    return;
  }
  const body = JSON.stringify({ served, path: req.url });
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
});

server.keepAliveTimeout = 30000;
server.listen(port, host, () => {
  process.stdout.write(`listening on http://${host}:${server.address().port}\n`);
});

for (const sig of ['SIGINT', 'SIGTERM']) {
  process.on(sig, () => server.close(() => process.exit(0)));
}
