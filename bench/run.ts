// `pnpm bench [part]`: runs every part, or the one named. Each part starts its own redis-server on a free
// port of 127.0.0.1 and writes JSON and Markdown to bench/results/.
import { writeFile } from 'node:fs/promises'
import { cpus } from 'node:os'
import { join } from 'node:path'
import { failure } from './failure.js'
import { local } from './local.js'
import { memory } from './memory.js'

export interface PartResult {
  readonly title: string
  readonly markdown: string
  readonly data: unknown
}

const parts: Record<string, () => Promise<PartResult>> = { failure, local: () => local(), memory }

const wanted = process.argv.slice(2)
const unknown = wanted.filter((name) => !(name in parts))
if (unknown.length > 0) {
  console.error(`unknown part(s): ${unknown.join(', ')}; parts: ${Object.keys(parts).join(', ')}`)
  process.exit(2)
}
const machine = `${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, Node ${process.version}`
for (const name of wanted.length > 0 ? wanted : Object.keys(parts)) {
  console.log(`\n## ${name}\n`)
  const result = await (parts[name] as () => Promise<PartResult>)()
  const header = `# ${result.title}\n\nMeasured by \`pnpm bench ${name}\` on ${machine}, ${new Date().toISOString()}.\n\n`
  await writeFile(join(import.meta.dirname, 'results', `${name}.md`), header + result.markdown)
  await writeFile(
    join(import.meta.dirname, 'results', `${name}.json`),
    `${JSON.stringify({ machine, ...result }, null, 2)}\n`,
  )
  console.log(result.markdown)
}
