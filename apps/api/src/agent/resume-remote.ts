import { isSuspendedData, remoteAttachKey } from '@agent-backend/agent';
import { AgentRunError, RUN_ERROR_CODES } from '@agent-backend/agent-runtime';
import type { EphemeralStore } from '@agent-backend/ephemeral';
import { formatAgentStreamEventId } from '@agent-backend/protocol';
import type { RunLog } from '@agent-backend/run-log';
import type { SseStream } from './sse-stream.js';

/** Where a resumed stream reads from and how it tells a dead run from a quiet one. */
export interface ResumeRemoteOptions {
  readonly runLog: RunLog;
  readonly ephemeral: EphemeralStore;
  readonly runId: string;
  readonly sessionId: string;
  readonly afterSeq: number;
  /** Marker refresh period; the marker lives three of them. */
  readonly keepaliveMs: number;
  /**
   * Whether the run is still alive somewhere (its session lease names it, or it is suspended,
   * or a takeover will continue it).
   */
  isRunAlive(): Promise<boolean>;
}

/**
 * Sends a run executing on another replica to one client: the events after `afterSeq` from
 * the run log, then the live ones as they are appended, until the run's last event. Meanwhile a
 * marker in the ephemeral store tells the replica running it that a client is attached.
 *
 * A `suspended` event ends the stream (after it is sent) unless the run resumed since (its
 * events follow); a client that joins after it waits for the run to resume. When the log stays silent for a while the run is checked: if its
 * holder died and nobody will take it over the client gets a `run_lost` error event instead of
 * waiting forever.
 */
export async function streamRemoteRun(
  options: ResumeRemoteOptions,
  stream: SseStream,
): Promise<void> {
  const { runLog, ephemeral, runId } = options;
  const markerTtl = options.keepaliveMs * 3;
  const mark = () =>
    ephemeral.set(remoteAttachKey(runId), '1', { ttlMs: markerTtl }).catch(() => false);
  await mark();
  const refresh = setInterval(() => void mark(), options.keepaliveMs);
  refresh.unref();
  let last = options.afterSeq;
  try {
    for (;;) {
      let ended = false;
      for await (const entry of runLog.read(runId, {
        afterSeq: last,
        follow: true,
        idleTimeoutMs: markerTtl,
        signal: stream.signal,
      })) {
        await stream.send(formatAgentStreamEventId(runId, entry.seq), entry.data);
        last = entry.seq;
        if (entry.final) ended = true;
        // A suspension ends the stream unless the run already resumed (more events follow).
        const resumed = async () => ((await runLog.info(runId))?.lastSeq ?? 0) > entry.seq;
        if (isSuspendedData(entry.data) && !(await resumed())) {
          ended = true;
          break;
        }
      }
      if (ended || stream.closed) return;
      if (await options.isRunAlive()) continue;
      const lost = new AgentRunError('run_lost', RUN_ERROR_CODES.run_lost);
      await stream.send(
        formatAgentStreamEventId(runId, last + 1),
        JSON.stringify({ type: 'error', code: lost.code, message: lost.message }),
      );
      return;
    }
  } finally {
    // The marker is left to expire rather than deleted: another replica's client may share it.
    clearInterval(refresh);
    stream.end();
  }
}
