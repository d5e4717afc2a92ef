/**
 * The private redis-server of a crash-point test file (crash-point-support.ts), and the ways its
 * client dies around one script call:
 * - before its script is sent (a client that cannot write: nothing reaches Redis),
 * - after sending, before Redis ran it (the server is paused with `CLIENT PAUSE ALL`, the
 *   command is written, the socket is destroyed, the pause ends: Redis drops the command),
 * - after Redis ran it, before the reply (written on a raw socket that is destroyed right after
 *   the write: Redis runs the command and its reply goes nowhere).
 */
import { once } from 'node:events';
import net from 'node:net';
import { afterAll, beforeAll, expect } from '@jest/globals';
import { Redis } from 'ioredis';
import { startRedis, type RedisHandle } from '../support/redis-server.js';
import { waitFor } from '../support/wait.js';

type Arg = string | Buffer | number;
export interface Recorded {
  name: string;
  args: Arg[];
  ok: boolean;
}

let server: RedisHandle;
let admin: Redis;
const clients: Redis[] = [];

/** Start the file's redis-server before its tests; its clients and the server go after them. */
export function useCrashPointRedis(): void {
  beforeAll(async () => {
    server = await startRedis();
    admin = new Redis(server.url);
  });
  afterAll(async () => {
    for (const c of clients) c.disconnect();
    admin.disconnect();
    await server.dispose();
  });
}

/** The file's own connection to its redis-server (not one of `client()`'s). */
export const adminClient = (): Redis => admin;

export function client(): Redis {
  const c = new Redis(server.url);
  clients.push(c);
  return c;
}

/** A client that records every script call it sends (EVALSHA/EVAL), in order, and its outcome. */
export function recordingClient(): { client: Redis; recorded: Recorded[] } {
  const c = client();
  const recorded: Recorded[] = [];
  const original = c.sendCommand.bind(c);
  c.sendCommand = ((command: { name: string; args: Arg[]; promise: Promise<unknown> }, ...rest) => {
    if (command.name === 'evalsha' || command.name === 'eval') {
      const r: Recorded = { name: command.name, args: [...command.args], ok: false };
      recorded.push(r);
      command.promise.then(
        () => (r.ok = true),
        () => undefined,
      );
    }
    return (original as (...a: unknown[]) => unknown)(command, ...rest);
  }) as Redis['sendCommand'];
  return { client: c, recorded };
}

/** The same command for the twin queue under another prefix. */
export function retarget(cmd: Recorded, from: string, to: string): Recorded {
  return {
    ...cmd,
    args: cmd.args.map((a) =>
      typeof a === 'string' && a.startsWith(from) ? to + a.slice(from.length) : a,
    ),
  };
}

function resp(args: Arg[]): Buffer {
  const parts: Buffer[] = [Buffer.from(`*${args.length}\r\n`)];
  for (const a of args) {
    const b = Buffer.isBuffer(a) ? a : Buffer.from(String(a));
    parts.push(Buffer.from(`$${b.length}\r\n`), b, Buffer.from('\r\n'));
  }
  return Buffer.concat(parts);
}

let rawSeq = 0;

async function netInputBytes(): Promise<number> {
  return Number(/total_net_input_bytes:(\d+)/.exec(await admin.info('stats'))![1]);
}

/**
 * Write `cmd` on a fresh socket and close it as soon as the bytes are handed to the kernel;
 * resolves once Redis has read them and dropped the client. The client half-closes (FIN) and
 * reads and discards every reply, so no reset can cut the bytes short.
 */
async function writeAndDie(cmd: Recorded, input: number): Promise<void> {
  const name = `crash-${process.pid}-${++rawSeq}`;
  const sock = net.connect(server.port, server.host);
  await once(sock, 'connect');
  sock.resume();
  const bytes = Buffer.concat([resp(['CLIENT', 'SETNAME', name]), resp([cmd.name, ...cmd.args])]);
  await new Promise<void>((resolve) => {
    sock.end(bytes, resolve);
  });
  // Redis has read the bytes (the command reached Redis, whatever Redis then did with it), and
  // dropped the client. Both: a client that has not run CLIENT SETNAME yet is not listed by
  // name either.
  await waitFor(
    async () =>
      (await netInputBytes()) - input >= bytes.length &&
      !String(await admin.client('LIST')).includes(`name=${name} `),
    { what: `the command to reach Redis and client ${name} to be gone`, timeoutMs: 5_000 },
  );
  sock.destroy();
}

export type Variant = 'before send' | 'sent, dropped unrun' | 'ran, reply lost';

/** Kill the client around one script call; resolves which state it must have left. */
export async function crash(cmd: Recorded, variant: Variant): Promise<'before' | 'after'> {
  if (variant === 'before send') {
    // A client that is not connected and may not queue: the call fails before any byte is sent.
    const dead = new Redis(server.port, server.host, {
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
    });
    dead.on('error', () => undefined);
    await expect(dead.call(cmd.name, ...cmd.args)).rejects.toThrow();
    dead.disconnect();
    return 'before';
  }
  if (variant === 'sent, dropped unrun') {
    // Redis holds every command while paused; the client dies meanwhile, and Redis drops it.
    // (Read before pausing: the pause holds this connection's commands too.)
    const input = await netInputBytes();
    await admin.call('CLIENT', 'PAUSE', '250', 'ALL');
    await writeAndDie(cmd, input);
    return 'before';
  }
  await writeAndDie(cmd, await netInputBytes());
  return 'after';
}

export const VARIANTS: Variant[] = ['before send', 'sent, dropped unrun', 'ran, reply lost'];
