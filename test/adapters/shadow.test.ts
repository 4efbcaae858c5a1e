import { type Decision, definePolicy, memoryStore } from '@fleetlimit/core'
import { expect } from 'chai'
import sinon from 'sinon'
import { flavours } from '../support/adapter-harness.js'
import { adapterStores } from '../support/adapter-stores.js'

describe('adapters: shadow policies', () => {
  const stores = adapterStores()

  for (const flavour of flavours) {
    describe(flavour.name, () => {
      for (const kind of stores) {
        it(`lets every request through, reports each would-be denial to onLimited, headers as admitted (${kind.name})`, async () => {
          const onLimited = sinon.fake()
          const app = await flavour.build({
            shared: { store: kind.make(), onLimited },
            app: definePolicy({ name: 'shadow', limit: 2, window: '1m', shadow: true }),
          })
          try {
            const seen = []
            for (let i = 0; i < 5; i++) seen.push(await app.request('GET', '/search'))
            expect(seen.map((e) => e.status)).to.deep.equal([200, 200, 200, 200, 200])
            expect(onLimited.callCount).to.equal(3)
            for (const call of onLimited.getCalls()) {
              expect(call.args[1] as Decision).to.include({ allowed: true, shadowDenied: true, policy: 'shadow' })
            }
            const third = seen[2]
            expect(third?.headers.ratelimit).to.equal('"shadow";r=0;t=60')
            expect(third?.headers['ratelimit-policy']).to.equal('"shadow";q=2;w=60')
            expect(third?.headers['retry-after'], 'no Retry-After on a 200').to.equal(undefined)
            expect(JSON.parse(third?.body ?? '')).to.deep.equal({ ok: true })
          } finally {
            await app.close()
          }
        })
      }

      it('beside an enforced policy: the enforced one denies, onLimited sees the shadow denials first', async () => {
        const onLimited = sinon.fake()
        const app = await flavour.build({
          shared: { store: memoryStore(), onLimited },
          route: [
            definePolicy({ name: 'enforced', limit: 3, window: '1m' }),
            definePolicy({ name: 'shadow', limit: 1, window: '1m', shadow: true }),
          ],
        })
        try {
          const seen = []
          for (let i = 0; i < 4; i++) seen.push(await app.request('GET', '/search'))
          expect(seen.map((e) => e.status)).to.deep.equal([200, 200, 200, 429])
          expect(seen[1]?.headers.ratelimit).to.equal('"enforced";r=1;t=60, "shadow";r=0;t=60')
          expect(seen[1]?.headers['retry-after']).to.equal(undefined)

          const denied = seen[3]
          expect(denied?.headers['retry-after']).to.match(/^\d+$/)
          expect(denied?.headers.ratelimit).to.match(/^"enforced";r=0;t=\d+, "shadow";r=0;t=\d+$/)
          const problem = JSON.parse(denied?.body ?? '')
          expect(problem.detail).to.contain('"enforced"')
          expect(problem['violated-policies'], 'a shadow policy violates nothing').to.deep.equal(['enforced'])

          const decisions = onLimited.getCalls().map((call) => call.args[1] as Decision)
          expect(decisions.map((d) => [d.allowed, d.shadowDenied ?? false, d.policy])).to.deep.equal([
            [true, true, 'enforced'],
            [true, true, 'enforced'],
            [false, false, 'enforced'],
          ])
          const shadowOf = (d: Decision) => d.policies?.find((p) => p.policy === 'shadow')
          expect(shadowOf(decisions[0] as Decision)).to.include({ shadow: true, allowed: false })
        } finally {
          await app.close()
        }
      })
    })
  }
})
