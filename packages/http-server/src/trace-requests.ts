import {
  context,
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Span,
  type Tracer,
} from '@opentelemetry/api';
import type { RequestHandler, Response } from 'express';

/**
 * The middleware that gives every request a server span: the incoming W3C trace context
 * (`traceparent`, `tracestate`) is its parent, it is the active span while the request is
 * handled, and it ends when the response is done, named `<METHOD> <route template>` (the route
 * the metrics label uses, never the URL: paths and queries can carry ids and secrets).
 *
 * The handler chain runs inside the span's context, and what it awaits inherits it; the request
 * and response emitters are not bound to it (patching both emitters of every request cost more
 * than the span itself). So the two places that continue on an emitter callback carry the span
 * themselves: the JSON body reader resumes the chain in the context it was called in, and the
 * request's log line takes the ids from {@link requestSpan}. A span the sampler dropped is
 * non-recording: it still carries its trace id and the "not sampled" flag to its children.
 */
export function traceRequests(tracer: Tracer): RequestHandler {
  return (req, res, next) => {
    const parent = propagation.extract(ROOT_CONTEXT, req.headers);
    // Attributes go on once the span is known to record: the SDK copies start attributes
    // before it asks the sampler, so they would cost unsampled requests too.
    const span = tracer.startSpan(req.method, { kind: SpanKind.SERVER }, parent);
    res.locals.span = span;
    context.with(trace.setSpan(parent, span), next);
    if (!span.isRecording()) return;
    res.once('close', () => {
      const route = res.locals.route as string | undefined;
      span.setAttributes({
        'http.request.method': req.method,
        'http.response.status_code': res.statusCode,
      });
      if (route) {
        span.updateName(`${req.method} ${route}`);
        span.setAttribute('http.route', route);
      }
      if (res.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      else if (!res.writableFinished)
        span.setStatus({ code: SpanStatusCode.ERROR, message: 'aborted' });
      span.end();
    });
  };
}

/** The server span {@link traceRequests} started for this response; none when tracing is off. */
export function requestSpan(res: Response): Span | undefined {
  return res.locals.span as Span | undefined;
}
