import { docsPageScript } from './docs-page-script.js';
import { API_TITLE } from './version.js';

const STYLE = `
body { font: 15px/1.5 system-ui, sans-serif; margin: 0 auto; max-width: 1100px; padding: 1rem 2rem; color: #1d2330; }
header nav a { margin-right: 1rem; }
h2 { border-bottom: 2px solid #d8dde6; padding-bottom: .3rem; margin-top: 2.5rem; }
h3 { margin: 2rem 0 .3rem; }
h4 { margin: 1rem 0 .3rem; font-size: .95rem; }
code { font: 13px/1.4 ui-monospace, monospace; background: #f1f3f7; padding: 0 .25rem; border-radius: 3px; }
details.op { border: 1px solid #d8dde6; border-radius: 6px; margin: .4rem 0; padding: .3rem .7rem; }
details.op > summary { cursor: pointer; }
details.op[open] { background: #fbfcfd; }
.method { display: inline-block; min-width: 4.2rem; font: 600 12px ui-monospace, monospace; color: #fff; background: #5b6475; border-radius: 3px; padding: .1rem .3rem; margin-right: .5rem; text-align: center; }
.method.get { background: #2f7d4f; } .method.post { background: #2d5ea8; } .method.delete { background: #a83232; }
.method.put, .method.patch { background: #9a6a12; }
.summary { margin-left: .7rem; color: #4a5263; }
.schema { margin-left: .8rem; }
details.ref > summary { cursor: pointer; }
table { border-collapse: collapse; margin: .3rem 0; }
th, td { border: 1px solid #e2e6ee; padding: .2rem .5rem; text-align: left; vertical-align: top; }
.type { font: 13px ui-monospace, monospace; color: #6b3fa0; }
.req { color: #a83232; font-size: .8rem; }
.notes { color: #5b6475; font-size: .85rem; }
.response { margin: .4rem 0; }
.md p { margin: .3rem 0; }
.error { color: #a83232; }
`;

/** The `/docs` page and its inline parts, which the page's Content-Security-Policy allows by hash. */
export interface DocsPage {
  readonly html: string;
  /** The text of its one inline `<script>`, exactly as in `html`. */
  readonly script: string;
  /** The text of its one inline `<style>`, exactly as in `html`. */
  readonly style: string;
}

/**
 * The `/docs` page: the two documents rendered in the browser by a script of this package,
 * inline, so the page loads nothing but `openapi.json` and `asyncapi.json` from the service
 * (no CDN: many deployments reach nothing outside).
 */
export function renderDocsPage(): DocsPage {
  const script = `(${String(docsPageScript)})();`;
  const html = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,">
<title>${API_TITLE}: API</title>
<style>${STYLE}</style>
</head>
<body>
<header>
<h1>${API_TITLE}</h1>
<nav><a href="#http">HTTP API</a><a href="#ws">WebSocket protocol</a><a href="#http-schemas">HTTP schemas</a><a href="#ws-schemas">WebSocket schemas</a><a href="openapi.json">openapi.json</a><a href="asyncapi.json">asyncapi.json</a></nav>
</header>
<main id="app"><p>Loading the API documents…</p></main>
<script>${script}</script>
</body>
</html>
`;
  return { html, script, style: STYLE };
}
