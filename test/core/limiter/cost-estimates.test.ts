import { definePolicy } from '@fleetlimit/core'
import { expect } from 'chai'
import {
  CostEstimates,
  percentileOf,
  resolveEstimate,
  SAMPLE_BUDGET,
  WARMUP,
} from '../../../packages/core/src/limiter/cost-estimates.js'
import { optionErrorOf } from '../../support/option-error.js'

describe('cost estimates (limiter/cost-estimates.ts)', () => {
  describe('percentileOf: the nearest rank', () => {
    const hundred = Array.from({ length: 100 }, (_, i) => 100 - i) // 100 down to 1, unsorted on purpose

    it('p90 of 1..100 is 90, p50 is 50, p99 is 99, p100 is the largest, p0.01 the smallest', () => {
      expect(percentileOf(hundred, 0.9)).to.equal(90)
      expect(percentileOf(hundred, 0.5)).to.equal(50)
      expect(percentileOf(hundred, 0.99)).to.equal(99)
      expect(percentileOf(hundred, 1)).to.equal(100)
      expect(percentileOf(hundred, 0.0001)).to.equal(1)
    })

    it('of ten costs, the p90 is the 9th smallest; of eleven, the 10th (rank ceil(0.9 × 11) = 10)', () => {
      const ten = [5, 1, 9, 3, 7, 2, 8, 4, 6, 1000]
      expect(percentileOf(ten, 0.9)).to.equal(9)
      expect(percentileOf([...ten, 0], 0.9)).to.equal(9)
      expect(percentileOf([...ten, 2000], 0.9)).to.equal(1000)
    })

    it('leaves its input as it was', () => {
      const costs = [3, 1, 2]
      percentileOf(costs, 0.5)
      expect(costs).to.deep.equal([3, 1, 2])
    })
  })

  describe('CostEstimates', () => {
    it('gives `initial` until WARMUP costs of the key were learned, then their percentile', () => {
      const estimates = new CostEstimates(0.9, 500, 100)
      expect(WARMUP).to.equal(10)
      for (let cost = 1; cost < WARMUP; cost++) {
        estimates.add('k', cost * 10)
        expect(estimates.estimate('k'), `after ${cost}`).to.equal(500)
      }
      estimates.add('k', 100)
      expect(estimates.estimate('k')).to.equal(90)
    })

    it('keeps the latest `samples` costs: older ones leave the percentile', () => {
      const estimates = new CostEstimates(1, 1, 10)
      for (let i = 0; i < 10; i++) estimates.add('k', 1_000)
      expect(estimates.estimate('k')).to.equal(1_000)
      for (let i = 0; i < 9; i++) estimates.add('k', 10)
      expect(estimates.estimate('k'), 'one 1,000 left of ten').to.equal(1_000)
      estimates.add('k', 10)
      expect(estimates.estimate('k')).to.equal(10)
    })

    it('with fewer samples than WARMUP, estimates once they are full', () => {
      const estimates = new CostEstimates(0.5, 7, 10)
      for (let i = 1; i <= 9; i++) estimates.add('k', i)
      expect(estimates.estimate('k')).to.equal(7)
      estimates.add('k', 10)
      expect(estimates.estimate('k')).to.equal(5)
    })

    it('keeps each key apart: one key’s huge costs leave another’s estimate alone', () => {
      const estimates = new CostEstimates(0.9, 100, 100)
      for (let i = 0; i < 50; i++) {
        estimates.add('big', 1_000_000)
        estimates.add('small', 20)
      }
      expect(estimates.estimate('big')).to.equal(1_000_000)
      expect(estimates.estimate('small')).to.equal(20)
      expect(estimates.estimate('new')).to.equal(100)
    })

    it('holds at most SAMPLE_BUDGET / samples keys, dropping the one that learned least recently', () => {
      const estimates = new CostEstimates(0.9, 1, 1_000)
      expect(estimates.maxKeys)
        .to.equal(Math.floor(SAMPLE_BUDGET / 1_000))
        .and.equal(409)
      for (let i = 0; i < 10; i++) estimates.add('first', 7)
      for (let k = 0; k < estimates.maxKeys - 1; k++) estimates.add(`k${k}`, 1)
      estimates.add('first', 7) // learned again: now the most recent
      estimates.add('one more', 1)
      expect(estimates.size).to.equal(estimates.maxKeys)
      expect(estimates.estimate('first'), 'kept').to.equal(7)
      for (let k = 0; k < 10_000; k++) estimates.add(`flood${k}`, 1)
      expect(estimates.size).to.equal(estimates.maxKeys)
      expect(estimates.estimate('first'), 'dropped by the flood: back to initial').to.equal(1)
    })
  })

  describe('resolveEstimate: the `estimate` option', () => {
    const tpm = definePolicy({ name: 'tpm', limit: 10_000, window: '1m' })
    const rpm = definePolicy({ name: 'rpm', limit: 100, window: '1m' })
    const parallel = definePolicy({ name: 'parallel', concurrency: 5 })

    it('defaults to the p90 over the last 100 costs, of the only rate policy', () => {
      expect(resolveEstimate({ initial: 500 }, [tpm, parallel])).to.deep.equal({
        initial: 500,
        percentile: 0.9,
        samples: 100,
        policy: 'tpm',
        index: 0,
      })
      expect(resolveEstimate(undefined, [tpm])).to.equal(undefined)
    })

    it('with several rate policies, names the estimated one', () => {
      expect(resolveEstimate({ initial: 50, policy: 'tpm', percentile: 0.5, samples: 10 }, [rpm, tpm])).to.include({
        policy: 'tpm',
        index: 1,
        percentile: 0.5,
        samples: 10,
      })
      expect(optionErrorOf(() => resolveEstimate({ initial: 50 }, [rpm, tpm])).message).to.include(
        'the name of the rate policy whose cost is estimated (rpm, tpm)',
      )
      expect(optionErrorOf(() => resolveEstimate({ initial: 1, policy: 'parallel' }, [rpm, parallel])).option).to.equal(
        'estimate.policy',
      )
    })

    it('refuses what it cannot use, naming the option', () => {
      const cases: [unknown, string][] = [
        [500, 'estimate'],
        [{ initial: 0 }, 'estimate.initial'],
        [{ initial: 10_001 }, 'estimate.initial'],
        [{ initial: Number.NaN }, 'estimate.initial'],
        [{}, 'estimate.initial'],
        [{ initial: 5, percentile: 0 }, 'estimate.percentile'],
        [{ initial: 5, percentile: 1.5 }, 'estimate.percentile'],
        [{ initial: 5, percentile: Number.NaN }, 'estimate.percentile'],
        [{ initial: 5, samples: 9 }, 'estimate.samples'],
        [{ initial: 5, samples: 1_001 }, 'estimate.samples'],
        [{ initial: 5, maxCost: 9 }, 'estimate.maxCost'],
      ]
      for (const [value, option] of cases) {
        expect(optionErrorOf(() => resolveEstimate(value, [tpm])).option, JSON.stringify(value)).to.equal(option)
      }
      const bucketed = definePolicy({ name: 'b', limit: 100, window: '1m', algorithm: 'bucketed' })
      expect(optionErrorOf(() => resolveEstimate({ initial: 5 }, [bucketed])).message).to.include(
        'the bucketed algorithm does not settle',
      )
    })
  })
})
