import { execFile } from 'node:child_process'
import { rmSync } from 'node:fs'
import { mkdir, mkdtemp, readdir } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'

export const run = promisify(execFile)
export const root = join(dirname(fileURLToPath(import.meta.url)), '../..')
export const packageNames = ['core', 'express', 'koa', 'fastify'] as const
export type PackageName = (typeof packageNames)[number]

export interface Packed {
  /** A temporary folder, removed when the test process exits (kept with KEEP_PACK=1). */
  readonly dir: string
  /** Each package's tarball, as `pnpm pack` made it. */
  readonly tarballs: Readonly<Record<PackageName, string>>
}

let packed: Promise<Packed> | undefined

/**
 * Builds the four packages and packs each, once per test run, for every test of the published tarballs.
 * With pnpm, not npm: only pnpm applies `publishConfig.exports` (the exports map without the workspace's
 * `@fleetlimit/source` condition, whose `./src` files are not in the tarball) and turns `workspace:^` into a
 * version; `npm pack` would ship the workspace's manifest as it is.
 */
export function packPackages(): Promise<Packed> {
  packed ??= pack()
  return packed
}

async function pack(): Promise<Packed> {
  const dir = await mkdtemp(join(tmpdir(), 'fleetlimit-pack-'))
  if (!process.env.KEEP_PACK) process.once('exit', () => rmSync(dir, { recursive: true, force: true }))
  await run('pnpm', ['build'], { cwd: root })
  const tarballs = {} as Record<PackageName, string>
  await Promise.all(
    packageNames.map(async (name) => {
      const destination = join(dir, 'tarballs', name)
      await mkdir(destination, { recursive: true })
      await run('pnpm', ['pack', '--pack-destination', destination], { cwd: join(root, 'packages', name) })
      const [file, ...others] = await readdir(destination)
      if (!file?.endsWith('.tgz') || others.length > 0) throw new Error(`pnpm pack made ${[file, ...others]}`)
      tarballs[name] = join(destination, file)
    }),
  )
  return { dir, tarballs }
}

/** The paths in a tarball, without its `package/` folder. */
export async function tarballFiles(tarball: string): Promise<string[]> {
  const { stdout } = await run('tar', ['-tzf', tarball])
  return stdout
    .split('\n')
    .filter((line) => line !== '' && !line.endsWith('/'))
    .map((line) => line.replace(/^package\//, ''))
}

/** Unpacks a tarball's `package/` folder into `into` (created). */
export async function unpack(tarball: string, into: string): Promise<void> {
  await mkdir(into, { recursive: true })
  await run('tar', ['-xzf', tarball, '-C', into, '--strip-components=1'])
}
