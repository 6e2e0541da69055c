import type { IncomingMessage } from 'node:http';
import type { RequestHandler, Response } from 'express';
import { context } from '@opentelemetry/api';
import { AppError } from './errors.js';
import { parseJsonBody } from './json-body.js';

/**
 * Reads a JSON body up to `limit` bytes: a body of another media type (or compressed, or not
 * UTF-8) is 415, an empty or malformed one 400 `invalid_json`, a larger one 413 as soon as its
 * Content-Length or its bytes show it (the rest is drained by the error handler); a request
 * without a body goes on with `body` undefined (the route's schema says what is missing).
 */
export function jsonBody(limit: number, raw: boolean): RequestHandler {
  return (req, res, next) => {
    const length = req.headers['content-length'];
    const hasBody = req.headers['transfer-encoding'] !== undefined || (length ?? '0') !== '0';
    const isJson = req.is('application/json') === 'application/json';
    if (!hasBody) {
      if (isJson && length === '0') return next(jsonError());
      return next();
    }
    const charset = /;\s*charset=([^;\s]+)/i.exec(req.headers['content-type'] ?? '')?.[1];
    const encoding = req.headers['content-encoding'];
    if (
      !isJson ||
      (charset !== undefined && !/^"?utf-?8"?$/i.test(charset)) ||
      (encoding !== undefined && encoding !== 'identity')
    ) {
      return next(new AppError('unsupported_media_type', 'request body must be application/json'));
    }
    if (length !== undefined && Number(length) > limit) return next(tooLarge(limit));
    // A large body with a Content-Length is copied into one buffer as its bytes arrive (a 10 MB
    // body copied at the end would hold the event loop for tens of milliseconds); others at the end.
    const expected = length === undefined ? undefined : Number(length);
    const whole =
      expected !== undefined && expected >= PREALLOCATED_BODY_BYTES
        ? Buffer.allocUnsafeSlow(expected)
        : undefined;
    const chunks: Buffer[] = [];
    let received = 0;
    let done = false;
    // The body's events come from the socket, outside the request's context (the trace span,
    // when tracing is on): the chain resumes in the context this middleware was called in.
    // Tracing off: `bind` hands the function back as it is.
    const finish = context.bind(context.active(), (error?: unknown) => {
      if (done) return;
      done = true;
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', finish);
      if (error) return next(error);
      if (whole && received !== expected) return next(jsonError());
      const body = whole ?? Buffer.concat(chunks, received);
      if (raw) {
        req.body = body.toString('utf8');
        return next();
      }
      parseJsonBody(body).then(
        (parsed) => {
          if (!parsed) return next(jsonError());
          req.body = parsed.value;
          // Checked with the text rules while parsing; reported after authentication.
          res.locals.bodyProblems = parsed.problems;
          next();
        },
        (parseError: unknown) => {
          // The body thread failed or died; the request is answered 503 and the next large body
          // gets a new thread.
          req.log.error(
            { err: parseError instanceof Error ? (parseError.cause ?? parseError) : parseError },
            'the JSON body thread could not read a body',
          );
          next(parseError);
        },
      );
    });
    const onData = (chunk: Buffer) => {
      received += chunk.length;
      if (received > limit) {
        req.pause();
        return finish(tooLarge(limit));
      }
      if (whole) {
        if (received > whole.length) return finish(jsonError());
        chunk.copy(whole, received - chunk.length);
      } else chunks.push(chunk);
    };
    const onEnd = () => finish();
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', finish);
  };
}

/** Bodies from this size on are gathered into a buffer allocated once from their Content-Length. */
const PREALLOCATED_BODY_BYTES = 64 * 1024;

function tooLarge(limit: number): AppError {
  return new AppError('payload_too_large', `request body is larger than ${limit} bytes`);
}

function jsonError(): AppError {
  return new AppError('invalid_json', 'request body is not valid JSON');
}

/** How long, and how much, a rejected oversized body is still read so the client sees the 413. */
export const REJECTED_BODY_DRAIN = { ms: 10_000, bytes: 64 * 1024 * 1024 } as const;

/**
 * A body over the limit is answered 413 as soon as its Content-Length (or its first bytes past
 * the limit) show it. A client still writing the body (fetch and most HTTP libraries write all of
 * it before they read) would get a reset, reported as EPIPE or ECONNRESET instead of the 413, if
 * the connection were closed. So, as nginx's lingering close does, the rest of the body is read
 * and discarded and the connection stays usable; a body that goes on past
 * {@link REJECTED_BODY_DRAIN} (bytes or time) has its connection destroyed.
 */
export function drainRejectedBody(req: IncomingMessage, res: Response): void {
  if (req.complete) return;
  res.removeHeader('connection');
  let drained = 0;
  const cut = () => req.socket?.destroy();
  const timer = setTimeout(cut, REJECTED_BODY_DRAIN.ms);
  timer.unref();
  req.on('data', (chunk: Buffer) => {
    drained += chunk.length;
    if (drained > REJECTED_BODY_DRAIN.bytes) cut();
  });
  req.once('close', () => clearTimeout(timer));
  req.resume();
}
