import { isIPv6 } from 'node:net'
import type { Logger } from '../common/logger.js'
import type { FrameworkInfo, RequestInfo } from './adapter-contract.js'

/** Logs a warning of one kind, once; `message` is made only when it is logged. */
export type WarnOnce = (kind: string, message: () => string) => void

/** A request's value in a log line: quoted and escaped (no forged lines), and short. */
export const shown = (value: string) => JSON.stringify(value.length > 64 ? `${value.slice(0, 64)}…` : value)

/**
 * The one-time warnings, each kind said once per `warned` set. The message is made only when given: these checks
 * run on every request. A logger that throws is ignored: a warning must fail no request, nor reject `settle`,
 * which runs where nothing awaits it.
 */
export function createWarnOnce(logger: Logger, warned: Set<string>): WarnOnce {
  return (kind, message) => {
    if (warned.has(kind)) return
    warned.add(kind)
    try {
      logger.warn(`fleetlimit: ${message()}`)
    } catch {
      // Nowhere left to say it.
    }
  }
}

/** The warnings about a framework's client addresses: only the default tenant depends on them. */
export interface AddressWarnings {
  /** Trust-proxy set-ups that put clients in the wrong bucket. */
  checkProxy(info: RequestInfo): void
  /** A client address that is not an IP, kept as the tenant as it is. */
  notAnIp(ip: string): void
}

/** The advice where a framework has no trust-proxy setting to name: the tenant must come from the proxy's entry. */
const tenantFromProxy = (name: string) =>
  `${name} has no trust-proxy setting: pass tenant(req) that returns ipTenant(address) from ` +
  `'@fleetlimit/core/http' of the address your proxy appends to X-Forwarded-For, its last entry behind one proxy ` +
  `(a client can write any entry before it).`

export function createAddressWarnings(framework: FrameworkInfo, warnOnce: WarnOnce): AddressWarnings {
  const { name } = framework
  const trustProxyAdvice =
    framework.trustProxyHint === undefined ? tenantFromProxy(name) : `${framework.trustProxyHint}, or pass tenant(req).`
  const trustAllAdvice =
    framework.trustAllHint === undefined ? tenantFromProxy(name) : `${framework.trustAllHint} (or pass tenant(req)).`
  return {
    checkProxy(info) {
      if (info.trustProxy === 'all') {
        warnOnce(
          'trust-all',
          () =>
            `${name} trusts X-Forwarded-For from any peer, so any client can spoof X-Forwarded-For to pick its own ` +
            `address and escape its limit. ${trustAllAdvice}`,
        )
      } else if (!info.forwardedFor) {
        return
      } else if (info.trustProxy === 'none') {
        warnOnce(
          'untrusted',
          () =>
            `a request carries X-Forwarded-For but ${name} does not trust a proxy, so every client behind the ` +
            `proxy shares one limit. ${trustProxyAdvice}`,
        )
      } else if (info.ip !== undefined && info.ip === info.peerAddress) {
        // Set to trust some proxy, yet the client address is the peer's own: this peer is not one it trusts.
        const peer = info.ip
        warnOnce(
          'untrusted-peer',
          () =>
            `a request carries X-Forwarded-For from ${shown(peer)}, which ${name} does not trust as a proxy, so ` +
            `that address is the client. If it is your proxy, every client behind it shares one limit. ` +
            trustProxyAdvice,
        )
      }
    },
    notAnIp(ip) {
      warnOnce(
        'not-an-ip',
        () =>
          `the client address ${shown(ip)} that ${framework.name} reports is not an IP address, so it is the ` +
          `tenant as it is, and a client that can vary it escapes its limit. Check what your proxy sends in ` +
          `X-Forwarded-For and which proxies ${framework.name} trusts, or pass tenant(req).`,
      )
    },
  }
}

/**
 * Warns once when a custom tenant(req) returns a bare IPv6 address: a client is handed a /64 or more, so it escapes a
 * per-address limit by changing address. The default tenant groups them (ipTenant); an IPv4-mapped address is one
 * IPv4 client and passes.
 */
export function checkTenantIpv6(tenant: string, warnOnce: WarnOnce): void {
  // Runs per request with a custom tenant: an API key or an account id has no colon, and is done here.
  if (!tenant.includes(':') || !isIPv6(tenant) || /^::ffff:\d+\./i.test(tenant)) return
  warnOnce(
    'tenant-ipv6',
    () =>
      `tenant(req) returned the IPv6 address ${shown(tenant)} as it is (ERR_FLEETLIMIT_TENANT_IPV6): a client ` +
      `holds a /64 or more of them and escapes its limit by changing address. Group it as the default tenant ` +
      `does: ipTenant(ip) from '@fleetlimit/core/http', as in tenant: (req) => req.get('x-api-key') ?? ` +
      `ipTenant(req.ip).`,
  )
}
