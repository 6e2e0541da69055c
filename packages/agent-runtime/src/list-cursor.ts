/** Raised for a `cursor` that no page of the list handed out (or that was altered). */
export class InvalidCursorError extends Error {
  constructor() {
    super('cursor is not one a page of this list returned');
    this.name = 'InvalidCursorError';
  }
}

/** A timestamp as the lists write it (`2026-01-01T10:00:00.123456Z`), no more. */
const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;

/**
 * The position after a page of sessions: the last one's activity time, written by the database
 * with its microseconds (a JavaScript Date keeps milliseconds, which would skip or repeat
 * sessions active in the same millisecond at a page boundary), and its id.
 */
export interface SessionPosition {
  readonly updatedAt: string;
  readonly sessionId: string;
}

/** Opaque to clients: base64url of `["s", updatedAt, sessionId]`. */
export function encodeSessionCursor(position: SessionPosition): string {
  return encode(['s', position.updatedAt, position.sessionId]);
}

/** @throws InvalidCursorError */
export function decodeSessionCursor(cursor: string): SessionPosition {
  const value = decode(cursor);
  if (
    value.length !== 3 ||
    value[0] !== 's' ||
    typeof value[1] !== 'string' ||
    typeof value[2] !== 'string' ||
    !TIMESTAMP.test(value[1])
  ) {
    throw new InvalidCursorError();
  }
  return { updatedAt: value[1], sessionId: value[2] };
}

/** The position after a page of messages: the last one's `seq`. */
export function encodeMessageCursor(seq: number): string {
  return encode(['m', seq]);
}

/** @throws InvalidCursorError */
export function decodeMessageCursor(cursor: string): number {
  const value = decode(cursor);
  if (value.length !== 2 || value[0] !== 'm' || !Number.isSafeInteger(value[1])) {
    throw new InvalidCursorError();
  }
  return value[1] as number;
}

const encode = (value: unknown[]): string =>
  Buffer.from(JSON.stringify(value)).toString('base64url');

function decode(cursor: string): unknown[] {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw new InvalidCursorError();
  }
  if (!Array.isArray(value)) throw new InvalidCursorError();
  return value;
}
