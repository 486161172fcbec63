// IP addresses as bytes, parsed without node:net so that deciders (pure code) can use them.

/** An IP address as its bytes: 4 for IPv4, 16 for IPv6. */
export interface IpAddress {
  family: 4 | 6;
  bytes: readonly number[];
}

/** A range of addresses: the first `prefix` bits of `base`. */
export interface Cidr {
  base: IpAddress;
  prefix: number;
}

// Canonical dotted decimal only (no leading zeros): what the WHATWG URL parser and the resolver
// produce. A URL host such as `0x7f.1` or `2130706433` is read through `new URL()` first.
const IPV4 = /^(0|[1-9]\d{0,2})\.(0|[1-9]\d{0,2})\.(0|[1-9]\d{0,2})\.(0|[1-9]\d{0,2})$/;
const HEX_GROUP = /^[0-9a-f]{1,4}$/i;

/** Parses dotted-decimal IPv4 (`10.0.0.1`), or undefined. */
export const parseIpv4 = (text: string): IpAddress | undefined => {
  const match = IPV4.exec(text);
  if (!match) return undefined;
  const bytes = match.slice(1).map(Number);
  if (bytes.some((byte) => byte > 255)) return undefined;
  return { family: 4, bytes };
};

/** 16-bit groups of one side of `::`; a dotted IPv4 tail counts as two groups. */
const groupsOf = (part: string, ipv4Tail: boolean): number[] | undefined => {
  if (part === '') return [];
  const pieces = part.split(':');
  const groups: number[] = [];
  for (const [index, piece] of pieces.entries()) {
    if (ipv4Tail && index === pieces.length - 1 && piece.includes('.')) {
      const ipv4 = parseIpv4(piece);
      if (!ipv4) return undefined;
      const [a = 0, b = 0, c = 0, d = 0] = ipv4.bytes;
      groups.push((a << 8) | b, (c << 8) | d);
      continue;
    }
    if (!HEX_GROUP.test(piece)) return undefined;
    groups.push(parseInt(piece, 16));
  }
  return groups;
};

/**
 * Parses IPv6 (`::1`, `[::ffff:127.0.0.1]`, `fe80::1%eth0`: brackets and a zone are dropped), or
 * undefined.
 */
export const parseIpv6 = (text: string): IpAddress | undefined => {
  let body = text.startsWith('[') && text.endsWith(']') ? text.slice(1, -1) : text;
  const zone = body.indexOf('%');
  if (zone >= 0) body = body.slice(0, zone);
  const halves = body.split('::');
  let groups: number[] | undefined;
  if (halves.length === 1) {
    groups = groupsOf(body, true);
    if (groups?.length !== 8) return undefined;
  } else if (halves.length === 2) {
    const head = groupsOf(halves[0] ?? '', false);
    const tail = groupsOf(halves[1] ?? '', true);
    if (!head || !tail || head.length + tail.length > 7) return undefined;
    groups = [...head, ...new Array<number>(8 - head.length - tail.length).fill(0), ...tail];
  } else {
    return undefined;
  }
  return { family: 6, bytes: groups.flatMap((group) => [group >> 8, group & 0xff]) };
};

/** Parses an IPv4 or IPv6 address (IPv6 possibly bracketed), or undefined. */
export const parseIp = (text: string): IpAddress | undefined => parseIpv4(text) ?? parseIpv6(text);

/** Parses `10.0.0.0/8` or `::1/128` (a bare address is a single-address range); undefined when invalid. */
export const parseCidr = (text: string): Cidr | undefined => {
  const slash = text.indexOf('/');
  const base = parseIp(slash < 0 ? text : text.slice(0, slash));
  if (!base) return undefined;
  const bits = base.bytes.length * 8;
  if (slash < 0) return { base, prefix: bits };
  const prefixText = text.slice(slash + 1);
  if (!/^\d{1,3}$/.test(prefixText)) return undefined;
  const prefix = Number(prefixText);
  return prefix <= bits ? { base, prefix } : undefined;
};

/** Whether `address` lies in `cidr` (never across families). */
export const cidrContains = (cidr: Cidr, address: IpAddress): boolean => {
  if (cidr.base.family !== address.family) return false;
  for (let bit = 0; bit < cidr.prefix; bit += 8) {
    const index = bit / 8;
    const take = Math.min(8, cidr.prefix - bit);
    const mask = (0xff << (8 - take)) & 0xff;
    if (((cidr.base.bytes[index] ?? 0) & mask) !== ((address.bytes[index] ?? 0) & mask)) return false;
  }
  return true;
};

/** `a.b.c.d`, or IPv6 in full hex groups (for messages and tests, not canonical compression). */
export const formatIp = (address: IpAddress): string => {
  if (address.family === 4) return address.bytes.join('.');
  const groups: string[] = [];
  for (let index = 0; index < 16; index += 2) {
    groups.push((((address.bytes[index] ?? 0) << 8) | (address.bytes[index + 1] ?? 0)).toString(16));
  }
  return groups.join(':');
};
