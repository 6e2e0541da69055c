/**
 * Errors a bus caller can tell apart by class or by stable `code`, so callers decide between
 * "retry elsewhere" (no responder), "give up" (timeout) and "the other side refused" (remote).
 */
export class BusError extends Error {
  constructor(
    readonly code: string,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** The deadline passed without a reply. The request may or may not have been handled. */
export class BusTimeoutError extends BusError {
  constructor(
    readonly channel: string,
    readonly timeoutMs: number,
  ) {
    super('BUS_TIMEOUT', `no reply on "${channel}" within ${timeoutMs} ms`);
  }
}

/** No node responds on the channel: the request reached nobody, so it was not handled. */
export class BusNoResponderError extends BusError {
  constructor(readonly channel: string) {
    super('BUS_NO_RESPONDER', `no responder on "${channel}"`);
  }
}

/**
 * The responder threw. `code` is the thrown error's string `code` property (or
 * `REMOTE_ERROR`), `message` its message, so stable codes survive the hop between processes.
 */
export class BusRemoteError extends BusError {
  constructor(
    readonly channel: string,
    code: string,
    message: string,
    /** `nodeId` of the responder. */
    readonly from: string,
  ) {
    super(code, message);
  }
}

/** The bus was closed: before the call, or while the request was waiting. */
export class BusClosedError extends BusError {
  constructor() {
    super('BUS_CLOSED', 'the bus is closed');
  }
}

/** A payload on the wire was not a valid envelope; it was dropped. Reported to `onError`. */
export class BusMalformedMessageError extends BusError {
  constructor(
    /** The transport topic it arrived on, e.g. `pub:<channel>`. */
    readonly topic: string,
    reason: string,
    /** The first 200 characters of the payload. */
    readonly payload: string,
  ) {
    super('BUS_MALFORMED_MESSAGE', `dropped malformed message on ${topic}: ${reason}`);
  }
}

/** A subscriber or responder threw outside of a request (reported to `onError`, not rethrown). */
export class BusHandlerError extends BusError {
  constructor(
    readonly channel: string,
    cause: unknown,
  ) {
    super('BUS_HANDLER_FAILED', `a handler on "${channel}" threw`, { cause });
  }
}
