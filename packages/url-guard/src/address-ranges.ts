import { BlockList, isIPv4, isIPv6 } from 'node:net';

/**
 * Why an address is not a public unicast address. The first four are what a developer reaches on
 * purpose (a server on the laptop, a container on a private network), so configuration may allow
 * them; the rest are never a legitimate destination for a user-supplied URL.
 */
export type AddressCategory =
  'loopback' | 'private' | 'link-local' | 'unspecified' | 'metadata' | 'multicast' | 'reserved';

/** Categories that `allowPrivateNetworks` opens. Metadata, multicast and reserved stay closed. */
export const PRIVATE_CATEGORIES: ReadonlySet<AddressCategory> = new Set([
  'loopback',
  'private',
  'link-local',
  'unspecified',
]);

type Range = readonly [network: string, prefix: number];

/**
 * Ranges by category, checked in this order (so a cloud metadata address inside link-local is
 * reported, and refused, as metadata). Sources: RFC 6890 special-purpose registries (IPv4 and
 * IPv6), RFC 6598 (CGNAT, also used by some clouds for metadata), and cloud provider docs.
 */
const RANGES: readonly (readonly [AddressCategory, readonly Range[], readonly Range[]])[] = [
  [
    'metadata',
    // AWS/GCP/Azure/OpenStack, Alibaba Cloud, Oracle Cloud, AWS Nitro (IPv6).
    [
      ['169.254.169.254', 32],
      ['169.254.170.2', 32],
      ['100.100.100.200', 32],
      ['192.0.0.192', 32],
    ],
    [['fd00:ec2::254', 128]],
  ],
  ['unspecified', [['0.0.0.0', 8]], [['::', 128]]],
  ['loopback', [['127.0.0.0', 8]], [['::1', 128]]],
  [
    'private',
    [
      ['10.0.0.0', 8],
      ['172.16.0.0', 12],
      ['192.168.0.0', 16],
      ['100.64.0.0', 10],
      ['198.18.0.0', 15],
    ],
    [['fc00::', 7]],
  ],
  ['link-local', [['169.254.0.0', 16]], [['fe80::', 10]]],
  ['multicast', [['224.0.0.0', 4]], [['ff00::', 8]]],
  [
    'reserved',
    [
      ['192.0.0.0', 24],
      ['192.0.2.0', 24],
      ['192.88.99.0', 24],
      ['198.51.100.0', 24],
      ['203.0.113.0', 24],
      ['240.0.0.0', 4], // includes 255.255.255.255 (broadcast)
    ],
    [
      ['100::', 64],
      ['2001::', 32], // Teredo: carries an obfuscated IPv4 address
      ['2001:db8::', 32],
      ['fec0::', 10],
      ['64:ff9b:1::', 48],
    ],
  ],
];

const LISTS = RANGES.map(([category, v4, v6]) => {
  const list = new BlockList();
  for (const [network, prefix] of v4) list.addSubnet(network, prefix, 'ipv4');
  for (const [network, prefix] of v6) list.addSubnet(network, prefix, 'ipv6');
  return [category, list] as const;
});

/** Parses an IPv6 address (no zone, no brackets) into eight 16-bit groups. */
function ipv6Groups(address: string): number[] {
  let text = address;
  const tail = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (tail?.[1]) {
    const [a = 0, b = 0, c = 0, d = 0] = tail[1].split('.').map(Number);
    text = `${text.slice(0, -tail[1].length)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head = '', rest] = text.split('::');
  const parse = (part: string) => (part ? part.split(':').map((g) => parseInt(g, 16)) : []);
  const left = parse(head);
  const right = rest === undefined ? [] : parse(rest);
  return [...left, ...Array<number>(8 - left.length - right.length).fill(0), ...right];
}

function v4FromGroups(high: number, low: number): string {
  return `${high >> 8}.${high & 0xff}.${low >> 8}.${low & 0xff}`;
}

/**
 * The IPv4 address an IPv6 address carries, when a host or a translator would deliver packets
 * for it to that IPv4 address: IPv4-mapped (`::ffff:a.b.c.d`), IPv4-compatible (`::a.b.c.d`),
 * NAT64 (`64:ff9b::/96`) and 6to4 (`2002:AABB:CCDD::/48`). These are the usual ways to smuggle
 * `127.0.0.1` past a filter that only looks at IPv4 rules.
 */
export function embeddedIPv4(address: string): string | undefined {
  if (!isIPv6(address)) return undefined;
  const g = ipv6Groups(address.toLowerCase());
  const zeros = (from: number, to: number) => g.slice(from, to).every((x) => x === 0);
  if (zeros(0, 5) && g[5] === 0xffff) return v4FromGroups(g[6]!, g[7]!);
  if (zeros(0, 6) && (g[6] !== 0 || g[7]! > 1)) return v4FromGroups(g[6]!, g[7]!);
  if (g[0] === 0x64 && g[1] === 0xff9b && zeros(2, 6)) return v4FromGroups(g[6]!, g[7]!);
  if (g[0] === 0x2002) return v4FromGroups(g[1]!, g[2]!);
  return undefined;
}

/**
 * The category of a non-public IP address, or `undefined` for a public unicast address.
 * Accepts IPv4 and IPv6 text (an IPv6 zone index such as `%eth0` is ignored); anything that is
 * not an IP address is `'reserved'`, so a caller that forgot to resolve a name fails closed.
 */
export function classifyAddress(address: string): AddressCategory | undefined {
  const ip = address.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  const family = isIPv4(ip) ? 'ipv4' : isIPv6(ip) ? 'ipv6' : undefined;
  if (!family) return 'reserved';
  const inner = family === 'ipv6' ? embeddedIPv4(ip) : undefined;
  if (inner !== undefined) return classifyAddress(inner);
  for (const [category, list] of LISTS) if (list.check(ip, family)) return category;
  return undefined;
}
