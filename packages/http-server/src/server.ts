import { randomUUID } from 'node:crypto';
import Fastify, {
  LogController,
  type FastifyBaseLogger,
  type FastifyInstance,
  type FastifyError,
  type FastifyReply,
  type FastifyRequest,
} from 'fastify';
import { redactUrl, type Logger } from '@agent-backend/logger';
import { AppError } from './errors.js';
import { registerHealthRoutes, type ReadinessCheck } from './health.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the bearer-auth hook from the verified token's `sub`. */
    userId?: string;
  }
}

export interface CreateHttpServerOptions {
  logger: Logger;
  /** Named checks behind `GET /readyz` (e.g. `redis`, `postgres`). */
  readiness?: Record<string, ReadinessCheck>;
  /** Maximum JSON body size in bytes; larger bodies get 413. @default 1 MiB */
  bodyLimit?: number;
}

/** Accept a caller's request id only if it is short and printable, so it cannot forge log lines. */
const REQUEST_ID = /^[\w.:-]{1,128}$/;

/**
 * A Fastify server with the service's conventions: a request id per request (taken from
 * `X-Request-Id` or generated, and echoed back), exactly one log line per request (with secret
 * query parameters removed from the URL), the error body shape of {@link AppError}, 404 in the
 * same shape, and `/healthz` + `/readyz`.
 */
export function createHttpServer(options: CreateHttpServerOptions): FastifyInstance {
  const { logger } = options;
  const app = Fastify({
    // pino's Logger is a FastifyBaseLogger; the cast keeps the default instance type for callers.
    loggerInstance: logger as FastifyBaseLogger,
    // Our onResponse hook writes the one line per request; Fastify's own two lines are off.
    logController: new LogController({ disableRequestLogging: true, requestIdLogLabel: 'reqId' }),
    bodyLimit: options.bodyLimit ?? 1024 * 1024,
    genReqId: (req) => {
      const header = req.headers['x-request-id'];
      return typeof header === 'string' && REQUEST_ID.test(header) ? header : randomUUID();
    },
    forceCloseConnections: 'idle',
    return503OnClosing: true,
  });

  // A JSON API: anything but application/json is 415, not a string body that fails later.
  app.removeContentTypeParser('text/plain');

  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id);
  });

  app.addHook('onResponse', async (request, reply) => {
    const line = {
      reqId: request.id,
      method: request.method,
      url: redactUrl(request.url),
      status: reply.statusCode,
      ms: Math.round(reply.elapsedTime * 10) / 10,
      userId: request.userId,
      remote: request.ip,
    };
    if (reply.statusCode >= 500) logger.error(line, 'request');
    else logger.info(line, 'request');
  });

  app.setNotFoundHandler((request, reply) => {
    void reply.code(404).send({
      error: {
        code: 'not_found',
        message: `no route for ${request.method} ${request.url.split('?')[0]}`,
      },
    });
  });

  app.setErrorHandler((error: FastifyError | AppError, request, reply) => {
    if (error instanceof AppError) {
      if (error.headers) void reply.headers(error.headers);
      const body: Record<string, unknown> = { code: error.code, message: error.message };
      if (error.details !== undefined) body.details = error.details;
      return reply.code(error.status).send({ error: body });
    }
    const fastifyError = error as FastifyError;
    if (fastifyError.code === 'FST_ERR_CTP_BODY_TOO_LARGE') drainRejectedBody(request, reply);
    const mapped = mapFastifyError(fastifyError);
    if (mapped) return reply.code(mapped.status).send({ error: mapped.body });
    request.log.error({ err: error, reqId: request.id }, 'unhandled error');
    return reply
      .code(500)
      .send({ error: { code: 'internal_error', message: 'internal server error' } });
  });

  registerHealthRoutes(app, options.readiness ?? {});
  return app;
}

/** How long, and how much, a rejected oversized body is still read so the client sees the 413. */
export const REJECTED_BODY_DRAIN = { ms: 10_000, bytes: 64 * 1024 * 1024 } as const;

/**
 * A body over the limit is answered 413 as soon as its Content-Length (or its first bytes past
 * the limit) show it. Fastify then closes the connection, and a client still writing the body
 * (fetch and most HTTP libraries write all of it before they read) gets a reset, reported as
 * EPIPE or ECONNRESET instead of the 413. So, as nginx's lingering close does, the rest of the
 * body is read and discarded, and the connection stays usable; a body that goes on past
 * {@link REJECTED_BODY_DRAIN} (bytes or time) has its connection destroyed.
 */
function drainRejectedBody(request: FastifyRequest, reply: FastifyReply): void {
  const raw = request.raw;
  if (raw.complete) return;
  void reply.removeHeader('connection');
  let drained = 0;
  const cut = () => raw.socket?.destroy();
  const timer = setTimeout(cut, REJECTED_BODY_DRAIN.ms);
  timer.unref();
  raw.on('data', (chunk: Buffer) => {
    drained += chunk.length;
    if (drained > REJECTED_BODY_DRAIN.bytes) cut();
  });
  raw.once('close', () => clearTimeout(timer));
  raw.resume();
}

/** Fastify's own client errors (bad JSON, too large, wrong media type) in our error shape. */
function mapFastifyError(
  error: FastifyError,
): { status: number; body: { code: string; message: string } } | undefined {
  switch (error.code) {
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return {
        status: 400,
        body: { code: 'invalid_json', message: 'request body is not valid JSON' },
      };
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return { status: 413, body: { code: 'payload_too_large', message: error.message } };
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return {
        status: 415,
        body: { code: 'unsupported_media_type', message: 'request body must be application/json' },
      };
  }
  if (error.statusCode && error.statusCode >= 400 && error.statusCode < 500) {
    if (error.code === undefined && error instanceof SyntaxError) {
      return {
        status: 400,
        body: { code: 'invalid_json', message: 'request body is not valid JSON' },
      };
    }
    return { status: error.statusCode, body: { code: 'invalid_request', message: error.message } };
  }
  return undefined;
}
