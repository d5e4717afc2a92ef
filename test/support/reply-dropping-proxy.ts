// A TCP proxy that loses one reply of Redis on purpose: the command ran, the client never hears.
import net from 'node:net';
import { testRedisUrl } from './keys.js';

/**
 * A TCP proxy to the test Redis that, when armed, forwards the next client command containing
 * `marker` and then cuts the client's connection instead of passing Redis' reply back: the
 * command ran, its reply is lost, and the client re-sends it after reconnecting.
 */
export async function replyDroppingProxy(marker: string) {
  const target = new URL(testRedisUrl());
  let armed = false;
  let dropped = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(target.port), target.hostname);
    sockets.add(client).add(upstream);
    let cutNextReply = false;
    client.on('data', (chunk) => {
      if (armed && chunk.toString('latin1').toLowerCase().includes(marker)) {
        armed = false;
        cutNextReply = true;
      }
      upstream.write(chunk);
    });
    upstream.on('data', (chunk) => {
      if (cutNextReply) {
        dropped++;
        client.destroy();
        upstream.destroy();
        return;
      }
      client.write(chunk);
    });
    const close = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('error', close).on('close', close);
    upstream.on('error', close).on('close', close);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  return {
    url: `redis://127.0.0.1:${port}`,
    arm: () => {
      armed = true;
    },
    get dropped() {
      return dropped;
    },
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
