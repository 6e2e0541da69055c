export { mountGateway, REPLICA_HEARTBEAT_MS } from './gateway-role.js';
