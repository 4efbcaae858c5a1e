/**
 * Every relative link and #anchor of README.md, CONTRIBUTING.md and docs/*.md resolves: the file or folder exists,
 * and a #fragment is the anchor GitHub makes for one of the linked file's headings. No Redis, no network: links
 * with a scheme (https:) are not followed.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { expect } from 'chai'
import { repoRoot, userDocs } from './code-blocks.js'
import { headingAnchors, linkProblems, relativeLinks, slug } from './links.js'

const DOCS = userDocs

describe('docs: links', () => {
  describe('the anchors GitHub makes', () => {
    it('drop punctuation and code ticks, keep letters, digits, _ and -, and turn spaces into hyphens', () => {
      const anchors: Record<string, string> = {
        'Quick start': 'quick-start',
        'On Redis: one limit for the whole fleet': 'on-redis-one-limit-for-the-whole-fleet',
        '`consume(key, { cost })`: decide now': 'consumekey--cost--decide-now',
        '`peek(key, { limit })`, `reset(key)`, `stats()`': 'peekkey--limit--resetkey-stats',
        "`pause(key, ms)`: an upstream's 429 stops the whole fleet":
          'pausekey-ms-an-upstreams-429-stops-the-whole-fleet',
        'Koa (2 and 3, with or without @koa/router)': 'koa-2-and-3-with-or-without-koarouter',
        'Overhead: HTTP throughput with a limiter, relative to the bare framework':
          'overhead-http-throughput-with-a-limiter-relative-to-the-bare-framework',
        'The margin for requests in transit: `transitMs`': 'the-margin-for-requests-in-transit-transitms',
        '`retry_after_ms` and **bold** and _emphasis_': 'retry_after_ms-and-bold-and-emphasis',
        'A [linked](docs/x.md) word': 'a-linked-word',
        'Versions and support': 'versions-and-support',
      }
      for (const [heading, anchor] of Object.entries(anchors)) expect(slug(heading), heading).to.equal(anchor)
    })

    it('number repeated headings -1, -2, and ignore # lines in fenced code', () => {
      const text = ['# Guide', '## Express', '## Express', '## Express', '```sh', '# not a heading', '```'].join('\n')
      expect([...headingAnchors(text)]).to.deep.equal(['guide', 'express', 'express-1', 'express-2'])
    })
  })

  describe('finding links', () => {
    it('finds inline links, images and reference definitions, with their lines; skips code and schemes', () => {
      const text = [
        'See [a](docs/a.md) and ![chart](bench/c.svg "title") and [b](<docs/b c.md#x>).',
        '`[not](a-link.md)` and [web](https://example.com) and [mail](mailto:x@example.com)',
        '```md',
        '[not](in-a-fence.md)',
        '```',
        '[ref]: docs/ref.md#top',
        '[here](#local)',
      ].join('\n')
      expect(relativeLinks(text)).to.deep.equal([
        { line: 1, target: 'docs/a.md' },
        { line: 1, target: 'bench/c.svg' },
        { line: 1, target: 'docs/b c.md#x' },
        { line: 6, target: 'docs/ref.md#top' },
        { line: 7, target: '#local' },
      ])
    })

    it('reports a missing file, a missing anchor, an anchor on a folder, and a path out of the repository', () => {
      const root = mkdtempSync(join(tmpdir(), 'fleetlimit-links-'))
      try {
        mkdirSync(join(root, 'docs'))
        writeFileSync(join(root, 'docs/guide.md'), '# Guide\n\n## Keys\n')
        const doc = [
          '[ok](docs/guide.md#keys) [ok](docs/guide.md) [ok](docs) [ok](#readme)',
          '[gone](docs/gone.md) [anchor](docs/guide.md#locks) [folder](docs#keys) [out](../x.md)',
          '# Readme',
        ].join('\n')
        writeFileSync(join(root, 'README.md'), doc)
        expect(linkProblems(root, 'README.md')).to.deep.equal([
          'README.md:2: docs/gone.md: no file or folder docs/gone.md',
          'README.md:2: docs/guide.md#locks: no heading in docs/guide.md has the anchor #locks',
          'README.md:2: docs#keys: a #fragment on docs, which is not a Markdown file',
          'README.md:2: ../x.md: leaves the repository',
        ])
        writeFileSync(join(root, 'docs/back.md'), '[up](../README.md#readme) [bad](../README.md#nope)\n')
        expect(linkProblems(root, 'docs/back.md')).to.deep.equal([
          'docs/back.md:1: ../README.md#nope: no heading in README.md has the anchor #nope',
        ])
      } finally {
        rmSync(root, { recursive: true, force: true })
      }
    })
  })

  it(`every relative link of ${DOCS.length} files resolves: README.md, CONTRIBUTING.md, docs/*.md`, () => {
    expect(DOCS).to.include.members(['README.md', 'CONTRIBUTING.md', 'docs/migrating.md'])
    expect(DOCS.flatMap((doc) => linkProblems(repoRoot, doc))).to.deep.equal([])
  })
})
