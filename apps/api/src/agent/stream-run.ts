import { formatAgentStreamEventId } from '@agent-backend/protocol';
import type { LocalRun } from './local-run.js';
import type { SseStream } from './sse-stream.js';

/**
 * Sends a run executing on this replica to one client, from the event after `afterSeq` until
 * the run's last event (then ends the response) or until the client goes away. The client
 * counts as attached meanwhile, which keeps the run from being aborted.
 */
export async function streamLocalRun(
  run: LocalRun,
  stream: SseStream,
  afterSeq: number,
): Promise<void> {
  run.attach();
  try {
    let next = afterSeq;
    for (;;) {
      while (next < run.events.length) {
        const event = run.events[next]!;
        await stream.send(formatAgentStreamEventId(run.runId, event.seq), event.data);
        next++;
        if (event.final) return;
      }
      if (stream.closed || run.isDone) return;
      await run.changed(stream.signal);
    }
  } finally {
    run.detach();
    stream.end();
  }
}
