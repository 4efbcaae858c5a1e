// The shape of a GLIDE client that fleetlimit uses: structural, so that core never loads @valkey/valkey-glide.

/** What fleetlimit passes to GLIDE's `customCommand`: how to decode the reply, and (on a cluster) where to send it. */
export interface GlideCommandOptions {
  /** GLIDE's `Decoder`: 0 (Bytes) returns bulk strings as Buffers, 1 (String) as strings. */
  readonly decoder?: number
  readonly route?: 'randomNode'
}

/**
 * A `@valkey/valkey-glide` (2.x) `GlideClient` or `GlideClusterClient`, as `createClient()` makes it; fleetlimit
 * never connects or closes it.
 */
export interface ValkeyGlideClient {
  customCommand(args: (string | Buffer)[], options?: GlideCommandOptions): Promise<unknown>
  invokeScript(...args: never[]): Promise<unknown>
  getPubSubMessage(): Promise<unknown>
  subscribe(channels: Iterable<string>, timeoutMs: number): Promise<void>
  close(errorMessage?: string): void
}

export type Candidate = Partial<Record<string, unknown>>

export function isGlide(client: object): client is ValkeyGlideClient {
  const c = client as Candidate
  return (
    typeof c.customCommand === 'function' &&
    typeof c.invokeScript === 'function' &&
    typeof c.getPubSubMessage === 'function' &&
    typeof c.close === 'function'
  )
}
