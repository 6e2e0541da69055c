import type { PreparedRun } from './agent-runner.js';
import type { RunResult } from './execute-run.js';

/** What a run said, for callers that want its answer rather than its event stream. */
export interface RunText {
  /** The `message_chunk` contents, joined. */
  readonly text: string;
  readonly result: RunResult;
  /** The run's `error` event, when it sent one. */
  readonly error?: { readonly code: string; readonly message: string };
}

/**
 * Executes a prepared run and collects its answer: the entry points without a stream of their
 * own (scheduled tasks, chat replies) need the text, not the events. Never rejects, as
 * {@link PreparedRun.execute} does not.
 */
export async function runToText(run: PreparedRun, signal: AbortSignal): Promise<RunText> {
  let text = '';
  let error: RunText['error'];
  const result = await run.execute((event) => {
    if (event.type === 'message_chunk') text += event.content;
    else if (event.type === 'error') error = { code: event.code, message: event.message };
  }, signal);
  return error ? { text, result, error } : { text, result };
}
