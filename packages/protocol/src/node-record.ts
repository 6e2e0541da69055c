import { z } from 'zod';
import { NodeInfo } from './nodes.js';
import { NodeToolDescriptor } from './ws-messages.js';

/**
 * A node as its gateway replica keeps it in presence: the spec 2.1 fields of
 * `GET /node/devices` (register defaults until the node registers), plus the tool descriptors it
 * registered with, which the agent offers as tools. Written by the gateway, read by the api's
 * node listing and by the node tool caller, on any replica.
 */
export const NodeRecord = NodeInfo.extend({
  tools: z.array(NodeToolDescriptor).optional(),
});
export type NodeRecord = z.infer<typeof NodeRecord>;
