// What test/docs/links.test.ts uses: the relative links of a Markdown file, and the anchors GitHub makes for its
// headings, so that a link to a file that moved or a heading that was renamed fails a test instead of a reader.
import { readFileSync, statSync } from 'node:fs'
import { join, posix } from 'node:path'

export interface Link {
  /** The line (1-based) the link is on. */
  line: number
  /** The target as written: `docs/stores.md#keys`, `#faq`. */
  target: string
}

/** The text with fenced blocks blanked out, line for line (so line numbers stay), and inline code spans emptied. */
export function withoutCode(text: string): string {
  const blanked = text.replace(/^(`{3,}|~{3,})[^\n]*\n[\s\S]*?^\1[^\S\n]*$/gm, (block) => block.replace(/[^\n]/g, ''))
  return blanked.replace(/(`+)(?!`)[\s\S]*?[^`]\1(?!`)/g, (span) => span.replace(/[^\n]/g, ''))
}

/**
 * The relative links of a Markdown text: inline links and images (`[text](target "title")`, `<target>` too) and
 * reference definitions (`[name]: target`). Links with a scheme (`https:`, `mailto:`) are left out.
 */
export function relativeLinks(text: string): Link[] {
  const links: Link[] = []
  withoutCode(text)
    .split('\n')
    .forEach((line, i) => {
      const targets = [
        ...[...line.matchAll(/\]\(\s*(<[^>]*>|[^)\s]+)(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1] ?? ''),
        ...[...line.matchAll(/^\s{0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)/g)].map((m) => m[1] ?? ''),
      ]
      for (const raw of targets) {
        const target = raw.replace(/^<|>$/g, '')
        if (target === '' || /^[a-z][a-z0-9+.-]*:/i.test(target)) continue
        links.push({ line: i + 1, target })
      }
    })
  return links
}

/**
 * GitHub's anchor for a heading's text: the text as rendered (link targets, emphasis marks and code ticks go),
 * lower case, every character but letters, digits, marks, `_`, `-` and spaces dropped, each space a hyphen.
 */
export function slug(heading: string): string {
  const rendered = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/<[^>]+>/g, '')
    .replace(/(\*\*|\*)(\S(?:.*?\S)?)\1/g, '$2')
    .replace(/(?<!\w)(__?)(\S(?:.*?\S)?)\1(?!\w)/g, '$2')
  return rendered
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-')
}

/** The anchors of a Markdown text's ATX headings, with GitHub's `-1`, `-2`, … for repeats. */
export function headingAnchors(text: string): Set<string> {
  const anchors = new Set<string>()
  const seen = new Map<string, number>()
  for (const [, heading = ''] of withoutFences(text).matchAll(/^ {0,3}#{1,6}[ \t]+(.+?)(?:[ \t]+#+)?[ \t]*$/gm)) {
    const base = slug(heading)
    const n = seen.get(base) ?? 0
    seen.set(base, n + 1)
    anchors.add(n === 0 ? base : `${base}-${n}`)
  }
  return anchors
}

function withoutFences(text: string): string {
  return text.replace(/^(`{3,}|~{3,})[^\n]*\n[\s\S]*?^\1[^\S\n]*$/gm, '')
}

/**
 * The problems of one Markdown file's relative links, as `file:line: target: what is wrong`. `doc` is relative to
 * `root`; a target resolves against the file's folder. A target must name a file or folder that exists, and a
 * `#fragment` must be an anchor of the Markdown file it names (or of `doc` itself for a bare `#fragment`).
 */
export function linkProblems(root: string, doc: string, text = readFileSync(join(root, doc), 'utf8')): string[] {
  const problems: string[] = []
  for (const { line, target } of relativeLinks(text)) {
    const where = `${doc}:${line}: ${target}`
    const hash = target.indexOf('#')
    const file = decodeURI(hash === -1 ? target : target.slice(0, hash))
    const fragment = hash === -1 ? undefined : decodeURIComponent(target.slice(hash + 1))
    const path = file === '' ? doc : posix.normalize(posix.join(posix.dirname(doc), file))
    if (path.startsWith('../') || path === '..') {
      problems.push(`${where}: leaves the repository`)
      continue
    }
    let isFile: boolean
    try {
      isFile = statSync(join(root, path)).isFile()
    } catch {
      problems.push(`${where}: no file or folder ${path}`)
      continue
    }
    if (fragment === undefined) continue
    if (!isFile || !path.endsWith('.md')) {
      problems.push(`${where}: a #fragment on ${path}, which is not a Markdown file`)
      continue
    }
    const anchors = headingAnchors(readFileSync(join(root, path), 'utf8'))
    if (!anchors.has(fragment)) problems.push(`${where}: no heading in ${path} has the anchor #${fragment}`)
  }
  return problems
}
