import { type ChildProcess, spawn } from 'node:child_process'
import { once } from 'node:events'
import { mkdtempSync, rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

/** A redis-server process that a test started, on a free port of 127.0.0.1. */
export interface RedisServer {
  readonly port: number
  readonly url: string
  /** Its working directory, removed once it exits. */
  readonly dir: string
  readonly process: ChildProcess
  /** SIGKILL, and wait for the exit. */
  stop(): Promise<void>
  /** SIGSTOP: the server keeps its connections and answers nothing, as behind a silent network. */
  freeze(): void
  /** SIGCONT after freeze(). */
  thaw(): void
}

// The directories of servers still running: removed when each exits, and whatever is left when this process exits.
const liveDirs = new Set<string>()
const removeDir = (dir: string) => {
  liveDirs.delete(dir)
  rmSync(dir, { recursive: true, force: true })
}
process.once('exit', () => {
  for (const dir of liveDirs) removeDir(dir)
})

export async function freePort(): Promise<number> {
  const server = createServer()
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const address = server.address()
  server.close()
  if (address === null || typeof address === 'string') throw new Error('no port')
  return address.port
}

/** Starts redis-server (nothing saved to disk) and resolves once it accepts connections. */
export async function startRedisServer(
  extraArgs: readonly string[] = [],
  { port: fixedPort }: { port?: number } = {},
): Promise<RedisServer> {
  const port = fixedPort ?? (await freePort())
  // Its own directory: a replica writes the RDB it syncs from its primary there, never into the repository.
  const dir = mkdtempSync(join(tmpdir(), 'fleetlimit-redis-'))
  const child = spawn(
    'redis-server',
    [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--save',
      '',
      '--appendonly',
      'no',
      '--logfile',
      '',
      '--dir',
      dir,
      ...extraArgs,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  )
  liveDirs.add(dir)
  // However it ends (stop(), a test's kill -9, a failed start), its directory goes with it.
  child.once('exit', () => removeDir(dir))
  child.once('error', () => removeDir(dir))
  let log = ''
  await new Promise<void>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      log += chunk.toString()
      if (log.includes('Ready to accept connections')) {
        child.stdout?.off('data', onData)
        child.stdout?.resume()
        resolve()
      }
    }
    child.stdout?.on('data', onData)
    child.stderr?.on('data', (chunk: Buffer) => {
      log += chunk.toString()
    })
    child.once('error', (error) =>
      reject(
        new Error(
          `could not start redis-server (${error.message}): install it (apt-get install -y redis-server) or set REDIS_URL`,
        ),
      ),
    )
    child.once('exit', (code) => reject(new Error(`redis-server exited with ${code}:\n${log}`)))
  })
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    dir,
    process: child,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return
      child.kill('SIGKILL')
      await once(child, 'exit')
    },
    freeze: () => child.kill('SIGSTOP'),
    thaw: () => child.kill('SIGCONT'),
  }
}
