/** `target` with its host and port replaced by a local proxy's, credentials and path kept. */
export function proxiedUrl(target: URL, port: number): string {
  const url = new URL(target);
  url.hostname = '127.0.0.1';
  url.port = String(port);
  return url.toString();
}
