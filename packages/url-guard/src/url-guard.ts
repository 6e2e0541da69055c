import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { BlockList, isIP, type LookupFunction } from 'node:net';
import { classifyAddress, PRIVATE_CATEGORIES, type AddressCategory } from './address-ranges.js';
import { UrlRefusedError } from './errors.js';

/** Resolves a host name to every address it has (the OS resolver by default). */
export type Resolve = (hostname: string) => Promise<LookupAddress[]>;

export interface UrlGuardOptions {
  /**
   * Allow loopback, private, link-local and unspecified addresses (development, tests). Cloud
   * metadata, multicast and reserved addresses stay refused even then: no local setup needs them,
   * and the metadata endpoint is the first thing an SSRF goes for.
   * @default false
   */
  allowPrivateNetworks?: boolean;
  /**
   * Addresses or CIDR ranges (`10.1.2.3`, `10.1.0.0/16`, `fd00::/8`) allowed even though they are
   * private: an operator's own internal server. Metadata addresses cannot be allowed this way.
   * @default []
   */
  allowedAddresses?: readonly string[];
  /**
   * Origins (`http://127.0.0.1:11434`, `https://llm.internal`) whose connections skip the address
   * checks, whatever the host resolves to: an operator's own server, allowed by scheme, host and
   * port and nothing wider. Metadata addresses stay refused here too. Entries must be bare
   * origins (no path, query or credentials); anything else throws a `TypeError`.
   * @default []
   */
  allowedOrigins?: readonly string[];
  /** Name resolution; injectable so tests can play DNS tricks without a DNS server. @default OS resolver */
  resolve?: Resolve;
}

/**
 * The checks that apply to connections for one URL: the guard's own, or the looser ones of an
 * allowed origin. `GuardedFetch` takes them per request, so a pooled connection only ever serves
 * requests to the origin it was vetted for.
 */
export interface ConnectionChecks {
  /** True when the URL's origin is one of `allowedOrigins`. */
  readonly allowedOrigin: boolean;
  /** Throws {@link UrlRefusedError} if `address` (an IP) may not be connected to. */
  checkAddress(address: string, host?: string): void;
  /** Resolves the URL's host and vets every address (an IP literal is vetted as it is). */
  resolve(): Promise<LookupAddress[]>;
  /** A `lookup` for `http.request`/`net.connect` that only yields vetted addresses. */
  readonly lookup: LookupFunction;
}

/**
 * Vets user-supplied URLs and the addresses they resolve to. `check` refuses what is visible in
 * the URL (scheme, credentials, IP literals in any encoding the WHATWG parser accepts, names that
 * are loopback or metadata by definition); `lookup` is the DNS hook for `node:net`/`http`/`tls`
 * that refuses a name when *any* of its addresses is refused, so the address checked is the
 * address connected to (no window for DNS rebinding between a check and the connect).
 */
export interface UrlGuard {
  /** Parses and checks a URL; throws {@link UrlRefusedError} or a `TypeError` for an invalid URL. */
  check(url: string | URL): URL;
  /** Throws {@link UrlRefusedError} if `address` (an IP) may not be connected to. */
  checkAddress(address: string, host?: string): void;
  /** Resolves `hostname` and vets every address (IP literals are vetted as they are). */
  resolve(hostname: string): Promise<LookupAddress[]>;
  /** A `lookup` for `net.connect`, `http.request` and `tls.connect` that only yields vetted addresses. */
  readonly lookup: LookupFunction;
  /** The checks for connections to `url` (which honour `allowedOrigins`). */
  forUrl(url: URL): ConnectionChecks;
}

/** Names that are loopback by definition (RFC 6761) or cloud metadata endpoints, whatever DNS says. */
const LOOPBACK_NAME = /(^|\.)localhost$/;
const METADATA_NAMES = new Set([
  'metadata',
  'metadata.google.internal',
  'metadata.goog',
  'metadata.azure.internal',
  'instance-data',
  'instance-data.ec2.internal',
]);

const defaultResolve: Resolve = (hostname) =>
  new Promise((resolve, reject) =>
    dnsLookup(hostname, { all: true, verbatim: true }, (error, addresses) =>
      error ? reject(error) : resolve(addresses),
    ),
  );

function parseAllowed(entries: readonly string[]): BlockList {
  const list = new BlockList();
  for (const entry of entries) {
    const [network = '', prefix] = entry.trim().split('/');
    const family = isIP(network) === 6 ? 'ipv6' : 'ipv4';
    if (!isIP(network)) throw new TypeError(`allowedAddresses: "${entry}" is not an IP or CIDR`);
    if (prefix === undefined) list.addAddress(network, family);
    else list.addSubnet(network, Number(prefix), family);
  }
  return list;
}

/**
 * The origin an entry of `allowedOrigins` stands for, or an explanation of why it is not one.
 * Shared with the configuration schema so an operator's typo is reported at start.
 */
