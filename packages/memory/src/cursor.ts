/** Raised for a `cursor` that no list page handed out (or that was altered). */
export class InvalidCursorError extends Error {
  constructor() {
    super('cursor is not one a page of this list returned');
    this.name = 'InvalidCursorError';
  }
}

/** The position after a page: the last memory's creation time (UTC, microseconds) and id. */
export interface ListPosition {
  readonly createdAt: string;
  readonly id: string;
}

/** A timestamp as the list writes it (`2026-01-01T10:00:00.123456Z`), no more. */
const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;

/**
 * Opaque to clients: base64url of `[createdAt, id]`. The creation time is written by the
 * database, microseconds included (a JavaScript Date keeps milliseconds, which would skip or
 * repeat memories created in the same millisecond at a page boundary).
 */
export function encodeCursor(position: ListPosition): string {
  return Buffer.from(JSON.stringify([position.createdAt, position.id])).toString('base64url');
}

/** @throws InvalidCursorError */
export function decodeCursor(cursor: string): ListPosition {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw new InvalidCursorError();
  }
  if (
    !Array.isArray(value) ||
    value.length !== 2 ||
    typeof value[0] !== 'string' ||
    typeof value[1] !== 'string' ||
    !TIMESTAMP.test(value[0])
  ) {
    throw new InvalidCursorError();
  }
  return { createdAt: value[0], id: value[1] };
}
