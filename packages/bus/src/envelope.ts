/**
 * The wire format: every payload is one JSON envelope. Encoded and validated here, once, for
 * every transport, so the in-process and Redis buses agree on what is malformed.
 */

/** Where a payload travels; transports map it to their own address (a Redis channel, a hub key). */
export type Topic =
  | { readonly kind: 'pub'; readonly name: string }
  | { readonly kind: 'req'; readonly name: string }
  | { readonly kind: 'inbox'; readonly name: string };

/** W3C trace-context headers as strings, e.g. `{ traceparent: '00-…-…-01' }`. */
export type TraceCarrier = Readonly<Record<string, string>>;

export type Envelope =
  | { readonly v: 1; readonly k: 'msg'; readonly from: string; readonly body?: unknown }
  | {
      readonly v: 1;
      readonly k: 'req';
      readonly from: string;
      readonly id: string;
      readonly body?: unknown;
      /**
       * The caller's W3C trace context (`traceparent`, `tracestate`), when it traces. Optional:
       * envelopes without it (older senders) stay valid, and a malformed one is ignored.
       */
      readonly tc?: TraceCarrier;
      /**
       * 1: the caller asks again for its reply (an `again` envelope) when its inbox may have
       * missed it, so the responder may publish the reply without waiting for the receiver
       * count. Absent (older callers): the reply is published counted and repeated as before.
       */
      readonly ag?: 1;
    }
  | {
      readonly v: 1;
      /** A caller whose inbox resubscribed asks its responders for these requests' replies again. */
      readonly k: 'again';
      readonly from: string;
      readonly ids: readonly string[];
    }
  | {
      readonly v: 1;
      readonly k: 'res';
      readonly from: string;
      readonly id: string;
      readonly body?: unknown;
    }
  | {
      readonly v: 1;
      readonly k: 'err';
      readonly from: string;
      readonly id: string;
      readonly code: string;
      readonly message: string;
    };

/** The envelope kinds allowed on each topic kind; anything else is malformed. */
const ALLOWED: Record<Topic['kind'], readonly Envelope['k'][]> = {
  pub: ['msg'],
  req: ['req', 'again'],
  inbox: ['res', 'err'],
};

/** A stable string key for a topic, e.g. `req:tools`. */
export function topicKey(topic: Topic): string {
  return `${topic.kind}:${topic.name}`;
}

/**
 * A message body that is already JSON text, sent as it is: the envelope embeds the text instead
 * of serialising a value, and the receiver gets what `JSON.parse(text)` returns. For a payload
 * that arrived as JSON text and is passed on whole (a node's tool-call response), so it is not
 * serialised a second time.
 *
 * The sender vouches for the text: exactly one JSON value that `JSON.parse` accepted in this
 * process, decoded from UTF-8 (so without unpaired surrogates). The bus does not check it (that
 * would cost what it saves); text that is not JSON would make the whole envelope malformed, and
 * text that closes the value early could add fields to the envelope.
 */
export class RawJson {
  constructor(readonly text: string) {}

  /** Only a whole message body is sent as it is: nested in a value, it would be `{"text":…}`. */
  toJSON(): never {
    throw new TypeError('RawJson is sent as it is only as a whole message body or reply');
  }
}

/** @throws TypeError when the body is not JSON-serializable (cycles, BigInt). */
export function encodeEnvelope(envelope: Envelope): string {
  const { body } = envelope as { body?: unknown };
  if (!(body instanceof RawJson)) return JSON.stringify(envelope);
  // The envelope without its body always ends with `}` (it has `v`, `k` and `from`).
  const head = JSON.stringify({ ...envelope, body: undefined });
  return `${head.slice(0, -1)},"body":${body.text}}`;
}

/** @returns the envelope, or a string saying why the payload is malformed. */
export function decodeEnvelope(topic: Topic, payload: string): Envelope | string {
  let value: unknown;
  try {
    value = JSON.parse(payload);
  } catch {
    return 'not JSON';
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return 'not an object';
  const e = value as Record<string, unknown>;
  if (e.v !== 1) return 'unknown version';
  if (typeof e.from !== 'string' || e.from === '') return 'missing sender';
  if (!ALLOWED[topic.kind].includes(e.k as Envelope['k'])) return `kind ${String(e.k)} not allowed`;
  if (e.k === 'again') {
    const { ids } = e;
    if (!Array.isArray(ids) || !ids.every((id) => typeof id === 'string')) return 'ids not strings';
    return e as unknown as Envelope;
  }
  if (e.k !== 'msg' && (typeof e.id !== 'string' || e.id === '')) return 'missing correlation id';
  if (e.k === 'err' && (typeof e.code !== 'string' || typeof e.message !== 'string')) {
    return 'error reply without code and message';
  }
  // A trace context is a hint, not part of the contract: one that is not strings is dropped.
  if (e.tc !== undefined && !isCarrier(e.tc)) delete e.tc;
  if (e.ag !== undefined && e.ag !== 1) delete e.ag;
  return e as unknown as Envelope;
}

function isCarrier(value: unknown): value is TraceCarrier {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  return Object.values(value).every((v) => typeof v === 'string');
}
