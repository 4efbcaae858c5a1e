import { expect } from 'chai'
import type { RequestInfo } from '../../../packages/core/src/http/adapter-contract.js'
import {
  createRouteNames,
  defaultRoute,
  manyMethods,
  UNMATCHED_ROUTE,
} from '../../../packages/core/src/http/default-route.js'

const info = (method: string, routePattern: string | undefined, many?: boolean): RequestInfo => ({
  ip: '127.0.0.1',
  method,
  routePattern,
  ...(many === undefined ? {} : { manyMethods: many }),
  forwardedFor: false,
  trustProxy: 'none',
  peerAddress: '127.0.0.1',
})

describe('default-route', () => {
  it('manyMethods: more than one method, in any letter case, HEAD counting as GET', () => {
    expect(manyMethods([])).to.equal(false)
    expect(manyMethods(['GET'])).to.equal(false)
    expect(manyMethods(['get', 'HEAD', 'Get'])).to.equal(false)
    expect(manyMethods(['GET', 'POST'])).to.equal(true)
    expect(manyMethods(new Set(['head', 'delete']))).to.equal(true)
  })

  it('defaultRoute: the method and the pattern, `*` for a route of several methods, the shared bucket unmatched', () => {
    expect(defaultRoute(info('get', '/users/:id'))).to.equal('GET /users/:id')
    expect(defaultRoute(info('HEAD', '/users/:id'))).to.equal('GET /users/:id')
    expect(defaultRoute(info('POST', '/api/op', true))).to.equal('* /api/op')
    expect(defaultRoute(info('GET', undefined))).to.equal(UNMATCHED_ROUTE)
    expect(UNMATCHED_ROUTE).to.equal('*')
  })

  it('createRouteNames gives the names defaultRoute gives, the same string for a route seen before', () => {
    const names = createRouteNames()
    const first = names.of(info('get', '/a/:id'))
    expect(first).to.equal('GET /a/:id')
    expect(names.of(info('get', '/a/:id'))).to.equal(first)
    expect(names.of(info('HEAD', '/a/:id'))).to.equal('GET /a/:id')
    expect(names.of(info('PUT', '/a/:id', true))).to.equal('* /a/:id')
    expect(names.of(info('GET', undefined))).to.equal('*')
  })

  it('createRouteNames keeps at most 4096 names, and still names every route past them', () => {
    const names = createRouteNames()
    for (let i = 0; i < 4_100; i++) expect(names.of(info('GET', `/r${i}`))).to.equal(`GET /r${i}`)
    expect(names.of(info('GET', '/r4099'))).to.equal('GET /r4099')
  })
})
