/**
 * Job ids of schedule occurrences, shared by both adapters so a handler sees the same ids.
 * BullMQ refuses custom ids with a `:` unless they have exactly three parts, so the schedule id
 * is percent-encoded and the instant comes last: `once:<scheduleId>:<epoch ms>` (BullMQ's own
 * job schedulers use `repeat:<scheduleId>:<epoch ms>`).
 */
export function occurrenceJobId(kind: 'once' | 'repeat', scheduleId: string, at: number): string {
  return `${kind}:${encodeId(scheduleId)}:${at}`;
}

/** Reads the schedule id and the instant back from an occurrence job id. */
export function parseOccurrenceJobId(
  jobId: string,
): { scheduleId: string; scheduledAt: number } | undefined {
  const parts = jobId.split(':');
  if (parts.length !== 3 || (parts[0] !== 'once' && parts[0] !== 'repeat')) return undefined;
  const scheduledAt = Number(parts[2]);
  if (!Number.isSafeInteger(scheduledAt)) return undefined;
  return { scheduleId: decodeURIComponent(parts[1] ?? ''), scheduledAt };
}

/** A caller's id made safe for BullMQ: no `:` and never an integer. */
export function encodeId(id: string): string {
  if (id.length === 0) throw new Error('ids must not be empty');
  const encoded = id.replace(/[%:]/g, (c) => (c === '%' ? '%25' : '%3A'));
  return /^\d+$/.test(encoded) ? `id-${encoded}` : encoded;
}
