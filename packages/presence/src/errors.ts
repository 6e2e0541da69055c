/** The presence store was closed; every method rejects with this afterwards. */
export class PresenceClosedError extends Error {
  readonly code = 'PRESENCE_CLOSED';
  constructor() {
    super('the presence store is closed');
    this.name = 'PresenceClosedError';
  }
}
