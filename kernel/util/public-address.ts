/**
 * Whether an address is on the public internet: the check the sandbox's network proxy and the vault's
 * page-title fetch make before connecting, so an agent cannot reach this machine or its network.
 * Refused: loopback, link-local (cloud metadata at 169.254.169.254), private and carrier-grade NAT
 * ranges, documentation and benchmark blocks, multicast and reserved space, unique-local IPv6, and IPv4
 * carried inside IPv6 (mapped addresses are judged by their IPv4 half; NAT64, 6to4 and Teredo refused).
 */
import * as net from 'node:net';

// Two lists: node's BlockList also matches IPv4 addresses against IPv6 rules (as ::ffff:a.b.c.d).
const NOT_PUBLIC_V4 = new net.BlockList();
const NOT_PUBLIC_V6 = new net.BlockList();
for (const [net4, bits] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const)
  NOT_PUBLIC_V4.addSubnet(net4, bits, 'ipv4');
for (const [net6, bits] of [
  ['::', 128],
  ['::1', 128],
  ['::', 96], // IPv4-compatible
  ['::ffff:0:0', 96], // IPv4-mapped: judged by its IPv4 half below
  ['64:ff9b::', 96], // NAT64
  ['64:ff9b:1::', 48],
  ['100::', 64],
  ['2001::', 23], // IETF protocol assignments (Teredo among them)
  ['2001:db8::', 32],
  ['2002::', 16], // 6to4 carries an IPv4 address
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10],
  ['ff00::', 8],
] as const)
  NOT_PUBLIC_V6.addSubnet(net6, bits, 'ipv6');

/** True for public unicast addresses only; anything that is not an IP address is false. */
export function isPublicAddress(address: string): boolean {
  const kind = net.isIP(address);
  if (kind === 4) return !NOT_PUBLIC_V4.check(address, 'ipv4');
  if (kind !== 6) return false;
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return isPublicAddress(mapped[1]!);
  return !NOT_PUBLIC_V6.check(address, 'ipv6');
}
