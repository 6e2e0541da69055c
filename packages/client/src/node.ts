/**
 * Everything of `@agent-backend/client`, plus the gateway's WebSocket clients for Node.js
 * (`ws`, the token in a header): {@link NodeClient} for desktop apps and browser extensions,
 * {@link WebClient} for web clients (docs/clients.md).
 */
export * from './index.js';
export * from '@agent-backend/node-client';
