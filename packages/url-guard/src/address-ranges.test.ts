import { describe, expect, it } from 'vitest';
import { classifyAddress, embeddedIPv4, type AddressCategory } from './address-ranges.js';

describe('classifyAddress', () => {
  const cases: [string, AddressCategory | undefined][] = [
    ['127.0.0.1', 'loopback'],
    ['127.255.255.254', 'loopback'],
    ['10.1.2.3', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['172.32.0.1', undefined],
    ['192.168.1.1', 'private'],
    ['100.64.0.1', 'private'],
    ['100.100.100.200', 'metadata'],
    ['169.254.169.254', 'metadata'],
    ['169.254.1.1', 'link-local'],
    ['0.0.0.0', 'unspecified'],
    ['0.1.2.3', 'unspecified'],
    ['224.0.0.1', 'multicast'],
    ['255.255.255.255', 'reserved'],
    ['192.0.2.10', 'reserved'],
    ['8.8.8.8', undefined],
    ['93.184.216.34', undefined],
    ['::1', 'loopback'],
    ['::', 'unspecified'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['0:0:0:0:0:ffff:7f00:1', 'loopback'],
    ['::ffff:a9fe:a9fe', 'metadata'],
    ['::127.0.0.1', 'loopback'],
    ['64:ff9b::7f00:1', 'loopback'],
    ['64:ff9b::10.0.0.1', 'private'],
    ['2002:7f00:1::1', 'loopback'],
    ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'reserved'],
    ['fe80::1', 'link-local'],
    ['fe80::1%eth0', 'link-local'],
    ['[fe80::1]', 'link-local'],
    ['fc00::1', 'private'],
    ['fd12:3456::1', 'private'],
    ['fd00:ec2::254', 'metadata'],
    ['ff02::1', 'multicast'],
    ['2001:db8::1', 'reserved'],
    ['2001:4860:4860::8888', undefined],
    ['::ffff:8.8.8.8', undefined],
    ['example.com', 'reserved'],
    ['', 'reserved'],
  ];
  it.each(cases)('%s → %s', (address, category) => {
    expect(classifyAddress(address)).toBe(category);
  });
});

describe('embeddedIPv4', () => {
  it('finds the IPv4 address in mapped, compatible, NAT64 and 6to4 forms', () => {
    expect(embeddedIPv4('::ffff:7f00:1')).toBe('127.0.0.1');
    expect(embeddedIPv4('::ffff:10.0.0.1')).toBe('10.0.0.1');
    expect(embeddedIPv4('::a00:1')).toBe('10.0.0.1');
    expect(embeddedIPv4('64:ff9b::a9fe:a9fe')).toBe('169.254.169.254');
    expect(embeddedIPv4('2002:c0a8:101::')).toBe('192.168.1.1');
  });

  it('leaves other addresses alone', () => {
    expect(embeddedIPv4('::1')).toBeUndefined();
    expect(embeddedIPv4('::')).toBeUndefined();
    expect(embeddedIPv4('2001:4860::1')).toBeUndefined();
    expect(embeddedIPv4('127.0.0.1')).toBeUndefined();
  });
});
