import { redisTopologies } from '@agent-backend/testing';
import { afterAll, beforeAll } from 'vitest';
import { describeSplitRoles } from './split-roles-suite.js';

/** The split roles on a Redis Cluster: hash-tagged presence and queues, sharded pub/sub. */
const topologies = redisTopologies({ beforeAll, afterAll }, ['cluster']);

describeSplitRoles(
  'a Redis Cluster',
  () => ({ REDIS_MODE: 'cluster', REDIS_CLUSTER_NODES: topologies.cluster.nodes.join(',') }),
  () => topologies.target('cluster'),
);
