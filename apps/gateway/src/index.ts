export { mountGateway, type GatewayRole } from './gateway-role.js';
