export { mountApi } from './api-role.js';
