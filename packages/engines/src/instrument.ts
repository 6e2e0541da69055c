import { performance } from 'node:perf_hooks';
import {
  BusNoResponderError,
  BusRemoteError,
  BusTimeoutError,
  type Bus,
  type BusHandler,
  type Responder,
} from '@agent-backend/bus';
import type { JobHandler, JobQueue } from '@agent-backend/jobs';
import type { BusMetrics, BusRequestOutcome, JobMetrics } from '@agent-backend/metrics';

/**
 * The bus with its traffic counted: messages published and handed to subscribers, requests
 * sent and answered, request latency by outcome. Channels are not labels (they name users);
 * the adapters stay unaware of metrics.
 */
export function instrumentBus(bus: Bus, metrics: BusMetrics): Bus {
  const published = metrics.published('message');
  const requested = metrics.published('request');
  const replied = metrics.published('reply');
  const received = metrics.received('message');
  const receivedRequests = metrics.received('request');
  const receivedReplies = metrics.received('reply');
  return {
    get nodeId() {
      return bus.nodeId;
    },
    publish(channel, message) {
      published.inc();
      return bus.publish(channel, message);
    },
    subscribe(channel, handler) {
      const counted: BusHandler = (message, meta) => {
        received.inc();
        return handler(message, meta);
      };
      return bus.subscribe(channel, counted);
    },
    request(channel, message, options) {
      requested.inc();
      const started = performance.now();
      // `then` rather than an async wrapper: one promise less per request on a hot path.
      return bus.request(channel, message, options).then(
        (reply) => {
          receivedReplies.inc();
          metrics.request('ok', (performance.now() - started) / 1000);
          return reply;
        },
        (error: unknown) => {
          const outcome = requestOutcome(error, options.signal);
          if (outcome === 'remote_error') receivedReplies.inc();
          metrics.request(outcome, (performance.now() - started) / 1000);
          throw error;
        },
      );
    },
    respond(channel, responder) {
      const counted: Responder = async (message, meta) => {
        receivedRequests.inc();
        try {
          return await responder(message, meta);
        } finally {
          replied.inc();
        }
      };
      return bus.respond(channel, counted);
    },
    close: () => bus.close(),
  };
}

function requestOutcome(error: unknown, signal: AbortSignal | undefined): BusRequestOutcome {
  if (error instanceof BusRemoteError) return 'remote_error';
  if (error instanceof BusNoResponderError) return 'no_responder';
  if (error instanceof BusTimeoutError) return 'timeout';
  if (signal?.aborted) return 'aborted';
  return 'error';
}

/**
 * The job queue with jobs counted: enqueued per queue, and each attempt's outcome and duration.
 * Queue names are the service's own constants, a bounded set.
 */
export function instrumentJobQueue(jobs: JobQueue, metrics: JobMetrics): JobQueue {
  return {
    add(queue, data, options) {
      metrics.added(queue);
      return jobs.add(queue, data, options);
    },
    process(queue, handler, options) {
      const counted: JobHandler = async (data, context) => {
        const started = performance.now();
        try {
          const result = await handler(data, context);
          metrics.finished(queue, 'completed', (performance.now() - started) / 1000);
          return result;
        } catch (error) {
          metrics.finished(queue, 'failed', (performance.now() - started) / 1000);
          throw error;
        }
      };
      return jobs.process(queue, counted, options);
    },
    pause: (queue) => jobs.pause(queue),
    upsertSchedule: (...args) => jobs.upsertSchedule(...args),
    removeSchedule: (...args) => jobs.removeSchedule(...args),
    removeJobs: (...args) => jobs.removeJobs(...args),
    listSchedules: (...args) => jobs.listSchedules(...args),
    close: () => jobs.close(),
  };
}
