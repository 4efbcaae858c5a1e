// What test/docs/readme-blocks.test.ts uses: finds the code blocks of a Markdown file, writes each as a module of
// its own, type-checks them in one TypeScript program (peer limiters' blocks in a second), and runs the apps.
import { type ChildProcess, spawn } from 'node:child_process'
import { once } from 'node:events'
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import ts from 'typescript'

export const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../..')

/** The user documentation, as paths from the repository's root: README.md, CONTRIBUTING.md and docs/*.md. */
export const userDocs: readonly string[] = [
  'README.md',
  'CONTRIBUTING.md',
  ...readdirSync(join(repoRoot, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .sort()
    .map((name) => `docs/${name}`),
]

/**
 * The names a fragment may use without defining them, and nothing else. A block that declares or imports one
 * of these names itself gets its own; an app block (one that calls `listen(`) and a `js` block get none.
 */
export const AMBIENT = `import type { RateLimiter, Store } from '@fleetlimit/core'
import type { Express } from 'express'
import type { Redis } from 'ioredis'

/** A limiter made with createRateLimiter(). */
export declare const limiter: RateLimiter
/** A store: memoryStore() or redisStore(redis). */
export declare const store: Store
/** An ioredis client. */
export declare const redis: Redis
/** An Express app. */
export declare const app: Express
`
export const AMBIENT_NAMES = ['limiter', 'store', 'redis', 'app'] as const

/** Peer limiters: a block that imports one is checked against the version bench/ pins, and never run. */
export const PEERS = ['express-rate-limit', 'rate-limit-redis', '@fastify/rate-limit', 'rate-limiter-flexible']
const benchModules = join(repoRoot, 'bench/node_modules')
export const peerInstalled = (name: string) => existsSync(join(benchModules, name, 'package.json'))

/** Modules a block may import that the repository root does not install: the workspace package that does. */
export const ELSEWHERE: Readonly<Record<string, string>> = {
  '@opentelemetry/exporter-prometheus': 'examples/otel-prometheus',
}

/**
 * The declaration file of an installed package, for `paths`: an ESM file's path mapping loads files only (no
 * package.json lookup), so the mapping names the file the package's `exports` or `types` name.
 */
function typesEntry(dir: string): string {
  const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as {
    types?: string
    typings?: string
    exports?: { '.'?: { import?: { types?: string } } }
  }
  const entry = manifest.exports?.['.']?.import?.types ?? manifest.types ?? manifest.typings ?? 'index.d.ts'
  return join(dir, entry)
}

export type BlockKind = 'app' | 'peer' | 'fragment' | 'module'

export interface CodeBlock {
  /** The Markdown file, relative to the repository. */
  doc: string
  /** The line of the opening fence (1-based). */
  fenceLine: number
  lang: string
  code: string
  /** The HTML comments on the lines right above the fence, without `<!--` and `-->`. */
  markers: string[]
  /**
   * app: calls `listen(`; complete (no ambient names), type-checked, and run.
   * peer: imports a peer limiter; type-checked against bench/'s copy when it is installed.
   * fragment: a ts block that is neither; may use the ambient names.
   * module: a js block that is neither; complete.
   */
  kind: BlockKind
  /** The peer limiters it imports. */
  peers: string[]
}

const CHECKED = new Set(['ts', 'typescript', 'js', 'javascript'])

/** Every fenced block of a Markdown file; `lang` is the fence's info word ('' for a plain fence). */
export function extractBlocks(doc: string, text = readFileSync(join(repoRoot, doc), 'utf8')): CodeBlock[] {
  const lines = text.split('\n')
  const blocks: CodeBlock[] = []
  for (let i = 0; i < lines.length; i++) {
    const open = /^(`{3,})\s*([\w-]*)/.exec(lines[i] ?? '')
    if (!open) continue
    const fence = open[1] ?? '```'
    const lang = (open[2] ?? '').toLowerCase()
    const start = i
    const body: string[] = []
    for (i++; i < lines.length && !(lines[i] ?? '').startsWith(fence); i++) body.push(lines[i] ?? '')
    const markers: string[] = []
    for (let j = start - 1; j >= 0; j--) {
      const comment = /^<!--\s*(.*?)\s*-->\s*$/.exec(lines[j] ?? '')
      if (!comment) break
      markers.unshift(comment[1] ?? '')
    }
    const code = `${body.join('\n')}\n`
    const peers = PEERS.filter((peer) => importsOf(code).includes(peer))
    const kind: BlockKind =
      peers.length > 0 ? 'peer' : /\.listen\(/.test(code) ? 'app' : lang.startsWith('j') ? 'module' : 'fragment'
    blocks.push({ doc, fenceLine: start + 1, lang, code, markers, kind, peers })
  }
  return blocks
}

/** The blocks the test checks: ts, typescript, js and javascript. */
export const checkedBlocks = (blocks: readonly CodeBlock[]) => blocks.filter((b) => CHECKED.has(b.lang))

/** The path an app block is asked for: `<!-- docs-test: GET /path -->` above its fence, else `/`. */
export function requestPath(block: CodeBlock): string {
  for (const marker of block.markers) {
    const match = /^docs-test:\s*GET\s+(\/\S*)$/.exec(marker)
    if (match?.[1]) return match[1]
  }
  return '/'
}

/** The lines (in the Markdown file) of a block's top-level `await`s: CommonJS cannot run them. */
export function topLevelAwaitLines(block: CodeBlock): number[] {
  const source = ts.createSourceFile('block.ts', block.code, ts.ScriptTarget.ES2022, true, ts.ScriptKind.TS)
  const found: number[] = []
  const visit = (node: ts.Node): void => {
    if (ts.isFunctionLike(node) || ts.isClassStaticBlockDeclaration(node)) return
    if (ts.isAwaitExpression(node) || (ts.isForOfStatement(node) && node.awaitModifier)) {
      found.push(block.fenceLine + 1 + source.getLineAndCharacterOfPosition(node.getStart(source)).line)
    }
    ts.forEachChild(node, visit)
  }
  visit(source)
  return found
}

/** The module specifiers a block imports or requires. */
export function importsOf(code: string): string[] {
  const found = code.matchAll(/(?:\bfrom\s+|\bimport\s*\(\s*|\brequire\s*\(\s*|^\s*import\s+)['"]([^'"]+)['"]/gm)
  return [...found].map((m) => m[1] ?? '')
}

const isJs = (block: CodeBlock) => block.lang.startsWith('j')
/** A js block that calls require() and imports nothing is CommonJS; any other js block is ESM. */
const isCommonJs = (block: CodeBlock) => /\brequire\s*\(/.test(block.code) && !/^\s*import\s/m.test(block.code)

/** The top-level names a module declares or imports. */
function declaredNames(fileName: string, code: string): Set<string> {
  const source = ts.createSourceFile(fileName, code, ts.ScriptTarget.ES2022, false, ts.ScriptKind.TS)
  const names = new Set<string>()
  const bind = (name: ts.BindingName) => {
    if (ts.isIdentifier(name)) names.add(name.text)
    else for (const element of name.elements) if (!ts.isOmittedExpression(element)) bind(element.name)
  }
  for (const statement of source.statements) {
    if (ts.isVariableStatement(statement)) {
      for (const declaration of statement.declarationList.declarations) bind(declaration.name)
    } else if (ts.isImportDeclaration(statement)) {
      const clause = statement.importClause
      if (clause?.name) names.add(clause.name.text)
      const bindings = clause?.namedBindings
      if (bindings && ts.isNamespaceImport(bindings)) names.add(bindings.name.text)
      if (bindings && ts.isNamedImports(bindings)) for (const element of bindings.elements) names.add(element.name.text)
    } else if (
      (ts.isFunctionDeclaration(statement) ||
        ts.isClassDeclaration(statement) ||
        ts.isEnumDeclaration(statement) ||
        ts.isInterfaceDeclaration(statement) ||
        ts.isTypeAliasDeclaration(statement)) &&
      statement.name
    ) {
      names.add(statement.name.text)
    }
  }
  return names
}

/** One file of the program: a block as a module of its own. */
export interface BlockFile {
  block: CodeBlock
  path: string
  /** Characters added before the block's first line (the import of the ambient names, on that line). */
  prefixChars: number
  /** The ambient names it was given. */
  ambient: string[]
}

export interface CheckResult {
  files: BlockFile[]
  /** Formatted diagnostics per block file path, each naming the Markdown line. */
  errors: Map<string, string[]>
  /** Diagnostics in no block file (options, ambient.ts). */
  globalErrors: string[]
}

/**
 * Writes every block to `dir` (block-N.ts, .mjs or .cjs) and type-checks them with tsconfig.base.json's options
 * in one program; a tsconfig.json beside them reproduces it (`tsc -p <dir>`). Peer blocks go to `dir`/peers,
 * checked by a tsc of their own (see below), and are left out when their peer is not installed.
 */
export async function typeCheck(blocks: readonly CodeBlock[], dir: string): Promise<CheckResult> {
  rmSync(dir, { recursive: true, force: true })
  const peersDir = join(dir, 'peers')
  mkdirSync(peersDir, { recursive: true })
  // ESM unless a file's extension says otherwise, whatever the enclosing package says.
  writeFileSync(join(dir, 'package.json'), '{ "type": "module" }\n')
  writeFileSync(join(peersDir, 'package.json'), '{ "type": "module" }\n')
  writeFileSync(join(dir, 'ambient.ts'), AMBIENT)
  const files: BlockFile[] = []
  blocks.forEach((block, n) => {
    if (block.kind === 'peer' && !block.peers.every(peerInstalled)) return
    const write = (ext: string, prefix: string, ambient: string[]) => {
      const path = join(block.kind === 'peer' ? peersDir : dir, `block-${n}${ext}`)
      writeFileSync(path, prefix + block.code)
      files.push({ block, path, prefixChars: prefix.length, ambient })
    }
    if (isJs(block)) write(isCommonJs(block) ? '.cjs' : '.mjs', '', [])
    else if (block.kind !== 'fragment') write('.ts', '', [])
    else {
      const declared = declaredNames('block.ts', block.code)
      const ambient = AMBIENT_NAMES.filter((name) => !declared.has(name))
      // On the block's first line, so the block's line numbers stay as they are.
      const prefix = ambient.length > 0 ? `import { ${ambient.join(', ')} } from './ambient.js'; ` : ''
      write('.ts', prefix, ambient)
    }
  })
  const result: CheckResult = { files, errors: new Map(), globalErrors: [] }
  const paths = Object.fromEntries(
    Object.entries(ELSEWHERE).map(([name, at]) => [name, [typesEntry(join(repoRoot, at, 'node_modules', name))]]),
  )
  const peers = files.filter((f) => f.block.kind === 'peer')
  let peersChecked = Promise.resolve()
  if (peers.length > 0) {
    // The peers' own program, without fleetlimit's adapters: both Fastify plugins declare `config.rateLimit`, each
    // its own way. Its node_modules links the peers from bench/; the frameworks and ioredis resolve from the root,
    // the copies the peers' own types see, as in an app that installs one of each. A tsc process of its own, so
    // it runs beside the main program.
    for (const peer of PEERS.filter(peerInstalled)) {
      const link = join(peersDir, 'node_modules', peer)
      mkdirSync(dirname(link), { recursive: true })
      symlinkSync(join(benchModules, peer), link, 'dir')
    }
    writeConfig(
      peersDir,
      peers.map((f) => relative(peersDir, f.path)),
      {},
    )
    peersChecked = runTsc(peersDir).then((output) => readTscOutput(result, peersDir, peers, output))
  }
  const own = files.filter((f) => f.block.kind !== 'peer')
  const config = writeConfig(dir, ['ambient.ts', ...own.map((f) => relative(dir, f.path))], { paths })
  check(result, dir, config, own)
  await peersChecked
  return result
}

/** Writes `dir`/tsconfig.json: tsconfig.base.json's options for `files`, plus `extra`. */
function writeConfig(dir: string, files: string[], extra: Record<string, unknown>): object {
  const config = {
    extends: join(repoRoot, 'tsconfig.base.json'),
    compilerOptions: {
      noEmit: true,
      allowJs: true,
      checkJs: true,
      // A block without import or export is a module too: blocks never share names.
      moduleDetection: 'force',
      types: ['node'],
      ...extra,
    },
    files,
  }
  writeFileSync(join(dir, 'tsconfig.json'), `${JSON.stringify(config, null, 2)}\n`)
  return config
}

/** `tsc -p dir` in a child process: what it printed, whatever its exit code. */
function runTsc(dir: string): Promise<string> {
  const tsc = join(repoRoot, 'node_modules/typescript/bin/tsc')
  const child = spawn(process.execPath, [tsc, '-p', dir, '--pretty', 'false'], { cwd: dir, stdio: 'pipe' })
  let output = ''
  const add = (chunk: Buffer) => {
    output += chunk.toString()
  }
  child.stdout.on('data', add)
  child.stderr.on('data', add)
  return new Promise((resolve, reject) => {
    child.once('error', reject)
    child.once('close', () => resolve(output))
  })
}

/** tsc's `file(line,col): error TSn: message` lines, each continued by indented lines, per block file. */
function readTscOutput(result: CheckResult, dir: string, files: readonly BlockFile[], output: string): void {
  const found: { file: BlockFile; head: string; message: string[]; source: string }[] = []
  for (const file of files) result.errors.set(file.path, [])
  for (const line of output.split('\n')) {
    const last = found.at(-1)
    if (last && /^\s/.test(line)) {
      last.message.push(line)
      continue
    }
    const at = /^(.+?)\((\d+),(\d+)\): error (TS\d+): (.*)$/.exec(line)
    const file = at && files.find((f) => f.path === resolve(dir, at[1] ?? ''))
    if (at && file) {
      const row = Number(at[2])
      const source = (file.block.code.split('\n')[row - 1] ?? '').trim()
      found.push({
        file,
        head: `${file.block.doc}:${file.block.fenceLine + row}:${at[3]} ${at[4]}`,
        message: [at[5] ?? ''],
        source,
      })
    } else if (line.trim() !== '') {
      result.globalErrors.push(`tsc -p ${dir}: ${line}`)
    }
  }
  for (const { file, head, message, source } of found) {
    result.errors.get(file.path)?.push(`${head} ${message.join('\n')}\n    ${source}`)
  }
}

function check(result: CheckResult, dir: string, config: object, files: readonly BlockFile[]): void {
  const parsed = ts.parseJsonConfigFileContent(config, ts.sys, dir)
  const program = ts.createProgram({ rootNames: parsed.fileNames, options: parsed.options })
  const format = (d: ts.Diagnostic) => `TS${d.code} ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`
  for (const d of [...parsed.errors, ...program.getOptionsDiagnostics(), ...program.getGlobalDiagnostics()]) {
    result.globalErrors.push(format(d))
  }
  const ambientFile = program.getSourceFile(join(dir, 'ambient.ts'))
  if (ambientFile) {
    for (const d of program.getSemanticDiagnostics(ambientFile)) result.globalErrors.push(`ambient.ts: ${format(d)}`)
  }
  for (const file of files) {
    const source = program.getSourceFile(resolve(file.path))
    if (!source) {
      result.globalErrors.push(`${file.path} is not in the program`)
      continue
    }
    const found = [...program.getSyntacticDiagnostics(source), ...program.getSemanticDiagnostics(source)]
    const lines = file.block.code.split('\n')
    result.errors.set(
      file.path,
      found.map((d) => {
        const { line, character } = source.getLineAndCharacterOfPosition(d.start ?? 0)
        const column = line === 0 ? Math.max(0, character - file.prefixChars) : character
        const where = `${file.block.doc}:${file.block.fenceLine + 1 + line}:${column + 1}`
        return `${where} ${format(d)}\n    ${(lines[line] ?? '').trim()}`
      }),
    )
  }
}

/** What an app block answered. */
export interface AppRun {
  /** The statuses in order, up to and including the first one that is not 200. */
  statuses: number[]
  /** The first response's RateLimit-Policy. */
  policy: string | undefined
  /** The smallest limit the first response's headers state, if they state one. */
  limit: number | undefined
  /** The last response's Retry-After. */
  retryAfter: string | undefined
}

const reporter = pathToFileURL(join(repoRoot, 'test/docs/fixtures/report-listening.ts')).href

/**
 * Runs an app block's file (tsx, the sources of the workspace packages) with `env` (PORT, REDIS_URL), waits
 * until it listens (a preloaded module reports its `listening` event), then sends GET `path` until the first
 * answer that is not 200, at most `maxRequests` times, and kills it.
 */
export async function runApp(
  file: string,
  env: Record<string, string>,
  { path = '/', maxRequests = 200 }: { path?: string; maxRequests?: number } = {},
): Promise<AppRun> {
  const child = spawn(
    process.execPath,
    ['--conditions=@fleetlimit/source', '--import', 'tsx', '--import', reporter, file],
    { cwd: repoRoot, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe', 'ipc'] },
  )
  let output = ''
  child.stdout?.on('data', (chunk: Buffer) => {
    output += chunk.toString()
  })
  child.stderr?.on('data', (chunk: Buffer) => {
    output += chunk.toString()
  })
  try {
    const address = await listening(child, () => output)
    const url = `http://${address}${path}`
    const statuses: number[] = []
    let policy: string | undefined
    let limit: number | undefined
    let retryAfter: string | undefined
    while (statuses.length < maxRequests) {
      const response = await fetch(url)
      await response.arrayBuffer()
      if (statuses.length === 0) {
        policy = response.headers.get('ratelimit-policy') ?? undefined
        limit = statedLimit(response.headers)
      }
      statuses.push(response.status)
      retryAfter = response.headers.get('retry-after') ?? undefined
      if (response.status !== 200) break
    }
    return { statuses, policy, limit, retryAfter }
  } finally {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL')
      await once(child, 'exit')
    }
  }
}

function listening(child: ChildProcess, output: () => string): Promise<string> {
  return new Promise((resolve, reject) => {
    child.on('message', (message: { listening?: { address: string; port: number; family: string } | string }) => {
      const at = message.listening
      if (at === undefined || typeof at === 'string') return reject(new Error(`listens on ${String(at)}`))
      const host = at.address === '::' || at.address === '0.0.0.0' ? '127.0.0.1' : at.address
      resolve(`${at.family === 'IPv6' && host.includes(':') ? `[${host}]` : host}:${at.port}`)
    })
    child.once('exit', (code, signal) => reject(new Error(`exited (${code ?? signal}) before listening:\n${output()}`)))
    child.once('error', reject)
  })
}

/**
 * The smallest limit in a response's headers: the `q` of each draft-8 `RateLimit-Policy` item, a draft-7 policy
 * (`5;w=60`), or draft-6 `RateLimit-Limit` and `X-RateLimit-Limit`.
 */
function statedLimit(headers: Headers): number | undefined {
  const policy = headers.get('ratelimit-policy') ?? ''
  const limits = [...policy.matchAll(/;q=(\d+)/g)].map((m) => Number(m[1]))
  const draft7 = /^(\d+);w=/.exec(policy)
  if (draft7) limits.push(Number(draft7[1]))
  for (const name of ['ratelimit-limit', 'x-ratelimit-limit']) {
    const value = headers.get(name)
    if (value) limits.push(Number(value))
  }
  return limits.length > 0 ? Math.min(...limits) : undefined
}
