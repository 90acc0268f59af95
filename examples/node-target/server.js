// A tiny Node.js HTTP target for longhaul's tests and demos (plain node, no npm).
//
//   PORT=8080 node --inspect=127.0.0.1:9229 server.js
//   LEAK_BYTES=2048 PORT=8080 node --inspect=127.0.0.1:9229 server.js   # the leaky twin
//   LEAK_BUFFER_BYTES=2048 PORT=8080 node --inspect=127.0.0.1:9229 server.js   # leaks off the heap
//   BURN_US=2000 PORT=8080 node server.js   # every request burns 2 ms of CPU on the JavaScript thread
//   HOT_LOOP_US=200 PORT=8080 node --inspect=127.0.0.1:9229 server.js   # 200 µs of synchronous work per request
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
// With HOT_LOOP_US=N (> 0), every request runs hotLoop, a synchronous loop
// on the main thread (the event loop serves nothing meanwhile) of a fixed
// number of iterations calibrated at start to about N µs of CPU: a known
// per-request cost for a CPU profile to find. (BURN_US holds the thread for
// exactly N µs of CPU under any load, but reads the process's CPU clock
// every thousand iterations, so a profile finds part of its time in
// process.cpuUsage; hotLoop reads no clock, so the loop itself is the
// profile's leaf.)
// The leaks and the loop are named functions (retainString, retainBuffer,
// hotLoop), so that a profile names them.
// PORT=0 (the default) picks a free port. HOST is the address to listen on
// (default 127.0.0.1; a container image sets 0.0.0.0). Once listening it
// prints one line, "listening on http://HOST:PORT", to stdout.
'use strict';

const http = require('node:http');

const leakBytes = Math.max(0, parseInt(process.env.LEAK_BYTES || '0', 10) || 0);
const leakBufferBytes = Math.max(0, parseInt(process.env.LEAK_BUFFER_BYTES || '0', 10) || 0);
const burnMicros = Math.max(0, parseInt(process.env.BURN_US || '0', 10) || 0);
const hotLoopUs = Math.max(0, parseInt(process.env.HOT_LOOP_US || '0', 10) || 0);
const port = parseInt(process.env.PORT || '0', 10) || 0;
const host = process.env.HOST || '127.0.0.1';
const retained = [];
let served = 0;

// retainString keeps n more bytes on the V8 heap forever: a distinct
// string per request. padEnd returns a cons string whose filler V8 shares
// between calls; reading its last character flattens it into one
// sequential string of n bytes of its own.
function retainString(n) {
  const s = (served.toString(36) + '.').padEnd(n, 'x');
  s.charCodeAt(n - 1);
  retained.push(s);
}

// retainBuffer keeps a Buffer of n bytes forever. Buffer.alloc never takes
// from the shared pool (allocUnsafe would, for small sizes): each request
// owns its n bytes, zero-filled, so they are resident.
function retainBuffer(n) {
  retained.push(Buffer.alloc(n, served & 0xff));
}

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

let spinSink = 0;

// hotLoop runs n iterations of integer arithmetic: HOT_LOOP_US's work,
// hotLoopIterations of them per request, about that many µs of CPU.
function hotLoop(n) {
  let x = spinSink | 1;
  for (let i = 0; i < n; i++) x = (Math.imul(x, 1103515245) + 12345) | 0;
  spinSink = x;
}

// iterationsPerMicro measures hotLoop's speed against the process's own CPU
// time (process.cpuUsage, not the wall clock, so a busy machine does not
// skew it): the median of 7 runs.
function iterationsPerMicro() {
  const rates = [];
  let n = 200000;
  for (let k = 0; k < 7; k++) {
    const t0 = process.cpuUsage();
    hotLoop(n);
    const d = process.cpuUsage(t0);
    const us = d.user + d.system;
    if (us > 0) rates.push(n / us);
    n = 400000;
  }
  rates.sort((a, b) => a - b);
  return rates.length ? rates[rates.length >> 1] : 100;
}

const hotLoopIterations = hotLoopUs > 0 ? Math.round(hotLoopUs * iterationsPerMicro()) : 0;

const server = http.createServer((req, res) => {
  served++;
  if (leakBytes > 0) retainString(leakBytes);
  if (leakBufferBytes > 0) retainBuffer(leakBufferBytes);
  if (hotLoopIterations > 0 && req.url !== '/health') hotLoop(hotLoopIterations);
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
