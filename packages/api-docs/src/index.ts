/**
 * The service's API documents, built from the protocol schemas the routes and the gateway
 * validate with: OpenAPI 3.1 for HTTP (from the routes a role registered with their
 * documentation, `HttpServer.documented()`), AsyncAPI 3.0 for the WebSocket protocol, and a page
 * that shows both without loading anything from outside the service.
 */
export { HTTP_TAGS } from './http-tags.js';
export { buildOpenApiDocument, commonErrors } from './openapi.js';
export { buildAsyncApiDocument, SERVER_MESSAGE_CHANNELS, WS_CLOSE_MEANINGS } from './asyncapi.js';
export { NAMED_SCHEMAS } from './json-schema.js';
export { renderDocsPage, type DocsPage } from './docs-page.js';
