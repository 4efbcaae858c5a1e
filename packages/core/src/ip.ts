import { isIPv4, isIPv6 } from 'node:net'

/**
 * The default tenant for a client address: IPv4 as is; IPv4-mapped IPv6 as IPv4; other IPv6 grouped to
 * its /`subnet` prefix (a /56 by default: one customer's allocation, which a client can rotate within at will).
 * A missing address shares one bucket; a value that is not an address is kept as it is (keys encode it).
 */
export function ipTenant(ip: string | undefined, subnet = 56): string {
  if (!ip) return 'unknown-ip'
  const address = ip.includes('%') ? (ip.split('%')[0] as string) : ip
  if (isIPv4(address)) return address
  // Dual-stack servers report IPv4 clients as ::ffff:a.b.c.d: the common case, without expanding it.
  if (address.startsWith('::ffff:') && isIPv4(address.slice(7))) return address.slice(7)
  if (!isIPv6(address)) return ip
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