export function parseOrigin(entry: string): { origin: string } | { problem: string } {
  let url: URL;
  try {
    url = new URL(entry.trim());
  } catch {
    return { problem: 'is not an origin such as http://127.0.0.1:11434' };
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    return { problem: 'must start with http:// or https://' };
  if (url.username || url.password) return { problem: 'must not contain credentials' };
  if (url.pathname !== '/' || url.search || url.hash)
    return { problem: `must be an origin without a path (${url.origin})` };
  const host = url.hostname.replace(/^\[|\]$/g, '').toLowerCase();
  if (METADATA_NAMES.has(host.replace(/\.$/, '')) || classifyAddress(host) === 'metadata')
    return { problem: 'is a cloud metadata address, which is never allowed' };
  return { origin: url.origin };
}

/** Creates a guard; see {@link UrlGuardOptions} for what it lets through. */
export function createUrlGuard(options: UrlGuardOptions = {}): UrlGuard {
  const allowPrivate = options.allowPrivateNetworks ?? false;
  const allowed = parseAllowed(options.allowedAddresses ?? []);
  const resolveName = options.resolve ?? defaultResolve;
  const origins = new Set(
    (options.allowedOrigins ?? []).map((entry) => {
      const parsed = parseOrigin(entry);
      if ('problem' in parsed) throw new TypeError(`allowedOrigins: "${entry}" ${parsed.problem}`);
      return parsed.origin;
    }),
  );

  /** The checks with or without the leniency of an allowed origin. */
  const checksOf = (lenient: boolean) => {
    const isAllowed = (category: AddressCategory, address: string): boolean => {
      if (category === 'metadata') return false;
      if (lenient) return true;
      if (allowPrivate && PRIVATE_CATEGORIES.has(category)) return true;
      const ip = address.replace(/%.*$/, '');
      return allowed.check(ip, isIP(ip) === 6 ? 'ipv6' : 'ipv4');
    };

    const checkAddress = (address: string, host = address): void => {
      const category = classifyAddress(address);
      if (category !== undefined && !isAllowed(category, address))
        throw new UrlRefusedError(host, category, address);
    };

    const checkHostName = (hostname: string): void => {
      const name = hostname.toLowerCase().replace(/\.$/, '');
      if (METADATA_NAMES.has(name)) throw new UrlRefusedError(hostname, 'metadata');
      if (LOOPBACK_NAME.test(name) && !isAllowed('loopback', '127.0.0.1'))
        throw new UrlRefusedError(hostname, 'loopback');
    };

    const resolve = async (hostname: string): Promise<LookupAddress[]> => {
      const bare = hostname.replace(/^\[|\]$/g, '');
      const family = isIP(bare);
      if (family) {
        checkAddress(bare, hostname);
        return [{ address: bare, family }];
      }
      checkHostName(bare);
      const addresses = await resolveName(bare);
      if (addresses.length === 0)
        throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${bare}`), { code: 'ENOTFOUND' });
      for (const { address } of addresses) checkAddress(address, bare);
      return addresses;
    };

    const lookup: LookupFunction = (hostname, lookupOptions, callback) => {
      resolve(hostname).then(
        (all) => {
          const family =
            lookupOptions.family === 'IPv4'
              ? 4
              : lookupOptions.family === 'IPv6'
                ? 6
                : lookupOptions.family;
          const matching = family ? all.filter((a) => a.family === family) : all;
          if (lookupOptions.all) return callback(null, matching);
          const first = matching[0];
          if (!first) {
            const error = new Error(`getaddrinfo ENOTFOUND ${hostname}`) as NodeJS.ErrnoException;
            error.code = 'ENOTFOUND';
            return callback(error, '', 0);
          }
          callback(null, first.address, first.family);
        },
        (error: NodeJS.ErrnoException) => callback(error, '', 0),
      );
    };

    return { checkAddress, checkHostName, resolve, lookup };
  };

  const strict = checksOf(false);
  const lenient = checksOf(true);
  const isAllowedOrigin = (url: URL) => origins.has(url.origin);

  const check = (input: string | URL): URL => {
    const url = new URL(input);
    if (url.protocol !== 'http:' && url.protocol !== 'https:')
      throw new UrlRefusedError(url.protocol, 'scheme');
    if (url.username || url.password) throw new UrlRefusedError(url.hostname, 'credentials');
    const checks = isAllowedOrigin(url) ? lenient : strict;
    const bare = url.hostname.replace(/^\[|\]$/g, '');
    if (isIP(bare)) checks.checkAddress(bare, url.hostname);
    else checks.checkHostName(bare);
    return url;
  };

  const forUrl = (url: URL): ConnectionChecks => {
    const allowedOrigin = isAllowedOrigin(url);
    const checks = allowedOrigin ? lenient : strict;
    return {
      allowedOrigin,
      checkAddress: checks.checkAddress,
      resolve: () => checks.resolve(url.hostname),
      lookup: checks.lookup,
    };
  };

  return {
    check,
    checkAddress: strict.checkAddress,
    resolve: strict.resolve,
    lookup: strict.lookup,
    forUrl,
  };
}
