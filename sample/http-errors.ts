// How the sample answers bad input over HTTP: the core's INVALID_ARGUMENT (an id too long, a
// delay out of range, a bad listing page...) is a 400 listing every problem, from any route; and
// a body nested deeper than MAX_DEPTH is a 400 before validation walks it (class-transformer
// recurses once per level: a 3 KB body of nested arrays overflowed the stack, a 500).
import {
  BadRequestException,
  Catch,
  type ArgumentMetadata,
  type ArgumentsHost,
  type PipeTransform,
} from '@nestjs/common';
import { BaseExceptionFilter } from '@nestjs/core';
import { WorkQueueError } from '../src/index.js';

/** Deepest nesting of arrays and objects a request body may have. */
export const MAX_DEPTH = 64;

@Catch(WorkQueueError)
export class WorkQueueErrorFilter extends BaseExceptionFilter {
  override catch(e: WorkQueueError, host: ArgumentsHost): void {
    if (e.code === 'INVALID_ARGUMENT')
      return super.catch(new BadRequestException([...e.problems]), host);
    return super.catch(e, host);
  }
}

/** Refuses a body nested deeper than MAX_DEPTH (a walk with a stack of its own: no recursion). */
export class BodyDepthPipe implements PipeTransform {
  transform(value: unknown, meta: ArgumentMetadata): unknown {
    if (meta.type !== 'body') return value;
    const stack: [unknown, number][] = [[value, 1]];
    while (stack.length > 0) {
      const [v, depth] = stack.pop()!;
      if (v === null || typeof v !== 'object') continue;
      if (depth > MAX_DEPTH) {
        throw new BadRequestException([`the body is nested deeper than ${MAX_DEPTH} levels`]);
      }
      for (const child of Object.values(v)) stack.push([child, depth + 1]);
    }
    return value;
  }
}
