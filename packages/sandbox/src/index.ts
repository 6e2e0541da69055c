export * from './sandbox.js';
