export { mountGateway } from './gateway-role.js';
