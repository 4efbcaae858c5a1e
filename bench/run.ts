// `pnpm bench [part...]`: builds the packages, then runs every part, or the ones named, on the built code that
// users run. Each part starts its own redis-server on a free port of 127.0.0.1 and writes JSON, Markdown and
// any SVG charts to bench/results/.
import { writeFile } from 'node:fs/promises'
import { cpus } from 'node:os'
import { join } from 'node:path'
import { accuracy } from './accuracy.js'
import { clusterFailover } from './cluster.js'
import { decisions } from './decisions.js'
import { failure } from './failure.js'
import { handover } from './handover.js'
import { inFlight } from './in-flight.js'
import { inProcess } from './in-process.js'
import { load } from './load.js'
import { local } from './local.js'
import { memory } from './memory.js'
import { outbound } from './outbound.js'
import { overhead } from './overhead.js'
import { redisCost } from './redis-cost.js'

export interface PartResult {
  readonly title: string
  readonly markdown: string
  readonly data: unknown
  /** SVG charts by name: each is written to bench/results/<part>-<name>.svg. */
  readonly charts?: Readonly<Record<string, string>>
}

const parts: Record<string, () => Promise<PartResult>> = {
  accuracy: () => accuracy(),
  cluster: () => clusterFailover(),
  decisions: () => decisions(),
  failure: () => failure(),
  handover: () => handover(),
  'in-flight': () => inFlight(),
  'in-process': () => inProcess(),
  load: () => load(),
  local: () => local(),
  memory: () => memory(),
  outbound: () => outbound(),
  overhead: () => overhead(),
  'redis-cost': () => redisCost(),
}

const wanted = process.argv.slice(2)
const unknown = wanted.filter((name) => !(name in parts))
if (unknown.length > 0) {
  console.error(`unknown part(s): ${unknown.join(', ')}; parts: ${Object.keys(parts).join(', ')}`)
  process.exit(2)
}
const machine = `${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, Node ${process.version}`
const results = join(import.meta.dirname, 'results')
for (const name of wanted.length > 0 ? wanted : Object.keys(parts)) {
  console.log(`\n## ${name}\n`)
  const { charts = {}, ...result } = await (parts[name] as () => Promise<PartResult>)()
  const header = `# ${result.title}\n\nMeasured by \`pnpm bench ${name}\` on ${machine}, ${new Date().toISOString()}.\n\n`
  await writeFile(join(results, `${name}.md`), header + result.markdown)
  await writeFile(join(results, `${name}.json`), `${JSON.stringify({ machine, ...result }, null, 2)}\n`)
  for (const [chart, svg] of Object.entries(charts)) await writeFile(join(results, `${name}-${chart}.svg`), svg)
  console.log(result.markdown)
}
