import { isIPv4, isIPv6 } from 'node:net';

/**
 * The key a client is throttled under, from Koa's ctx.ip (the socket's peer, or with
 * TRUST_PROXY_HOPS the address the trusted proxies saw). IPv4 as it is, also when IPv4-mapped;
 * IPv6 by its /64 prefix: one subscriber usually holds a whole /64, and a limit per single IPv6
 * address would give an attacker 2^64 fresh addresses.
 */
export const clientAddress = (ip: string): string => {
  const address = ip.replace(/%.*$/, '');
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped?.[1] !== undefined && isIPv4(mapped[1])) return mapped[1];
  if (isIPv4(address)) return address;
  if (!isIPv6(address)) return address === '' ? 'unknown' : address;
  const [head = '', tail] = address.split('::');
  const groups = (part: string) => (part === '' ? [] : part.split(':').flatMap((group) => (group.includes('.') ? ['0', '0'] : [group])));
  const high = groups(head);
  const low = tail === undefined ? [] : groups(tail);
  const all = tail === undefined ? high : [...high, ...Array<string>(8 - high.length - low.length).fill('0'), ...low];
  return `${all
    .slice(0, 4)
    .map((group) => parseInt(group, 16).toString(16))
    .join(':')}::/64`;
};
