import { z } from 'zod';
import { optionalString, booleanStringDefaultTrue, url, operatorToken } from './env-fields.js';

/** An OTLP exporter protocol, as the OpenTelemetry specification spells it; empty: unset. */
const otlpProtocol = optionalString.pipe(z.enum(['http/protobuf', 'http/json', 'grpc']).optional());

/** Running it: metrics, operator credentials, traces, logs, shutdown. */
export const operationsEnv = {
  METRICS_ENABLED: booleanStringDefaultTrue.describe(
    '`GET /metrics` in the Prometheus text format on every role ([operations.md](operations.md)); `false`: that path is 404 and nothing is measured',
  ),
  BUILD_COMMIT: optionalString.describe(
    'the commit the running code was built from: the `commit` label of `agent_backend_build_info` ([operations.md](operations.md)). The image sets it (`docker build --build-arg BUILD_COMMIT=$(git rev-parse HEAD)`); unset: `unknown`',
  ),
  METRICS_PORT: z.coerce
    .number()
    .int()
    .min(1)
    .max(65535)
    .optional()
    .describe(
      "serve `GET /metrics` (and only it, with `METRICS_TOKEN` if set) on this port of `HOST` too, so a scraper reaches it without the public port's route; the public port keeps serving it. Unset: the public port only. Must differ from `PORT`",
    ),
  METRICS_TOKEN: operatorToken.describe(
    'when set, `GET /metrics` requires `Authorization: Bearer <token>` (401 otherwise; compared in constant time). At least 16 characters. Unset: open, so keep the port off the internet or set it',
  ),
  ADMIN_TOKEN: operatorToken.describe(
    "operator credential of the operator API at `/api/operator/` (`Authorization: Bearer <token>`; see Operator API in [operations.md](operations.md#operator-api)) and of the queue dashboard at `/admin/queues` (api role and all-in-one, BullMQ engine only; also HTTP Basic with any user name and the token as password, which a browser asks for). At least 16 characters. Unset: both are 404. Never a user's access token",
  ),
  OTEL_EXPORTER_OTLP_ENDPOINT: url(['http:', 'https:']).describe(
    "base URL of an OpenTelemetry collector speaking OTLP; over HTTP spans go to `<url>/v1/traces`. Set: traces are on (see Traces in [operations.md](operations.md)); unset: off, and the OpenTelemetry SDK is not even loaded. The SDK's other standard variables (`OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, `OTEL_BSP_MAX_QUEUE_SIZE`, `OTEL_RESOURCE_ATTRIBUTES`, ...) apply too",
  ),
  OTEL_EXPORTER_OTLP_PROTOCOL: otlpProtocol.describe(
    "`http/protobuf` (unset: the OpenTelemetry default), `http/json`, or `grpc` (the endpoint is then the collector's gRPC port, e.g. `http://otel-collector:4317`)",
  ),
  OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: otlpProtocol.describe(
    'the same for traces only; wins over `OTEL_EXPORTER_OTLP_PROTOCOL`',
  ),
  OTEL_SERVICE_NAME: optionalString.describe(
    "the traces' `service.name`; unset: `agent-backend-<role>` (`agent-backend-api`, ...)",
  ),
  OTEL_BSP_SCHEDULE_DELAY: z.coerce
    .number()
    .int()
    .min(1)
    .default(5_000)
    .describe('milliseconds finished spans wait to be exported in one batch'),
  OTEL_TRACES_SAMPLER: z
    .enum([
      'always_on',
      'always_off',
      'traceidratio',
      'parentbased_always_on',
      'parentbased_always_off',
      'parentbased_traceidratio',
    ])
    .default('parentbased_always_on')
    .describe(
      "which traces are recorded and exported, as the OpenTelemetry specification names them: `parentbased_*` follow the caller's decision (the `traceparent` sampled flag, the bus envelope's, the scheduling request's) and apply the rest of the name to traces that start here; `traceidratio` keeps that fraction of trace ids. A trace not sampled costs a span id and a context switch per span, and is not exported. Log lines carry its `trace_id` all the same (see Traces in [operations.md](operations.md))",
    ),
  OTEL_TRACES_SAMPLER_ARG: z
    .preprocess(
      (v) => (typeof v === 'string' && v.trim() === '' ? undefined : v),
      z.coerce.number().min(0).max(1).default(1),
    )
    .describe(
      'the fraction of traces the `traceidratio` samplers keep, e.g. `0.1`; ignored by the other samplers',
    ),
  LOG_LEVEL: z
    .enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
    .default('info')
    .describe('`fatal`, `error`, `warn`, `info`, `debug`, `trace` or `silent`'),
  LOG_FORMAT: z
    .enum(['json', 'pretty'])
    .default('json')
    .describe(
      '`json`: one JSON object per line (for log collectors); `pretty`: readable, coloured lines (pino-pretty, for development). Both are redacted the same way. pino-pretty is a development dependency: where it is not installed (production installs, the Docker image), `pretty` writes JSON lines, the first a warning (`pretty_logs_unavailable`) that says so',
    ),
  SHUTDOWN_TIMEOUT_MS: z.coerce
    .number()
    .int()
    .min(0)
    .default(10_000)
    .describe(
      'how long SIGTERM waits for streams, sockets and jobs before exiting anyway; running agent runs may finish during its first three quarters (the drain), then end with `server_shutdown` on an API replica, and are handed over to another worker on a worker',
    ),
};
