import { z } from 'zod';
import type { EphemeralStore } from '@agent-backend/ephemeral';
import { ApprovalOutcome, HitlDecision } from '@agent-backend/protocol';

/**
 * How long an approval and its outcome stay readable after it expires, so a late decision is
 * told 409 (closed) rather than 404 (unknown). @default 600_000
 */
export const APPROVAL_RETAIN_MS = 10 * 60_000;

/** A held tool call, as every replica reads it (the decision route runs anywhere). */
export const ApprovalRecord = z.object({
  requestId: z.string(),
  userId: z.string(),
  sessionId: z.string(),
  runId: z.string(),
  toolCallId: z.string(),
  toolName: z.string(),
  args: z.record(z.string(), z.unknown()),
  allowedDecisions: z.array(HitlDecision),
  /** The tool's JSON Schema: edited arguments are checked against it where they are posted. */
  parameters: z.record(z.string(), z.unknown()),
  /** Epoch milliseconds. */
  expiresAt: z.number(),
  /** Epoch milliseconds; absent in records stored before it was (read as `expiresAt - 60 s`). */
  createdAt: z.number().optional(),
});
export type ApprovalRecord = z.infer<typeof ApprovalRecord>;

/** The single outcome of an approval; whoever writes it first (decision, timeout, stop) wins. */
export const ApprovalResolution = z.object({
  outcome: z.union([ApprovalOutcome, z.literal('orphaned')]),
  args: z.record(z.string(), z.unknown()).optional(),
  message: z.string().optional(),
});
export type ApprovalResolution = z.infer<typeof ApprovalResolution>;

const recordKey = (id: string) => `hitl:approval:${id}`;
const resolutionKey = (id: string) => `hitl:resolution:${id}`;

/** Bus channel that wakes the waiting replica; a hint only, the resolution key is the truth. */
export const resolvedChannel = (id: string) => `hitl:resolved:${id}`;

/** How long a waiting replica's mark outlives its last refresh (it refreshes every second). */
export const WAITER_TTL_MS = 3_000;
const waiterKey = (id: string) => `hitl:waiting:${id}`;

/** Every ephemeral key of one approval (record, resolution, waiter mark): erased with its user. */
export const approvalKeys = (id: string): string[] => [
  recordKey(id),
  resolutionKey(id),
  waiterKey(id),
];

/**
 * Approvals in the ephemeral store (shared by every replica). The resolution is written once
 * with `ifAbsent`, which makes "decided", "timed out" and "orphaned" mutually exclusive across
 * replicas without locks: a decision racing the timeout either wins or gets 409.
 */
export class ApprovalStore {
  constructor(private readonly store: EphemeralStore) {}

  async create(record: ApprovalRecord): Promise<void> {
    const ttlMs = Math.max(1, record.expiresAt - Date.now()) + APPROVAL_RETAIN_MS;
    await this.store.set(recordKey(record.requestId), JSON.stringify(record), { ttlMs });
    await this.markWaiting(record.requestId);
  }

  /**
   * The replica holding the stream says it is still waiting; the mark lapses
   * {@link WAITER_TTL_MS} after the last call, so a replica that died is known within seconds
   * (not after the session lease, tens of seconds later).
   */
  async markWaiting(requestId: string): Promise<void> {
    await this.store.set(waiterKey(requestId), '1', { ttlMs: WAITER_TTL_MS });
  }

  /** Whether the replica holding the stream marked itself waiting within {@link WAITER_TTL_MS}. */
  async isWaiting(requestId: string): Promise<boolean> {
    return (await this.store.get(waiterKey(requestId))) !== null;
  }

  async get(requestId: string): Promise<ApprovalRecord | null> {
    return parse(ApprovalRecord, await this.store.get(recordKey(requestId)));
  }

  /** Writes the outcome unless one exists; `false` when another outcome was first. */
  async resolve(record: ApprovalRecord, resolution: ApprovalResolution): Promise<boolean> {
    const ttlMs = Math.max(0, record.expiresAt - Date.now()) + APPROVAL_RETAIN_MS;
    return this.store.set(resolutionKey(record.requestId), JSON.stringify(resolution), {
      ifAbsent: true,
      ttlMs,
    });
  }

  async resolution(requestId: string): Promise<ApprovalResolution | null> {
    return parse(ApprovalResolution, await this.store.get(resolutionKey(requestId)));
  }
}

function parse<T>(schema: z.ZodType<T>, raw: string | null): T | null {
  if (raw === null) return null;
  try {
    const parsed = schema.safeParse(JSON.parse(raw));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}
