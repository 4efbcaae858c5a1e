import { createHash } from 'node:crypto'
import { OptionError } from '../common/errors.js'

/** Who is limited: a tenant id, or a tenant and the route it called. */
export type KeyInput = string | { readonly tenant: string; readonly route?: string }

// Everything outside this set is escaped, so an encoded part never holds the key's separator
// (`:`), a Redis Cluster hash-tag brace, whitespace or a control character.
const SAFE = /^[A-Za-z0-9._~!$&'()*+,;=@/-]*$/
const MAX_ENCODED = 128

/**
 * Encodes one key part injectively: distinct values never share an encoding, and no value can forge a
 * separator or a hash tag. Long values are replaced by a hash, so a hostile header cannot make a huge key.
 * Never throws, whatever the string holds (lone surrogates included).
 */
export function encodeKeyPart(value: string): string {
  // An empty hash tag (`{}`) would not pin a Redis Cluster slot; '%e' is no escape's start.
  if (value === '') return '%e'
  let encoded = value
  if (!SAFE.test(value)) {
    encoded = ''
    for (let i = 0; i < value.length; i++) {
      const char = value[i] as string
      if (SAFE.test(char)) encoded += char
      else {
        const unit = value.charCodeAt(i)
        encoded += unit < 0x100 ? `%${hex(unit, 2)}` : `%u${hex(unit, 4)}`
      }
    }
  }
  // Escapes use upper-case hex, so '%h' starts none of them and a hashed part cannot equal an encoded one.
  if (encoded.length > MAX_ENCODED) {
    encoded = `%h${createHash('sha256').update(value, 'utf16le').digest('base64url')}`
  }
  return encoded
}

function hex(n: number, width: number): string {
  return n.toString(16).toUpperCase().padStart(width, '0')
}

/**
 * The store key (before the store's prefix) of a policy and a key input: `name:{tenant}` or `name:{tenant}:route`.
 * The tenant is the hash tag, so every key of one tenant lands in one Redis Cluster slot.
 */
export function buildKey(policyName: string, input: KeyInput): string {
  const { tenant, route } = typeof input === 'string' ? { tenant: input, route: undefined } : (input ?? {})
  if (typeof tenant !== 'string') {
    throw new OptionError('key', input, 'a tenant string, or { tenant: string, route?: string }')
  }
  const base = `${policyName}:{${encodeKeyPart(tenant)}}`
  if (route === undefined) return base
  if (typeof route !== 'string') throw new OptionError('key.route', route, 'a string')
  return `${base}:${encodeKeyPart(route)}`
}

/**
 * The store key of one policy's window (`keyName`: its policyKeyName) for a key input: a policy counted per tenant
 * (`scope: 'tenant'`) leaves the route out.
 */
export function windowKey(keyName: string, scope: 'route' | 'tenant', input: KeyInput): string {
  const tenantOnly = scope === 'tenant' && typeof input === 'object' && input !== null
  return buildKey(keyName, tenantOnly ? { tenant: input.tenant } : input)
}

/**
 * The value encodeKeyPart encoded, or undefined for a hashed part (`%h…`: too long to keep) or text it cannot
 * have made. For tools that list keys; a decision never decodes.
 */
export function decodeKeyPart(encoded: string): string | undefined {
  if (encoded === '%e') return ''
  if (encoded.startsWith('%h') || !/^(?:[A-Za-z0-9._~!$&'()*+,;=@/-]|%[0-9A-F]{2}|%u[0-9A-F]{4})*$/.test(encoded)) {
    return undefined
  }
  return encoded.replace(/%u([0-9A-F]{4})|%([0-9A-F]{2})/g, (_, wide: string | undefined, narrow: string | undefined) =>
    String.fromCharCode(Number.parseInt((wide ?? narrow) as string, 16)),
  )
}
