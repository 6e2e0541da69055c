/** Rules both presence adapters share, so they agree on TTLs, JSON and ordering. */
import { PRESENCE_DEFAULTS, type PresenceEntry, type PresenceOptions } from './presence.js';

export interface Ttls {
  readonly nodeTtlMs: number;
  readonly replicaTtlMs: number;
}

/** Applies the defaults and rejects TTLs that are not positive integers. */
export function resolveTtls(options: PresenceOptions): Ttls {
  const nodeTtlMs = options.nodeTtlMs ?? PRESENCE_DEFAULTS.nodeTtlMs;
  const replicaTtlMs = options.replicaTtlMs ?? PRESENCE_DEFAULTS.replicaTtlMs;
  for (const [name, value] of Object.entries({ nodeTtlMs, replicaTtlMs })) {
    if (!Number.isSafeInteger(value) || value <= 0) {
      throw new RangeError(`${name} must be a positive integer, got ${value}`);
    }
  }
  return { nodeTtlMs, replicaTtlMs };
}

/** `data` as it will be stored: JSON, merged shallowly with `patch` when one is given. */
export function storedData(data: Record<string, unknown>, patch?: Record<string, unknown>): string {
  return JSON.stringify(patch ? { ...data, ...patch } : data);
}

/** Oldest connection first, ties by node id, so listings are stable across adapters. */
export function byConnection(a: PresenceEntry, b: PresenceEntry): number {
  return a.connectedAt - b.connectedAt || (a.nodeId < b.nodeId ? -1 : a.nodeId > b.nodeId ? 1 : 0);
}

/** Rounds a caller-supplied `connectedAt` to whole ms, the unit both adapters store. */
export function checkConnectedAt(connectedAt: number | undefined): number | undefined {
  if (connectedAt === undefined) return undefined;
  if (!Number.isFinite(connectedAt) || connectedAt < 0) {
    throw new RangeError(`connectedAt must be epoch ms, got ${connectedAt}`);
  }
  return Math.round(connectedAt);
}

/** Ids are non-empty strings in both adapters (the Redis one uses '' to mean "none"). */
export function checkIds(ids: Record<string, unknown>): void {
  for (const [name, value] of Object.entries(ids)) {
    if (typeof value !== 'string' || value === '') {
      throw new TypeError(`${name} must be a non-empty string`);
    }
  }
}
