// The code the heartbeat thread runs (CommonJS, evaluated from this string so it works from
// source and dist alike, and under coverage instrumentation). heartbeat-thread.ts drives it.
//
// Memory is the reason for its shape: a thread is a V8 isolate of its own (~10 MB on Node 20),
// and loading ioredis into it cost ~18 MB more. So a plain connection (TCP or TLS, AUTH with
// an optional ACL username, SELECT, CLIENT SETNAME: everything a standalone Redis needs) is
// spoken here in RESP2 over `node:net`/`node:tls`, with the few replies a heartbeat gets; only a
// Cluster or a Sentinel connection (or options this client does not know: see `plainOptions` in
// heartbeat-thread.ts) loads ioredis, lazily, on first use.
//
// Messages in: conn (open a connection), add (beat a worker), remove, drop (close a connection),
// stop. Out: beat (a worker's first beat landed), removed (no beat of it can land any more).
export const THREAD_CODE = `
const { parentPort, workerData } = require('node:worker_threads');
const { lua, sha } = workerData;
const conns = new Map();
const beats = new Map();
const removing = new Set();
const bounded = (p, ms) => Promise.race([p, new Promise((r) => setTimeout(r, ms).unref())]);
// Reconnect within a second (a beat must land on a restarted or newly promoted master before
// the heartbeat timeout); a reply later than COMMAND_MS drops the connection (a hung socket must
// not hold every later beat back).
const backoff = (times) => Math.min(50 * times, 1000);
const COMMAND_MS = 5000;
const READONLY = /^READONLY\\b/;

// RESP2: one reply from b at i, as [value, next index]; undefined while incomplete.
function parse(b, i) {
  const e = b.indexOf('\\r\\n', i);
  if (e < 0) return undefined;
  const t = b[i];
  const line = b.toString('utf8', i + 1, e);
  if (t === 43) return [line, e + 2];
  if (t === 45) return [new Error(line), e + 2];
  if (t === 58) return [Number(line), e + 2];
  const n = Number(line);
  if (t === 36) {
    if (n < 0) return [null, e + 2];
    if (b.length < e + 4 + n) return undefined;
    return [b.toString('utf8', e + 2, e + 2 + n), e + 4 + n];
  }
  if (t === 42) {
    if (n < 0) return [null, e + 2];
    const out = [];
    let j = e + 2;
    for (let k = 0; k < n; k++) {
      const r = parse(b, j);
      if (!r) return undefined;
      out.push(r[0]);
      j = r[1];
    }
    return [out, j];
  }
  throw new Error('RESP protocol error');
}

function encode(args) {
  let s = '*' + args.length + '\\r\\n';
  for (const a of args) {
    const v = String(a);
    s += '$' + Buffer.byteLength(v) + '\\r\\n' + v + '\\r\\n';
  }
  return s;
}

// A standalone Redis over one socket: commands asked while (re)connecting wait for the
// handshake; each is answered, refused or dropped within COMMAND_MS.
function plainClient(o) {
  let sock = null;
  let ready = false;
  let closed = false;
  let attempts = 0;
  let retry;
  let buf = null;
  const sent = [];
  let waiting = [];
  const handshake = [];
  if (o.password !== undefined && o.password !== null && o.password !== '')
    handshake.push(o.username ? ['AUTH', o.username, o.password] : ['AUTH', o.password]);
  if (o.connectionName) handshake.push(['CLIENT', 'SETNAME', o.connectionName]);
  if (o.db) handshake.push(['SELECT', o.db]);

  function settle(c, err, value) {
    if (c.done) return;
    c.done = true;
    clearTimeout(c.timer);
    if (err) c.reject(err);
    else c.resolve(value);
  }
  function write(c) {
    sent.push(c);
    sock.write(encode(c.args));
  }
  function onData(d) {
    buf = buf ? Buffer.concat([buf, d]) : d;
    let i = 0;
    try {
      for (;;) {
        const r = i < buf.length ? parse(buf, i) : undefined;
        if (!r) break;
        i = r[1];
        const c = sent.shift();
        if (!c) continue;
        if (r[0] instanceof Error) {
          settle(c, r[0]);
          if (READONLY.test(r[0].message)) sock.destroy();
        } else settle(c, null, r[0]);
      }
    } catch (e) {
      sock.destroy(e);
      return;
    }
    buf = i >= buf.length ? null : buf.subarray(i);
  }
  function onClose(s) {
    if (s !== sock) return;
    sock = null;
    ready = false;
    buf = null;
    // What was sent may or may not have run: its caller hears of a failure.
    for (const c of sent.splice(0)) settle(c, new Error('connection closed'));
    if (!closed) retry = setTimeout(connect, backoff(++attempts));
  }
  function connect() {
    if (closed) return;
    const where = o.path
      ? { path: o.path }
      : { host: o.host || 'localhost', port: o.port || 6379, family: o.family || 0 };
    const s = o.tls
      ? require('node:tls').connect({ ...where, ...o.tls })
      : require('node:net').connect(where);
    sock = s;
    const limit = setTimeout(() => s.destroy(), o.connectTimeout || 10000);
    s.setNoDelay(true);
    if (o.keepAlive) s.setKeepAlive(true, o.keepAlive);
    s.on('data', onData);
    s.on('error', () => {});
    s.on('close', () => {
      clearTimeout(limit);
      onClose(s);
    });
    s.once(o.tls ? 'secureConnect' : 'connect', () => {
      clearTimeout(limit);
      const steps = handshake.map((args) => command(args, true));
      Promise.all(steps).then(
        () => {
          if (s !== sock) return;
          ready = true;
          attempts = 0;
          for (const c of waiting.splice(0)) if (!c.done) write(c);
        },
        () => s.destroy(),
      );
    });
  }
  function command(args, early) {
    return new Promise((resolve, reject) => {
      const c = { args, resolve, reject, done: false, timer: undefined };
      c.timer = setTimeout(() => {
        settle(c, new Error('no reply within ' + COMMAND_MS + ' ms'));
        // A reply still owed would answer the next command: start over.
        if (sent.includes(c) && sock) sock.destroy();
        waiting = waiting.filter((x) => x !== c);
      }, COMMAND_MS);
      if (sock && (ready || early)) write(c);
      else waiting.push(c);
    });
  }
  connect();
  return {
    beat: (keys, args) =>
      command(['EVALSHA', sha, keys.length, ...keys, ...args]).catch((e) => {
        if (!/^NOSCRIPT\\b/.test(e.message)) throw e;
        return command(['EVAL', lua, keys.length, ...keys, ...args]);
      }),
    close() {
      closed = true;
      clearTimeout(retry);
      for (const c of waiting.splice(0)) settle(c, new Error('closed'));
      const s = sock;
      if (!s) return Promise.resolve();
      const quit = ready ? command(['QUIT']).catch(() => {}) : Promise.resolve();
      return bounded(quit, 1000).finally(() => s.destroy());
    },
  };
}

// A Cluster or Sentinel connection: ioredis, loaded on first use. Its functions do not cross into
// the thread: ours reconnect within a second, and a beat refused by a node that is a replica now
// reconnects (asking the sentinels for the master again).
let ioredis;
function ioredisClient(m) {
  ioredis ??= require(m.ioredisPath);
  const c = m.cluster
    ? new ioredis.Cluster(m.nodes, { ...m.options, lazyConnect: false })
    : new ioredis.Redis({
        retryStrategy: backoff,
        reconnectOnError: (e) => m.options.role !== 'slave' && READONLY.test(e.message),
        ...m.options,
        lazyConnect: false,
        maxRetriesPerRequest: 1,
      });
  c.on('error', () => {});
  // A Sentinel client's failover detector closes with each connection (lib/redis/connection.ts).
  if (!m.cluster) c.on('close', () => {
    const k = c.connector;
    const d = k && k.failoverDetector;
    if (!d) return;
    k.failoverDetector = null;
    if (!d.isDisconnected) d.cleanup();
  });
  c.defineCommand('wqHeartbeat', { lua });
  return {
    beat: (keys, args) => c.wqHeartbeat(keys.length, ...keys, ...args),
    close: () => bounded(c.quit(), 1000).catch(() => {}).finally(() => c.disconnect()),
  };
}

const handlers = {
  conn(m) {
    conns.set(m.conn, m.plain ? plainClient(m.options) : ioredisClient(m));
  },
  add(m) {
    const c = conns.get(m.conn);
    const b = { stopped: false, first: true, inflight: undefined, timer: undefined };
    const beat = () => {
      // One beat at a time: a slow or unreachable Redis gets no pile of them.
      if (b.stopped || b.inflight) return;
      b.inflight = c.beat(m.keys, m.args).then(
        () => {
          if (b.first && !b.stopped) parentPort.postMessage({ t: 'beat', id: m.id });
          b.first = false;
        },
        () => {},
      ).finally(() => { b.inflight = undefined; });
    };
    b.timer = setInterval(beat, m.intervalMs);
    beats.set(m.id, b);
    beat();
  },
  remove(m) {
    const b = beats.get(m.id);
    beats.delete(m.id);
    if (b) { b.stopped = true; clearInterval(b.timer); }
    const p = bounded(b && b.inflight, 1000).then(() => {
      removing.delete(p);
      parentPort.postMessage({ t: 'removed', id: m.id });
    });
    removing.add(p);
  },
  drop(m) {
    const c = conns.get(m.conn);
    conns.delete(m.conn);
    if (c) void c.close();
  },
  stop() {
    Promise.all([...removing])
      .then(() => Promise.all([...conns.values()].map((c) => c.close())))
      .finally(() => parentPort.close());
  },
};
parentPort.on('message', (m) => handlers[m.t](m));
`;
