// The board's default guard: HTTP basic auth against BOARD_CREDENTIALS ("user:password"). Unset,
// the board answers 401 to everyone: it is never public by default.
import { timingSafeEqual } from 'node:crypto';
import type { NextFunction, Request, Response } from 'express';

/** Express middleware: basic auth with `credentials` ("user:password"); none → always refused. */
export function basicAuth(credentials: string | undefined) {
  const expected = credentials ? Buffer.from(credentials) : undefined;
  return (req: Request, res: Response, next: NextFunction): void => {
    const header = req.headers.authorization ?? '';
    const given = header.startsWith('Basic ')
      ? Buffer.from(Buffer.from(header.slice(6), 'base64').toString('utf8'))
      : Buffer.alloc(0);
    if (expected && given.length === expected.length && timingSafeEqual(given, expected)) {
      return next();
    }
    res.setHeader('WWW-Authenticate', 'Basic realm="queues", charset="UTF-8"');
    res
      .status(401)
      .send(expected ? 'Authentication required' : 'Board disabled: set BOARD_CREDENTIALS');
  };
}
