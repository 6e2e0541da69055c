import type { HostedRun } from '@agent-backend/agent';
import { formatAgentStreamEventId } from '@agent-backend/protocol';
import type { SseStream } from './sse-stream.js';

/**
 * Sends a run executing on this replica to one client, from the event after `afterSeq` until
 * the event that ends its stream (`done`, `error`, `suspended`; then ends the response) or until
 * the client goes away. Events go out once they are in the run log, so a run taken over after
 * this replica died never reuses an id the client has seen. The client counts as attached
 * meanwhile, which keeps the run from being aborted or suspended for want of a client.
 *
 * `suspended` is not sent when the run suspended for a drain and `showSuspended` is false (the
 * operator did not set `AGENT_SUSPEND_AFTER_MS`: clients may know only the spec's events): the
 * stream then ends as a drain ends it, and the client rejoins by run id.
 */
export async function streamLocalRun(
  run: HostedRun,
  stream: SseStream,
  afterSeq: number,
  showSuspended: boolean,
): Promise<void> {
  run.attach();
  try {
    let next = Math.max(afterSeq, run.firstSeq);
    for (;;) {
      while (next < run.sendableSeq) {
        const event = run.events[next - run.firstSeq]!;
        if (event.ends && !event.final && !showSuspended && run.suspendedBy === 'drain') return;
        await stream.send(formatAgentStreamEventId(run.runId, event.seq), event.data);
        next++;
        if (event.ends) return;
      }
      if (stream.closed || (run.isDone && next >= run.sendableSeq)) return;
      await run.changed(stream.signal);
    }
  } finally {
    run.detach();
    stream.end();
  }
}
