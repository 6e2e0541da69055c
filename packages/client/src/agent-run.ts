import type { AgentEvent } from '@agent-backend/protocol';
import { ApiError } from './errors.js';
import { sleep } from './retry.js';
import { parseSse } from './sse.js';

/** How an interrupted agent stream is resumed (`ClientOptions.resume`). */
export interface ResumeOptions {
  /** Reconnections in a row without an event in between. @default 5 */
  readonly maxAttempts?: number;
  /** Wait before the n-th attempt: `n × delayMs`. @default 500 */
  readonly delayMs?: number;
}

/** The stream of a run ended without `done` or `error`, and could not be resumed. */
export class StreamInterruptedError extends Error {
  constructor(
    message: string,
    readonly lastEventId: string | undefined,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'StreamInterruptedError';
  }
}

/**
 * A run's events as an async iterable (`for await (const event of run)`), resumed after a
 * dropped connection. `sessionId`, `runId` and `lastEventId` are known once the events carrying
 * them arrived.
 */
export class AgentRun implements AsyncIterable<AgentEvent> {
  sessionId: string | undefined;
  runId: string | undefined;
  lastEventId: string | undefined;
  private started = false;

  constructor(
    private readonly open: (lastEventId?: string, sessionId?: string) => Promise<Response>,
    private readonly resume: ResumeOptions | undefined,
    private readonly signal: AbortSignal | undefined,
  ) {}

  /** Every event until the run ends. */
  async events(): Promise<AgentEvent[]> {
    const all: AgentEvent[] = [];
    for await (const event of this) all.push(event);
    return all;
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<AgentEvent> {
    if (this.started) throw new Error('a run is iterated once');
    this.started = true;
    const maxAttempts = this.resume?.maxAttempts ?? 5;
    const delayMs = this.resume?.delayMs ?? 500;
    let response = await this.open();
    let attempts = 0;
    for (;;) {
      let failure: unknown;
      try {
        for await (const message of parseSse(response.body!)) {
          if (message.id) this.lastEventId = message.id;
          const event = JSON.parse(message.data) as AgentEvent;
          if (event.type === 'session') {
            this.sessionId = event.session_id;
            this.runId = event.run_id;
          }
          attempts = 0;
          yield event;
          if (event.type === 'done' || event.type === 'error') return;
        }
      } catch (error) {
        if (this.signal?.aborted) throw error;
        failure = error;
      }
      // The connection ended before the run did: resume where it stopped.
      if (!this.sessionId || attempts >= maxAttempts) {
        throw new StreamInterruptedError(
          this.sessionId
            ? `the stream of session ${this.sessionId} was interrupted ${attempts} times in a row`
            : 'the stream ended before the run was known',
          this.lastEventId,
          { cause: failure },
        );
      }
      attempts += 1;
      await sleep(attempts * delayMs, this.signal);
      try {
        response = await this.open(this.lastEventId, this.sessionId);
      } catch (error) {
        // A replica restarting answers 503 or not at all: try again. A 4xx (the stream is no
        // longer available, the session is not the user's) is final.
        if (this.signal?.aborted || (error instanceof ApiError && error.status < 500)) throw error;
        response = new Response('');
      }
    }
  }
}
