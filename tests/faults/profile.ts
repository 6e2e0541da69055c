/**
 * How hard and how long the fault suite pushes. `ci` (the default) keeps the whole suite within a
 * few minutes on a 2-core machine that also runs other work; `FAULTS_PROFILE=long` is the
 * profile of docs/RELIABILITY.md's longer runs: the brief's 200 tool calls/s and 50 SSE runs,
 * longer outages and traffic before and after them.
 */
export interface FaultProfile {
  readonly name: 'ci' | 'long';
  /** `POST /node/tools/call` requests started per second, spread over both api replicas. */
  readonly toolCallsPerSecond: number;
  /** SSE agent runs kept open during an outage. */
  readonly sseRuns: number;
  /** How long each scripted answer streams (so the runs are open while the fault hits). */
  readonly runStreamMs: number;
  /** Scheduled tasks due the moment the fault hits. */
  readonly tasksAtFault: number;
  /** Chat-platform webhook deliveries during an outage. */
  readonly webhooks: number;
  /** Traffic before the fault, and the length of the outage. */
  readonly warmupMs: number;
  readonly outageMs: number;
  /** The soak (tests/faults/soak.test.ts): how long its mixed load runs, how often it samples. */
  readonly soakMs: number;
  readonly soakSampleMs: number;
}

const PROFILES: Record<FaultProfile['name'], FaultProfile> = {
  ci: {
    name: 'ci',
    toolCallsPerSecond: 50,
    sseRuns: 20,
    runStreamMs: 6_000,
    webhooks: 6,
    tasksAtFault: 3,
    warmupMs: 1_500,
    outageMs: 5_000,
    soakMs: 20_000,
    soakSampleMs: 2_000,
  },
  long: {
    name: 'long',
    toolCallsPerSecond: 200,
    sseRuns: 50,
    runStreamMs: 12_000,
    webhooks: 20,
    tasksAtFault: 10,
    warmupMs: 5_000,
    outageMs: 10_000,
    soakMs: 600_000,
    soakSampleMs: 10_000,
  },
};

export function faultProfile(): FaultProfile {
  const name = process.env.FAULTS_PROFILE ?? 'ci';
  if (name !== 'ci' && name !== 'long') {
    throw new Error(`FAULTS_PROFILE must be "ci" or "long", not ${JSON.stringify(name)}`);
  }
  return PROFILES[name];
}
