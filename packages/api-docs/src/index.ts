/**
 * The service's API documents, built from the protocol schemas the routes and the gateway
 * validate with: OpenAPI 3.1 for HTTP ({@link HTTP_ROUTES}, one entry per route of every role),
 * AsyncAPI 3.0 for the WebSocket protocol, and a page that shows both without loading anything
 * from outside the service.
 */
export { HTTP_ROUTES, HTTP_TAGS } from './http-routes.js';
export type { HttpMethod, ParameterDoc, ResponseDoc, RouteAuth, RouteDoc } from './route-doc.js';
export { buildOpenApiDocument, commonErrors } from './openapi.js';
export { buildAsyncApiDocument, SERVER_MESSAGE_CHANNELS, WS_CLOSE_MEANINGS } from './asyncapi.js';
export { NAMED_SCHEMAS } from './json-schema.js';
export { renderDocsPage, type DocsPage } from './docs-page.js';
