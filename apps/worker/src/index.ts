export { mountWorker } from './worker-role.js';
