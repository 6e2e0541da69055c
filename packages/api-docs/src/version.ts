import { createRequire } from 'node:module';

/** Both documents' title. */
export const API_TITLE = 'Agent backend service';

/** The documents' version: this package's, which is released with the service. */
export const API_VERSION: string = (
  createRequire(import.meta.url)('../package.json') as { version: string }
).version;
