// A TCP proxy to the test Redis whose tests decide, chunk by chunk, what passes: the base of the
// proxies that lose or hold Redis' replies on purpose.
import net from 'node:net';
import { testRedisUrl } from './keys.js';

/** One client connection through the proxy. */
export interface ProxiedConnection {
  toRedis(chunk: Buffer): void;
  toClient(chunk: Buffer): void;
  /** Drop both sides (the client sees its connection close). */
  cut(): void;
}

/** What the proxy does with a client's command chunk and a reply chunk (default: pass it). */
export interface ProxyRules {
  command?(chunk: Buffer, c: ProxiedConnection): void;
  reply?(chunk: Buffer, c: ProxiedConnection): void;
}

export async function redisProxy(rules: () => ProxyRules) {
  const target = new URL(testRedisUrl());
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(target.port), target.hostname);
    sockets.add(client).add(upstream);
    const c: ProxiedConnection = {
      toRedis: (chunk) => upstream.write(chunk),
      toClient: (chunk) => client.write(chunk),
      cut: () => {
        client.destroy();
        upstream.destroy();
      },
    };
    const r = rules();
    client.on('data', (chunk: Buffer) => (r.command ? r.command(chunk, c) : c.toRedis(chunk)));
    upstream.on('data', (chunk: Buffer) => (r.reply ? r.reply(chunk, c) : c.toClient(chunk)));
    client.on('error', c.cut).on('close', c.cut);
    upstream.on('error', c.cut).on('close', c.cut);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  return {
    url: `redis://127.0.0.1:${port}`,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
