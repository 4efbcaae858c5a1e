// A load generator in the manner of redis-benchmark, which cannot send a binary argument (lua/sliding-log.lua takes
// one): `clients` connections, each sending `pipeline` commands at a time and waiting for their replies, until
// `requests` were sent. Commands are encoded once (or per call, for a key that varies), so the client stays far
// cheaper than the server's side of each call.
import { connect, type Socket } from 'node:net'

export type Argument = string | number | Buffer

/** A command in RESP, as a client sends it. */
export function encodeCommand(args: readonly Argument[]): Buffer {
  const parts: Buffer[] = [Buffer.from(`*${args.length}\r\n`)]
  for (const arg of args) {
    const bytes = Buffer.isBuffer(arg) ? arg : Buffer.from(String(arg))
    parts.push(Buffer.from(`$${bytes.length}\r\n`), bytes, Buffer.from('\r\n'))
  }
  return Buffer.concat(parts)
}

export interface LoadOptions {
  readonly port: number
  readonly requests: number
  readonly clients?: number
  readonly pipeline?: number
  /** The i-th command (encoded), or one command sent every time. */
  readonly command: Buffer | ((i: number) => Buffer)
}

const CR = 13
const DOLLAR = 36
const MINUS = 45

/** Where the reply starting at `from` ends, or -1 while it is incomplete. Simple, error, integer and bulk replies. */
function replyEnd(buffer: Buffer, from: number): number {
  const line = buffer.indexOf(CR, from)
  if (line < 0 || line + 1 >= buffer.length) return -1
  if (buffer[from] === MINUS) throw new Error(`redis replied: ${buffer.toString('latin1', from + 1, line)}`)
  if (buffer[from] !== DOLLAR) return line + 2
  const length = Number(buffer.toString('latin1', from + 1, line))
  const end = length < 0 ? line + 2 : line + 2 + length + 2
  return end <= buffer.length ? end : -1
}

/** Sends the load; resolves with the calls per second the client saw. */
export async function respLoad({ port, requests, clients = 50, pipeline = 1, command }: LoadOptions) {
  const next = typeof command === 'function' ? command : () => command
  let sent = 0
  const started = performance.now()
  await Promise.all(
    Array.from(
      { length: clients },
      () =>
        new Promise<void>((resolve, reject) => {
          const socket: Socket = connect(port, '127.0.0.1')
          socket.setNoDelay(true)
          let pending: Buffer = Buffer.alloc(0)
          let awaited = 0
          const send = () => {
            const batch: Buffer[] = []
            while (batch.length < pipeline && sent < requests) batch.push(next(sent++))
            if (batch.length === 0) {
              socket.end()
              resolve()
              return
            }
            awaited = batch.length
            socket.write(batch.length === 1 ? (batch[0] as Buffer) : Buffer.concat(batch))
          }
          socket.on('connect', send)
          socket.on('error', reject)
          socket.on('data', (chunk: Buffer) => {
            pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk])
            let at = 0
            try {
              for (let end = replyEnd(pending, at); end > 0 && awaited > 0; end = replyEnd(pending, at)) {
                at = end
                awaited--
              }
            } catch (error) {
              socket.destroy()
              reject(error)
              return
            }
            pending = pending.subarray(at)
            if (awaited === 0) send()
          })
        }),
    ),
  )
  return { perSecond: requests / ((performance.now() - started) / 1000) }
}
