import { z } from 'zod';

/**
 * The optional order of a node's connections, named by the client in the upgrade URL (an
 * extension of spec 4.3): `instance_id`, random for each client instance (one process, one
 * device), and `connection_seq`, growing with each connection attempt of that instance. With it
 * "the newer connection wins" follows the client's own order instead of the order in which
 * gateways happen to process registrations: a socket the client has given up on, registered
 * late, cannot replace its successor. Connections without it keep the plain rule (the later
 * registration wins).
 */
export const ConnectionOrder = z.object({
  instance: z.string().min(1).max(128),
  seq: z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER),
});
export type ConnectionOrder = z.infer<typeof ConnectionOrder>;

/** The query parameters that carry a {@link ConnectionOrder}. */
export const CONNECTION_ORDER_PARAMS = {
  instance: 'instance_id',
  seq: 'connection_seq',
} as const;

/**
 * The order a URL names, or undefined when it names none or a malformed one (both parameters
 * are needed: an instance id of 1 to 128 characters and a non-negative safe integer), so a
 * client that sends something else is served as one that sends nothing.
 */
export function connectionOrderOf(params: URLSearchParams): ConnectionOrder | undefined {
  const instance = params.get(CONNECTION_ORDER_PARAMS.instance);
  const seqText = params.get(CONNECTION_ORDER_PARAMS.seq);
  if (!instance || instance.length > 128 || !seqText || !/^\d{1,15}$/.test(seqText)) return;
  return { instance, seq: Number(seqText) };
}

/**
 * Whether a connection of order `incoming` must give way to the one of order `held` the node
 * already has: both come from the same client instance and `held` is the later attempt. Any
 * other case (no order on either side, two instances) keeps the plain rule: the incoming one
 * replaces the held one.
 */
export function isStaleConnection(
  incoming: ConnectionOrder | undefined,
  held: ConnectionOrder | undefined,
): boolean {
  return (
    incoming !== undefined &&
    held !== undefined &&
    incoming.instance === held.instance &&
    incoming.seq < held.seq
  );
}
