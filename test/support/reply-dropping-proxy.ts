// A TCP proxy that loses one reply of Redis on purpose: the command ran, the client never hears.
import { redisProxy } from './redis-proxy.js';

/**
 * A TCP proxy to the test Redis that, when armed, forwards the next client command containing
 * `marker` and then cuts the client's connection instead of passing Redis' reply back: the
 * command ran, its reply is lost, and the client re-sends it after reconnecting.
 */
export async function replyDroppingProxy(marker: string) {
  let armed = false;
  let dropped = 0;
  const proxy = await redisProxy(() => {
    let cutNextReply = false;
    return {
      command(chunk, c) {
        if (armed && chunk.toString('latin1').toLowerCase().includes(marker)) {
          armed = false;
          cutNextReply = true;
        }
        c.toRedis(chunk);
      },
      reply(chunk, c) {
        if (!cutNextReply) return c.toClient(chunk);
        dropped++;
        c.cut();
      },
    };
  });
  return {
    ...proxy,
    arm: () => {
      armed = true;
    },
    get dropped() {
      return dropped;
    },
  };
}

/**
 * A TCP proxy to the test Redis that, once told to hold, keeps every reply of Redis (commands
 * still pass) until a client command containing `marker` passes after `releaseOn(marker)`: then
 * the held replies go, in order, 50 ms later (after that command's own reply was held too).
 */
export async function replyHoldingProxy() {
  let holding = false;
  let releaseOn: string | undefined;
  const held: Array<() => void> = [];
  const release = () => {
    holding = false;
    releaseOn = undefined;
    for (const send of held.splice(0)) send();
  };
  const proxy = await redisProxy(() => ({
    command(chunk, c) {
      if (releaseOn !== undefined && chunk.toString('latin1').includes(releaseOn)) {
        setTimeout(release, 50);
      }
      c.toRedis(chunk);
    },
    reply(chunk, c) {
      if (holding) held.push(() => c.toClient(chunk));
      else c.toClient(chunk);
    },
  }));
  return {
    ...proxy,
    hold: () => {
      holding = true;
    },
    releaseOn: (marker: string) => {
      releaseOn = marker;
    },
    get held() {
      return held.length;
    },
  };
}
