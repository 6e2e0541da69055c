import {
  context,
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Tracer,
} from '@opentelemetry/api';
import type { RequestHandler } from 'express';

/**
 * The middleware that gives every request a server span: the incoming W3C trace context
 * (`traceparent`, `tracestate`) is its parent, it is the active span while the request is
 * handled, and it ends when the response is done, named `<METHOD> <route template>` (the route
 * the metrics label uses, never the URL: paths and queries can carry ids and secrets).
 */
export function traceRequests(tracer: Tracer): RequestHandler {
  return (req, res, next) => {
    const parent = propagation.extract(ROOT_CONTEXT, req.headers);
    const span = tracer.startSpan(
      req.method,
      { kind: SpanKind.SERVER, attributes: { 'http.request.method': req.method } },
      parent,
    );
    const active = trace.setSpan(parent, span);
    // Listeners added from here on run in the span's context: the body's `data`/`end` (whose
    // callbacks go on to the handler) and the request's log line on `close`.
    context.bind(active, req);
    context.bind(active, res);
    context.with(active, next);
    res.once('close', () => {
      const route = res.locals.route as string | undefined;
      if (route) {
        span.updateName(`${req.method} ${route}`);
        span.setAttribute('http.route', route);
      }
      span.setAttribute('http.response.status_code', res.statusCode);
      if (res.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      else if (!res.writableFinished)
        span.setStatus({ code: SpanStatusCode.ERROR, message: 'aborted' });
      span.end();
    });
  };
}
