// A tiny Node.js HTTP target for longhaul's tests and demos (plain node, no npm).
//
//   PORT=8080 node --inspect=127.0.0.1:9229 server.js
//   LEAK_BYTES=2048 PORT=8080 node --inspect=127.0.0.1:9229 server.js   # the leaky twin
//   LEAK_BUFFER_BYTES=2048 PORT=8080 node --inspect=127.0.0.1:9229 server.js   # leaks off the heap
//   BURN_US=2000 PORT=8080 node server.js   # every request burns 2 ms of CPU on the JavaScript thread
//
// Routes: GET /health → 200 "ok"; anything else → 200 with a small JSON body.
// With LEAK_BYTES=N (> 0), every request retains N more bytes on the V8 heap
// forever (a string kept in a module-level array), the way a cache without
// eviction does; without it the server keeps nothing between requests.
// With LEAK_BUFFER_BYTES=N (> 0), every request retains a Buffer of N bytes
// instead: its bytes live outside the V8 heap (process.memoryUsage()
// external and arrayBuffers, and the RSS grow; the heap only by the Buffer's
// small JavaScript object).
// With BURN_US=N (> 0), every request but /health spins synchronously in
// burn() until the process has used N µs more CPU: a per-request hot loop
// on the one JavaScript thread, which pins it near a full core under load.
// PORT=0 (the default) picks a free port. HOST is the address to listen on
// (default 127.0.0.1; a container image sets 0.0.0.0). Once listening it
// prints one line, "listening on http://HOST:PORT", to stdout.
'use strict';

const http = require('node:http');

const leakBytes = Math.max(0, parseInt(process.env.LEAK_BYTES || '0', 10) || 0);
const leakBufferBytes = Math.max(0, parseInt(process.env.LEAK_BUFFER_BYTES || '0', 10) || 0);
const burnMicros = Math.max(0, parseInt(process.env.BURN_US || '0', 10) || 0);
const port = parseInt(process.env.PORT || '0', 10) || 0;
const host = process.env.HOST || '127.0.0.1';
const retained = [];
let served = 0;

// burn spins until the process has used us µs more CPU (process.cpuUsage:
// user + system), checking every thousand iterations.
function burn(us) {
  const start = process.cpuUsage();
  let x = 0;
  for (;;) {
    for (let i = 0; i < 1000; i++) x = (x * 31 + i) | 0;
    const d = process.cpuUsage(start);
    if (d.user + d.system >= us) return x;
  }
}

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
  if (burnMicros > 0) burn(burnMicros);
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
