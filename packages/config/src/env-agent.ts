import { z } from 'zod';
import { optionalString, booleanStringDefaultTrue, url } from './env-fields.js';

/**
 * The agent run: embeddings and knowledge search, model requests, streams, suspension, takeover,
 * tools per run.
 */
export const agentEnv = {
  EMBEDDINGS_BASE_URL: url(['http:', 'https:']).describe(
    "OpenAI-compatible API root (`https://api.openai.com/v1`, a local server's `/v1`) used to embed knowledge-base chunks (worker) and search queries (api); unset: knowledge search is full-text only (see [`knowledge-base.md`](knowledge-base.md)). Operator-configured, so not behind the SSRF guard",
  ),
  EMBEDDINGS_API_KEY: optionalString.describe(
    'its key (sent as `Authorization: Bearer`); never logged',
  ),
  EMBEDDINGS_MODEL: optionalString.describe(
    'the embedding model; required with `EMBEDDINGS_BASE_URL`. Stored with every chunk: chunks are only compared with queries embedded by the same model',
  ),
  EMBEDDINGS_DIMENSIONS: z
    .preprocess(
      (v) => (typeof v === 'string' && v.trim() === '' ? undefined : v),
      z.coerce.number().int().min(1).max(16_000).optional(),
    )
    .describe(
      "vector size to ask for (`dimensions`, for models that take it); unset: the model's own size",
    ),
  EMBEDDINGS_BATCH_SIZE: z.coerce
    .number()
    .int()
    .min(1)
    .max(2048)
    .default(64)
    .describe('chunks per embeddings request'),
  EMBEDDINGS_TIMEOUT_MS: z.coerce
    .number()
    .int()
    .min(100)
    .max(600_000)
    .default(30_000)
    .describe(
      'deadline of one embeddings request (the client retries twice more on 408/409/429/5xx)',
    ),
  KNOWLEDGE_PGVECTOR: z
    .enum(['auto', 'off'])
    .default('auto')
    .describe(
      '`auto`: store vectors (knowledge-base chunks and memories) in pgvector `vector` columns where the extension is installed or can be created; `off`: keep `real[]` and compare in plain SQL',
    ),
  KNOWLEDGE_REEMBED: z
    .enum(['auto', 'off'])
    .default('auto')
    .describe(
      '`auto`: when a worker starts with embeddings configured, it queues the re-ingestion of every ready document without vectors of `EMBEDDINGS_MODEL` (and `EMBEDDINGS_DIMENSIONS`), e.g. after the model changed or embeddings were configured later; `off`: those documents stay searchable by their words only',
    ),
  AGENT_MAX_STEPS: z.coerce
    .number()
    .int()
    .min(1)
    .max(200)
    .default(25)
    .describe(
      'model requests per agent run (1-200) before it ends with `max_steps_exceeded`; every kind of run (invoke, scheduled, chat)',
    ),
  AGENT_LLM_TIMEOUT_MS: z.coerce
    .number()
    .int()
    .min(1)
    .default(60_000)
    .describe('time to the response headers of one model request, per attempt'),
  AGENT_LLM_MAX_RETRIES: z.coerce
    .number()
    .int()
    .min(0)
    .max(5)
    .default(1)
    .describe('retries (0-5) of a model request on 408/409/429/5xx and connection errors'),
  AGENT_LLM_IDLE_TIMEOUT_MS: z.coerce
    .number()
    .int()
    .min(1)
    .default(60_000)
    .describe('longest silence inside a streamed model answer before `llm_timeout`'),
  AGENT_KEEPALIVE_MS: z.coerce
    .number()
    .int()
    .min(100)
    .default(15_000)
    .describe('an SSE `: keepalive` comment after this long without a write (api)'),
  AGENT_SSE_STALL_TIMEOUT_MS: z.coerce
    .number()
    .int()
    .min(100)
    .default(30_000)
    .describe(
      'an SSE stream whose client took no bytes for this long (it stopped reading) is ended; the client resumes with Last-Event-ID (api)',
    ),
  AGENT_DISCONNECT_GRACE_MS: z.coerce
    .number()
    .int()
    .min(0)
    .default(10_000)
    .describe(
      'how long a run outlives its last SSE client before it is aborted (0: at once); a run waiting for approvals then suspends instead',
    ),
  AGENT_SUSPEND_AFTER_MS: z
    .preprocess(
      (v) => (typeof v === 'string' && v.trim() === '' ? undefined : v),
      z.coerce.number().int().min(0).optional(),
    )
    .describe(
      "a run waiting this long for approvals suspends even while its client listens: the stream ends with the `suspended` event and the run is stored until a decision or the timeout resumes it (see [`hitl.md`](hitl.md#suspended-runs)); set it only when your clients know `suspended`. Unset: a listening client's stream stays open until the decision or the timeout, as before (runs whose client left, background runs and runs on a draining replica suspend in any case)",
    ),
  AGENT_TAKEOVER: booleanStringDefaultTrue.describe(
    'a run whose replica died (SIGKILL, OOM, lost node; its session lease expired) is taken over by a worker from its last stored step: completed model turns and tool calls are not repeated, a call in flight runs again only when its tool is safe to repeat and is otherwise reported to the model as interrupted; a worker that shuts down hands its runs still going after the drain over the same way. `false`: such runs end with `run_lost`, and a draining worker ends its runs with `server_shutdown`, as before',
  ),
  AGENT_TAKEOVER_CHECK_MS: z.coerce
    .number()
    .int()
    .min(100)
    .default(10_000)
    .describe(
      'how often each worker looks for runs whose replica died (their lease expired) to take them over (with `AGENT_TAKEOVER`)',
    ),
  AGENT_RUN_JOBS_CONCURRENCY: z.coerce
    .number()
    .int()
    .min(1)
    .max(1_000)
    .default(50)
    .describe(
      'agent runs one worker executes at once from the `agent-runs` queue: background runs, suspended runs resumed, runs taken over (worker)',
    ),
  AGENT_SESSION_LEASE_MS: z.coerce
    .number()
    .int()
    .min(300)
    .default(30_000)
    .describe(
      "session lease lifetime, renewed every third of it while the run lives; a crashed replica's session frees after about this long",
    ),
  AGENT_MAX_PARALLEL_TOOLS: z.coerce
    .number()
    .int()
    .min(1)
    .max(64)
    .default(8)
    .describe(
      "tool calls of one model turn executing at the same time (1-64); each node's `max_concurrent_tasks` also bounds a run's calls to that node; `1` runs the calls one after the other in the model's order, as before; every kind of run",
    ),
  AGENT_MAX_TOOLS: z.coerce
    .number()
    .int()
    .min(8)
    .max(1_024)
    .default(128)
    .describe(
      "tools one run offers the model in all, built-in ones included (OpenAI's API accepts 128 per request); over it, the user's device tools are left out first (the last devices' last tools), then other sources' from the last source, and the run starts with a `tools_limited` notice (see [`agent.md`](agent.md#tools-of-a-run))",
    ),
  AGENT_MAX_TOOL_NODES: z.coerce
    .number()
    .int()
    .min(1)
    .max(1_024)
    .default(32)
    .describe(
      "a user's devices (nodes) whose tools one run offers, the longest connected first; the others' tools are not offered (`tools_limited` notice)",
    ),
};
