export { controlSocketPath } from './control-socket.js';
