import { isIPv4, isIPv6 } from 'node:net'

/**
 * The default tenant for a client address: IPv4 as is; IPv4-mapped IPv6 as IPv4; other IPv6 grouped to
 * its /`subnet` prefix (a /56 by default: one customer's allocation, which a client can rotate within at will).
 * An address with a port (`1.2.3.4:5678`, `[2001:db8::1]:443`, as some gateways put in X-Forwarded-For) counts
 * as the address alone. A missing address shares one bucket; a value that is still not an address is kept as
 * it is (keys encode and bound it).
 */
export function ipTenant(ip: string | undefined, subnet = 56): string {
  if (!ip) return 'unknown-ip'
  return addressTenant(ip, subnet) ?? ip
}

/** ipTenant for a value that is present: undefined when it is not an IP address, so the caller can say so. */
export function addressTenant(ip: string, subnet: number): string | undefined {
  // The common cases first, with no copy: a bare IPv4, or IPv4 as a dual-stack server reports it.
  if (isIPv4(ip)) return ip
  if (ip.startsWith('::ffff:') && isIPv4(ip.slice(7))) return ip.slice(7)
  const address = !ip.includes('%') && isIPv6(ip) ? ip : parseAddress(ip)
  if (address === undefined) return undefined
  if (isIPv4(address)) return address
  const hextets = expandIPv6(address)
  if (hextets.slice(0, 5).every((h) => h === 0) && hextets[5] === 0xffff) {
    const [high, low] = [hextets[6] as number, hextets[7] as number]
    return `${high >> 8}.${high & 0xff}.${low >> 8}.${low & 0xff}`
  }
  const masked = hextets.map((hextet, i) => {
    const bits = Math.min(16, Math.max(0, subnet - i * 16))
    return bits === 0 ? 0 : hextet & ((0xffff << (16 - bits)) & 0xffff)
  })
  return `${masked.map((h) => h.toString(16)).join(':')}/${subnet}`
}

/** Longest text worth parsing: a bracketed IPv6 with a zone and a port is far shorter. */
const MAX_ADDRESS_TEXT = 100

/**
 * The IP address in a client address value, without brackets, port or IPv6 zone; undefined when there is none.
 * An unbracketed IPv6 keeps its last group (`2001:db8::1:443` is a valid address), except after a dotted IPv4
 * tail, where a colon can only start a port.
 */
function parseAddress(value: string): string | undefined {
  if (value.length > MAX_ADDRESS_TEXT) return undefined
  let text = value.trim()
  const bracketed = /^\[([^\]]*)\](?::\d{1,5})?$/.exec(text)
  if (bracketed) text = bracketed[1] as string
  else {
    const ported = /^([^:]*\.\d+|.*:[^:]*\.\d+):\d{1,5}$/.exec(text)
    if (ported) text = ported[1] as string
  }
  const zone = text.indexOf('%')
  if (zone !== -1) text = text.slice(0, zone)
  return isIPv4(text) || isIPv6(text) ? text : undefined
}

/** The eight 16-bit groups of a valid IPv6 address (with `::` and a dotted IPv4 tail expanded). */
function expandIPv6(address: string): number[] {
  let text = address
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text)
  if (dotted) {
    const [a, b, c, d] = dotted.slice(1).map(Number) as [number, number, number, number]
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`
  }
  const [head = '', tail] = text.split('::')
  const parse = (part: string) => (part === '' ? [] : part.split(':').map((h) => Number.parseInt(h, 16)))
  const left = parse(head)
  const right = tail === undefined ? [] : parse(tail)
  return [...left, ...new Array<number>(8 - left.length - right.length).fill(0), ...right]
}
