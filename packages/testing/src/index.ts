export * from './isolation.js';
export * from './service-process.js';
