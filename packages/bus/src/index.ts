export type {
  Bus,
  BusHandler,
  BusMessageMeta,
  RequestOptions,
  Responder,
  Subscription,
} from './bus.js';
export { BaseBus, randomNodeId, type BusOptions } from './base-bus.js';
export {
  BusClosedError,
  BusError,
  BusHandlerError,
  BusMalformedMessageError,
  BusNoResponderError,
  BusRemoteError,
  BusTimeoutError,
} from './errors.js';
export { RawJson, type TraceCarrier, type Topic } from './envelope.js';
export {
  createMemoryBus,
  createMemoryHub,
  MemoryHub,
  type MemoryBusOptions,
} from './memory-bus.js';
export { createRedisBus, type RedisBusConnections, type RedisBusOptions } from './redis-bus.js';
